"""BERT weights and config in Hugging Face names, the common form of `kbert.convert`.

Every reader (Hugging Face, original TF1, keras-hub) turns its checkpoint into a dict of numpy
arrays keyed and shaped as in Hugging Face's `BertForPreTraining`, with the encoder's `bert.`
prefix dropped (`embeddings.word_embeddings.weight`, `encoder.layer.0.attention.self.query.weight`,
..., `cls.predictions.bias`, `cls.seq_relationship.weight`). This module maps that dict onto
kbert's variables and back (with `kbert.convert._mapping`), so each format needs only its own
name translation. `albert`, `distil_bert` and `electra` are the same for their families. Each
module ends with its `FAMILY` record (`kbert.convert._family.FamilyFormat`): what the formats read.

TinyBERT's released general students (huawei-noah/TinyBERT_General_*, the tiny_bert_* presets)
are BERT in the files of huawei-noah's own code: a config.json with no `model_type` (read as
BERT: `families.by_config`) and the state dict of its `TinyBertForPreTraining`: `bert.*`,
BERT's `cls.*` heads, and `fit_dense.*`, the projection of the student's hidden states onto
the teacher's width that only its distillation loss reads. kbert's models have no place for
`fit_dense` (kbert's TinyBERT distillation learns its own): it stays in `Checkpoint.weights`
for whoever wants it, is logged as not used when a model is built, and is not written.
"""

import re

from kbert.convert import _family, _mapping
from kbert.models import BertConfig

MODEL_TYPE = "bert"  # config.json's model_type

# config.json fields -> BertConfig fields. Others (architectures, pad_token_id, ...) do not
# change the computation and are ignored; the ones that would are checked in `config_from_hf`.
CONFIG_FIELDS = {
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


# TinyBERT's distillation projection (see the module's text): read, never mapped or written.
TINY_BERT_ONLY = ("fit_dense.weight", "fit_dense.bias")


def check_model_type(values, model_type, source):
    if values.get("model_type", model_type) != model_type:
        raise ValueError(f"{source}: model_type={values['model_type']!r}, expected "
                         f"{model_type!r}.")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{source}: position_embedding_type={position_type!r} is not supported; kbert "
            "models use learned absolute positions ('absolute')."
        )


def config_kwargs(values, fields, activations, source, activation_key="hidden_act"):
    """Config keyword arguments from a config dict: its `fields` renamed, and the activation."""
    kwargs = {ours: values[theirs] for theirs, ours in fields.items() if theirs in values}
    kwargs["activation"] = _mapping.activation(values.get(activation_key, "gelu"), activations,
                                               source)
    return kwargs


def config_values(config, fields, model_type, activation_key="hidden_act"):
    """The config dict of `config` for `fields` (the inverse of `config_kwargs`)."""
    pruned = config.pruned_fields()
    if pruned:
        given = ", ".join(f"{k}={v}" for k, v in pruned.items())
        raise ValueError(f"A pruned model ({given}) has no Hugging Face checkpoint in kbert: "
                         f"transformers' config has one head count and one feed-forward "
                         f"width for every layer (and ModernBERT's layers their kinds by "
                         f"their index). Save it with model.save('model.keras') (kbert.load "
                         f"reads it).")
    values = {theirs: getattr(config, ours) for theirs, ours in fields.items()}
    values[activation_key] = _mapping.KBERT_TO_HF_ACTIVATIONS[config.activation]
    values.update(model_type=model_type, pad_token_id=0)
    return values


def keras_hub_config_kwargs(values):
    """The config keyword arguments every keras-hub BERT-family backbone's `get_config()`
    gives; each family adds its own (activation, segments, embedding size)."""
    return dict(
        vocabulary_size=values.get("vocabulary_size", values.get("vocab_size")),
        num_layers=values["num_layers"],
        hidden_size=values["hidden_dim"],
        num_heads=values["num_heads"],
        intermediate_size=values["intermediate_dim"],
        dropout=values["dropout"],
        attention_dropout=values["dropout"],
        max_sequence_length=values["max_sequence_length"],
        layer_norm_epsilon=1e-12,
        # keras-hub's BERT, ALBERT and ELECTRA use the tanh GELU (DistilBERT overrides).
        activation="gelu_approximate",
        type_vocab_size=values.get("num_segments", 0),
    )


def config_from_hf(values, source="config.json"):
    """A `BertConfig` from a Hugging Face BERT config.json dict."""
    check_model_type(values, MODEL_TYPE, source)
    return BertConfig(**config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS, source))


def config_from_google(values, source="bert_config.json"):
    """A `BertConfig` from google-research/bert's bert_config.json dict."""
    return BertConfig(**config_kwargs(values, CONFIG_FIELDS, _mapping.GOOGLE_ACTIVATIONS,
                                      source))


def config_from_keras_hub(values):
    """A `BertConfig` from keras-hub's `BertBackbone.get_config()`."""
    return BertConfig(**keras_hub_config_kwargs(values))


def config_to_hf(config):
    """A Hugging Face config.json dict for `config` (a `BertConfig`), without `architectures`."""
    if config.embedding_size not in (None, config.hidden_size):
        raise ValueError(
            f"embedding_size={config.embedding_size} differs from hidden_size="
            f"{config.hidden_size}: Hugging Face's BERT has no factorized embedding."
        )
    values = config_values(config, CONFIG_FIELDS, MODEL_TYPE)
    values["position_embedding_type"] = "absolute"
    return values


# === The weight map ===
# transformers' BertLayer: the block names of BERT, RoBERTa and ELECTRA.
BLOCK = _mapping.BlockNames(
    layers="encoder.layer.{}.",
    query="attention.self.query", key="attention.self.key", value="attention.self.value",
    attention_output="attention.output.dense", attention_norm="attention.output.LayerNorm",
    intermediate="intermediate.dense", output="output.dense", output_norm="output.LayerNorm")
HEADS = _mapping.Heads(mlm=("cls.predictions.transform.dense",
                            "cls.predictions.transform.LayerNorm", "cls.predictions.bias"),
                       decoder="cls.predictions.decoder",  # the token table again
                       nsp="cls.seq_relationship")
SHAPES = _family.block_shapes(BLOCK)  # where the tensors show the config's sizes


def backbone_entries(backbone):
    """The weight map of a kbert `BertBackbone` (`HEADS` adds a `BertPretrainer`'s)."""
    return _mapping.backbone_entries(backbone, BLOCK, pooler="pooler.dense")


# === Original TF1 names ===
_TF1_SPECIAL = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",  # [2, H] like HF
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
}


def tf1_name(name):
    """`bert/encoder/layer_0/output/dense/kernel` -> (`encoder.layer.0.output.dense.weight`,
    transpose?). `None` for names that are not BERT weights."""
    if name in _TF1_SPECIAL:
        return _TF1_SPECIAL[name], False
    parts = name.split("/")
    if parts[0] == "bert":
        parts = parts[1:]
    elif parts[0] != "cls":
        return None
    return tf1_parts_to_hf(parts)


def tf1_parts_to_hf(parts):
    """TF scope parts -> a dotted Hugging Face name: layer_3 -> layer.3, kernel -> weight
    (transposed), gamma/beta -> weight/bias, tables get `.weight`."""
    out, transpose = [], False
    for part in parts:
        match = re.fullmatch(r"layer_(\d+)", part)
        if match:
            out += ["layer", match.group(1)]
        elif part == "kernel":
            out.append("weight")
            transpose = True
        elif part == "gamma":
            out.append("weight")
        elif part == "beta":
            out.append("bias")
        else:
            out.append(part)
    if out[-1].endswith("_embeddings"):
        out.append("weight")
    return ".".join(out), transpose


FAMILY = _family.record(
    globals(),
    name="bert",
    prefix="bert.",  # the encoder's prefix in *ForPreTraining / *ForMaskedLM
    hf_name="Bert",
    not_in_hf=TINY_BERT_ONLY,
    task_dropout=_family.classifier_dropout(),
    tf1_pattern=None,  # every TF1 checkpoint that is not ALBERT's or ELECTRA's
    tf1_config_files=("bert_config.json",),
    keras_hub_class="BertBackbone",
)
