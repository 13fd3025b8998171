"""BERT weights and config in Hugging Face names, the common form of `kbert.convert`.

Every reader (Hugging Face, original TF1, keras-hub) turns its checkpoint into a dict of numpy
arrays keyed and shaped as in Hugging Face's `BertForPreTraining`, with the encoder's `bert.`
prefix dropped (`embeddings.word_embeddings.weight`, `encoder.layer.0.attention.self.query.weight`,
..., `cls.predictions.bias`, `cls.seq_relationship.weight`). This module maps that dict onto
kbert's variables and back, so each format needs only its own name translation.
"""

import keras
import numpy as np

from kbert.models import BertConfig

# Hugging Face `hidden_act` -> kbert activation. Hugging Face's "gelu" is the exact erf form;
# google-research/bert's "gelu" is the tanh form, which Hugging Face calls "gelu_new".
HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
    "linear": "linear",
}
KBERT_TO_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_approximate": "gelu_new",
    "relu": "relu",
    "silu": "silu",
    "tanh": "tanh",
    "linear": "linear",
}
# google-research/bert's bert_config.json: its "gelu" is the tanh approximation (modeling.py).
GOOGLE_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu", "tanh": "tanh",
                      "linear": "linear"}

# config.json fields -> BertConfig fields. Others (architectures, pad_token_id, ...) do not
# change the computation and are ignored; the ones that would are checked in `config_from_hf`.
_CONFIG_FIELDS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "hidden_dropout_prob": "dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "type_vocab_size",
    "initializer_range": "initializer_range",
    "layer_norm_eps": "layer_norm_epsilon",
}


def _activation(value, table, source):
    if value not in table:
        raise ValueError(
            f"{source}: hidden_act={value!r} is not supported. Supported: "
            f"{', '.join(sorted(table))}."
        )
    return table[value]


def config_from_hf(values, source="config.json"):
    """A `BertConfig` from a Hugging Face BERT config.json dict."""
    if values.get("model_type", "bert") != "bert":
        raise ValueError(
            f"{source}: model_type={values['model_type']!r}, expected 'bert'."
        )
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{source}: position_embedding_type={position_type!r} is not supported; kbert "
            "BERT models use learned absolute positions ('absolute')."
        )
    return _config(values, HF_ACTIVATIONS, source)


def config_from_google(values, source="bert_config.json"):
    """A `BertConfig` from google-research/bert's bert_config.json dict."""
    return _config(values, GOOGLE_ACTIVATIONS, source)


def _config(values, activations, source):
    kwargs = {ours: values[theirs] for theirs, ours in _CONFIG_FIELDS.items() if theirs in values}
    kwargs["activation"] = _activation(values.get("hidden_act", "gelu"), activations, source)
    return BertConfig(**kwargs)


def config_to_hf(config, architecture):
    """A Hugging Face config.json dict for `config` (a `BertConfig`)."""
    values = {theirs: getattr(config, ours) for theirs, ours in _CONFIG_FIELDS.items()}
    if config.embedding_size not in (None, config.hidden_size):
        raise ValueError(
            f"embedding_size={config.embedding_size} differs from hidden_size="
            f"{config.hidden_size}: Hugging Face's BERT has no factorized embedding."
        )
    values.update(
        model_type="bert",
        architectures=[architecture],
        hidden_act=KBERT_TO_HF_ACTIVATIONS[config.activation],
        position_embedding_type="absolute",
        pad_token_id=0,
    )
    return values


# === Weight mapping ===
# Each entry: (Hugging Face names, kbert variable, kind). Kinds convert between layouts:
#   copy       same array (position tables may be cut to a shorter max_sequence_length)
#   dense      HF [out, in] <-> Keras [in, out]
#   qkv        three HF [H, H] (query, key, value) <-> kbert's fused [H, 3, N, D]
#   qkv_bias   three HF [H] <-> [3, N, D]
#   attn_out   HF [H, N*D] <-> [N, D, H]


def _backbone_entries(backbone):
    e = backbone.embeddings
    entries = [
        (("embeddings.word_embeddings.weight",), e.token_embedding.embeddings, "copy"),
        (("embeddings.position_embeddings.weight",), e.position_embedding, "copy"),
        (("embeddings.LayerNorm.weight",), e.layer_norm.gamma, "copy"),
        (("embeddings.LayerNorm.bias",), e.layer_norm.beta, "copy"),
    ]
    if e.segment_embedding is not None:
        entries.append(
            (("embeddings.token_type_embeddings.weight",), e.segment_embedding.embeddings, "copy")
        )
    for i, block in enumerate(backbone.transformer_layers):
        p = f"encoder.layer.{i}."
        qkv = tuple(f"{p}attention.self.{x}" for x in ("query", "key", "value"))
        entries += [
            (tuple(f"{n}.weight" for n in qkv), block.qkv_dense.kernel, "qkv"),
            (tuple(f"{n}.bias" for n in qkv), block.qkv_dense.bias, "qkv_bias"),
            ((p + "attention.output.dense.weight",), block.attention_output_dense.kernel,
             "attn_out"),
            ((p + "attention.output.dense.bias",), block.attention_output_dense.bias, "copy"),
            ((p + "attention.output.LayerNorm.weight",), block.attention_layer_norm.gamma, "copy"),
            ((p + "attention.output.LayerNorm.bias",), block.attention_layer_norm.beta, "copy"),
            ((p + "intermediate.dense.weight",), block.intermediate_dense.kernel, "dense"),
            ((p + "intermediate.dense.bias",), block.intermediate_dense.bias, "copy"),
            ((p + "output.dense.weight",), block.output_dense.kernel, "dense"),
            ((p + "output.dense.bias",), block.output_dense.bias, "copy"),
            ((p + "output.LayerNorm.weight",), block.output_layer_norm.gamma, "copy"),
            ((p + "output.LayerNorm.bias",), block.output_layer_norm.beta, "copy"),
        ]
    entries += [
        (("pooler.dense.weight",), backbone.pooler.dense.kernel, "dense"),
        (("pooler.dense.bias",), backbone.pooler.dense.bias, "copy"),
    ]
    return entries


def _mlm_entries(head):
    return [
        (("cls.predictions.transform.dense.weight",), head.dense.kernel, "dense"),
        (("cls.predictions.transform.dense.bias",), head.dense.bias, "copy"),
        (("cls.predictions.transform.LayerNorm.weight",), head.layer_norm.gamma, "copy"),
        (("cls.predictions.transform.LayerNorm.bias",), head.layer_norm.beta, "copy"),
        (("cls.predictions.bias",), head.output_bias, "copy"),
    ]


def _nsp_entries(head):
    return [
        (("cls.seq_relationship.weight",), head.dense.kernel, "dense"),
        (("cls.seq_relationship.bias",), head.dense.bias, "copy"),
    ]


def entries(model):
    """The weight map of a kbert `BertBackbone` or `BertPretrainer`."""
    backbone = getattr(model, "backbone", model)
    result = _backbone_entries(backbone)
    if getattr(model, "mlm_head", None) is not None:
        result += _mlm_entries(model.mlm_head)
    if getattr(model, "nsp_head", None) is not None:
        result += _nsp_entries(model.nsp_head)
    return result


def _to_kbert(arrays, kind, shape):
    if kind == "copy":
        (a,) = arrays
        if a.ndim == 2 and len(shape) == 2 and a.shape[1] == shape[1] and a.shape[0] > shape[0]:
            a = a[: shape[0]]  # a position table cut to a shorter max_sequence_length
        return a
    if kind == "dense":
        return arrays[0].T
    if kind == "qkv":
        hidden, _, heads, size = shape
        return np.stack([a.T.reshape(hidden, heads, size) for a in arrays], axis=1)
    if kind == "qkv_bias":
        return np.stack([a.reshape(shape[1:]) for a in arrays], axis=0)
    if kind == "attn_out":
        return arrays[0].T.reshape(shape)
    raise AssertionError(kind)


def _to_hf(value, kind):
    if kind == "copy":
        return (value,)
    if kind == "dense":
        return (value.T,)
    if kind == "qkv":
        hidden = value.shape[0]
        return tuple(value[:, c].reshape(hidden, -1).T for c in range(3))
    if kind == "qkv_bias":
        return tuple(value[c].reshape(-1) for c in range(3))
    if kind == "attn_out":
        return (value.reshape(-1, value.shape[-1]).T,)
    raise AssertionError(kind)


def assign(model, weights, source="checkpoint"):
    """Assigns `weights` (Hugging Face names) to `model`'s variables.

    Raises a ValueError naming every missing tensor and every shape that does not fit.
    Returns the names in `weights` that the model did not use.
    """
    model_entries = entries(model)
    missing = [n for names, _, _ in model_entries for n in names if n not in weights]
    if missing:
        shown = ", ".join(missing[:8]) + (f" (and {len(missing) - 8} more)" if len(missing) > 8
                                          else "")
        raise ValueError(f"{source} lacks {len(missing)} tensors the model needs: {shown}.")
    updates = []
    for names, variable, kind in model_entries:
        value = _to_kbert([np.asarray(weights[n]) for n in names], kind, tuple(variable.shape))
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{source}: {names[0]} gives shape {tuple(value.shape)} for {variable.path}, "
                f"which has shape {tuple(variable.shape)}."
            )
        updates.append((variable, value))
    for variable, value in updates:
        variable.assign(value.astype(variable.dtype))
    used = {n for names, _, _ in model_entries for n in names}
    return sorted(set(weights) - used)


def weights_of(model):
    """The model's weights as float32 numpy arrays keyed by Hugging Face names."""
    result = {}
    for names, variable, kind in entries(model):
        value = keras.ops.convert_to_numpy(variable).astype("float32")
        for name, array in zip(names, _to_hf(value, kind)):
            result[name] = np.ascontiguousarray(array)
    return result


def heads_in(weights):
    """The `head` argument that uses every head present in `weights`."""
    if "cls.predictions.transform.dense.weight" not in weights:
        return None
    return "pretrainer" if "cls.seq_relationship.weight" in weights else "mlm"
