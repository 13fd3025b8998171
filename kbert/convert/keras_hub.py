"""Weights from keras-hub's BERT-family backbones into kbert's.

keras-hub keeps separate query/key/value projections ([H, N, D] kernels); kbert fuses them into
one [H, 3, N, D] kernel, so the mapping stacks them (and splits them on the way back).
"""

import json
import logging
from pathlib import Path

import numpy as np


def _numpy(variable):
    return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)


def weights_from_keras_hub(source, target):
    """Copies a keras-hub backbone's weights into the kbert backbone of the same architecture.

    Works for keras-hub's `BertBackbone` -> `BertBackbone`, `AlbertBackbone` ->
    `AlbertBackbone`, `DistilBertBackbone` -> `DistilBertBackbone` and `ElectraBackbone` ->
    `ElectraBackbone`. Raises ValueError when the architectures differ (block count, a weight
    one side lacks, or any weight shape).
    """
    blocks = source.transformer_layers
    if blocks and isinstance(blocks[0], (list, tuple)):  # ALBERT: groups of inner layers
        if any(len(group) != 1 for group in blocks):
            raise ValueError("keras-hub ALBERT with num_inner_repetitions > 1 has no kbert form.")
        blocks = [group[0] for group in blocks]
    if len(blocks) != len(target.transformer_layers):
        raise ValueError(
            f"keras-hub backbone has {len(blocks)} transformer blocks, "
            f"kbert backbone {len(target.transformer_layers)}."
        )
    embeddings = getattr(source, "embeddings", None)  # DistilBERT: TokenAndPositionEmbedding
    if embeddings is not None and hasattr(embeddings, "position_embedding"):
        token_table = embeddings.token_embedding.embeddings
        position_table = embeddings.position_embedding.position_embeddings
    else:
        token_table = source.token_embedding.embeddings
        position_table = source.position_embedding.position_embeddings
    ours = target.embeddings
    pairs = [
        (ours.token_embedding.embeddings, token_table),
        (ours.position_embedding, position_table),
        (ours.layer_norm.gamma, source.embeddings_layer_norm.gamma),
        (ours.layer_norm.beta, source.embeddings_layer_norm.beta),
    ]
    optional = [  # (kbert layer, keras-hub layer): both present or both absent
        (ours.segment_embedding, getattr(source, "segment_embedding", None), ("embeddings",)),
        (ours.projection, getattr(source, "embeddings_projection", None), ("kernel", "bias")),
        (target.pooler and target.pooler.dense, getattr(source, "pooled_dense", None),
         ("kernel", "bias")),
    ]
    for mine, theirs, names in optional:
        if (mine is None) != (theirs is None):
            raise ValueError(
                f"keras-hub {type(source).__name__} and kbert {type(target).__name__} differ: "
                f"one has {getattr(theirs, 'name', None) or getattr(mine, 'name', '?')}, the "
                "other not."
            )
        if mine is not None:
            pairs += [(getattr(mine, n), getattr(theirs, n)) for n in names]
    for ours, theirs in zip(target.transformer_layers, blocks):
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


bert_weights_from_keras_hub = weights_from_keras_hub  # the name of kbert 0.1's BERT-only copy


def is_keras_hub(path):
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    with open(config, encoding="utf-8") as f:
        return "registered_name" in json.load(f)


def _config(source):
    """(family, kbert config) of a keras-hub backbone, from its get_config()."""
    from kbert.models import AlbertConfig, BertConfig, DistilBertConfig, ElectraConfig

    c = source.get_config()
    common = dict(
        vocabulary_size=c.get("vocabulary_size", c.get("vocab_size")),
        num_layers=c["num_layers"],
        hidden_size=c["hidden_dim"],
        num_heads=c["num_heads"],
        intermediate_size=c["intermediate_dim"],
        dropout=c["dropout"],
        attention_dropout=c["dropout"],
        max_sequence_length=c["max_sequence_length"],
        layer_norm_epsilon=1e-12,
    )
    name = type(source).__name__
    if name == "DistilBertBackbone":  # exact GELU, no segments
        return "distil_bert", DistilBertConfig(**common, activation="gelu", type_vocab_size=0)
    # keras-hub's BERT, ALBERT and ELECTRA use the tanh GELU.
    common.update(activation="gelu_approximate", type_vocab_size=c["num_segments"])
    if name == "AlbertBackbone":
        if c["num_inner_repetitions"] != 1:
            raise ValueError("keras-hub ALBERT with num_inner_repetitions > 1 has no kbert form.")
        return "albert", AlbertConfig(**common, embedding_size=c["embedding_dim"],
                                      num_groups=c["num_groups"])
    if name == "ElectraBackbone":
        embedding = c["embedding_dim"]
        return "electra", ElectraConfig(
            **common, embedding_size=None if embedding == c["hidden_dim"] else embedding)
    return "bert", BertConfig(**common)


_BACKBONES = ("BertBackbone", "AlbertBackbone", "DistilBertBackbone", "ElectraBackbone")


def read(path):
    """Reads a keras-hub BERT, ALBERT, DistilBERT or ELECTRA preset directory (config.json,
    model.weights.h5, tokenizer assets) into a `Checkpoint`.

    The backbone's weights come across. keras-hub's task heads (task.json) are not read: its
    `BertMaskedLM` head, for one, applies the exact GELU where the backbone and kbert's head
    use the tanh form.
    """
    import keras_hub

    from kbert import models
    from kbert.convert import _mapping
    from kbert.convert.checkpoint import MAPPINGS, Checkpoint

    path = Path(path)
    source = keras_hub.models.Backbone.from_preset(str(path))
    if type(source).__name__ not in _BACKBONES:
        raise ValueError(
            f"{path} holds a keras-hub {type(source).__name__}; kbert reads "
            f"{', '.join(_BACKBONES)} presets."
        )
    family, config = _config(source)
    target = models.build(family, config, head=None)
    weights_from_keras_hub(source, target)
    weights = _mapping.weights_of(MAPPINGS[family].entries(target))
    if (path / "task.json").is_file():
        logging.info("%s: task.json is not read; only the backbone is imported.", path)
    vocabulary, lowercase, sentencepiece = None, True, None
    if (path / "tokenizer.json").is_file():
        tokenizer = keras_hub.models.Tokenizer.from_preset(str(path))
        lowercase = bool(getattr(tokenizer, "lowercase", True))
        if getattr(tokenizer, "proto", None) is not None:  # SentencePiece (ALBERT)
            sentencepiece = tokenizer.proto
            if not isinstance(sentencepiece, bytes):
                sentencepiece = Path(sentencepiece).read_bytes()
        else:
            vocabulary = list(tokenizer.get_vocabulary())
    return Checkpoint(family, config, weights, vocabulary, lowercase, source=str(path),
                      sentencepiece_model=sentencepiece)
