"""Weights between keras-hub's `BertBackbone` and kbert's `BertBackbone`.

keras-hub keeps separate query/key/value projections ([H, N, D] kernels); kbert fuses them into
one [H, 3, N, D] kernel, so the mapping stacks them (and splits them on the way back).
"""

import json
import logging
from pathlib import Path

import numpy as np


def _numpy(variable):
    return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)


def bert_weights_from_keras_hub(source, target):
    """Copies a keras-hub `BertBackbone`'s weights into a kbert `BertBackbone` of the same shape.

    Raises ValueError when the architectures differ (layer count or any weight shape).
    """
    if len(source.transformer_layers) != len(target.transformer_layers):
        raise ValueError(
            f"keras-hub backbone has {len(source.transformer_layers)} layers, "
            f"kbert backbone {len(target.transformer_layers)}."
        )
    pairs = [
        (target.embeddings.token_embedding.embeddings, source.token_embedding.embeddings),
        (target.embeddings.position_embedding, source.position_embedding.position_embeddings),
        (target.embeddings.segment_embedding.embeddings, source.segment_embedding.embeddings),
        (target.embeddings.layer_norm.gamma, source.embeddings_layer_norm.gamma),
        (target.embeddings.layer_norm.beta, source.embeddings_layer_norm.beta),
        (target.pooler.dense.kernel, source.pooled_dense.kernel),
        (target.pooler.dense.bias, source.pooled_dense.bias),
    ]
    for ours, theirs in zip(target.transformer_layers, source.transformer_layers):
        attention = theirs._self_attention_layer
        projections = (attention._query_dense, attention._key_dense, attention._value_dense)
        qkv_kernel = np.stack([_numpy(p.kernel) for p in projections], axis=1)  # [H, 3, N, D]
        qkv_bias = np.stack([_numpy(p.bias) for p in projections], axis=0)  # [3, N, D]
        pairs += [
            (ours.qkv_dense.kernel, qkv_kernel),
            (ours.qkv_dense.bias, qkv_bias),
            (ours.attention_output_dense.kernel, attention._output_dense.kernel),
            (ours.attention_output_dense.bias, attention._output_dense.bias),
            (ours.attention_layer_norm.gamma, theirs._self_attention_layer_norm.gamma),
            (ours.attention_layer_norm.beta, theirs._self_attention_layer_norm.beta),
            (ours.intermediate_dense.kernel, theirs._feedforward_intermediate_dense.kernel),
            (ours.intermediate_dense.bias, theirs._feedforward_intermediate_dense.bias),
            (ours.output_dense.kernel, theirs._feedforward_output_dense.kernel),
            (ours.output_dense.bias, theirs._feedforward_output_dense.bias),
            (ours.output_layer_norm.gamma, theirs._feedforward_layer_norm.gamma),
            (ours.output_layer_norm.beta, theirs._feedforward_layer_norm.beta),
        ]
    for variable, value in pairs:
        value = _numpy(value)
        if tuple(variable.shape) != value.shape:
            raise ValueError(
                f"Shape mismatch for {variable.path}: kbert {tuple(variable.shape)}, "
                f"keras-hub {value.shape}."
            )
        variable.assign(value)
    return target


def is_keras_hub(path):
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    with open(config, encoding="utf-8") as f:
        return "registered_name" in json.load(f)


def read(path):
    """Reads a keras-hub BERT preset directory (config.json, model.weights.h5, tokenizer assets).

    The backbone's weights come across. keras-hub's `BertMaskedLM` head is not read: it
    applies the exact GELU where the backbone and kbert's head use the tanh form.
    """
    import keras_hub

    from kbert.convert import bert
    from kbert.convert.checkpoint import Checkpoint
    from kbert.models import BertBackbone, BertConfig

    path = Path(path)
    source = keras_hub.models.Backbone.from_preset(str(path))
    if not isinstance(source, keras_hub.models.BertBackbone):
        raise ValueError(
            f"{path} holds a keras-hub {type(source).__name__}; kbert reads BertBackbone presets."
        )
    config = BertConfig(
        vocabulary_size=source.vocabulary_size,
        num_layers=source.num_layers,
        hidden_size=source.hidden_dim,
        num_heads=source.num_heads,
        intermediate_size=source.intermediate_dim,
        activation="gelu_approximate",  # keras-hub's BertBackbone
        dropout=source.dropout,
        attention_dropout=source.dropout,
        max_sequence_length=source.max_sequence_length,
        type_vocab_size=source.num_segments,
        layer_norm_epsilon=1e-12,
    )
    target = BertBackbone.from_bert_config(config)
    bert_weights_from_keras_hub(source, target)
    if (path / "task.json").is_file():
        logging.info("%s: task.json is not read; only the backbone is imported.", path)
    vocabulary, lowercase = None, True
    if (path / "tokenizer.json").is_file():
        tokenizer = keras_hub.models.Tokenizer.from_preset(str(path))
        vocabulary = list(tokenizer.get_vocabulary())
        lowercase = bool(getattr(tokenizer, "lowercase", True))
    return Checkpoint("bert", config, bert.weights_of(target), vocabulary, lowercase,
                      source=str(path))
