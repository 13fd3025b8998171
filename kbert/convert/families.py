"""The model families `kbert.convert` reads and writes: the one place a format looks one up.

    family = families.get("electra")          # a `kbert.convert._family.FamilyFormat` record
    family = families.by_model_type("albert")  # from a Hugging Face config.json
"""

from kbert import models
from kbert.convert import (
    albert, bert, deberta_v3, distil_bert, electra, mobile_bert, modern_bert, roberta,
)
from kbert.convert._family import Companion, FamilyFormat

# name -> record, in the order of `kbert.models.FAMILIES`.
FORMATS = {f.name: f for f in (bert.FAMILY, albert.FAMILY, distil_bert.FAMILY, electra.FAMILY,
                                roberta.FAMILY, deberta_v3.FAMILY, mobile_bert.FAMILY,
                                modern_bert.FAMILY)}


def get(name):
    """The record of family `name` ("bert"); ValueError naming the known ones otherwise."""
    if name not in FORMATS:
        raise ValueError(f"Unknown model family {name!r}. Known: {', '.join(FORMATS)}.")
    return FORMATS[name]


def by_model_type(model_type, source="config.json"):
    """The family of a Hugging Face config.json's `model_type`."""
    for family in FORMATS.values():
        if family.model_type == model_type:
            return family
    raise ValueError(
        f"{source}: model_type={model_type!r} is not supported. Supported: "
        f"{', '.join(sorted(f.model_type for f in FORMATS.values()))}."
    )


# A config.json without `model_type` reads as BERT when it has BERT's sizes and none of these,
# the fields that make another family's config (TinyBERT's releases: huawei-noah's own
# BertConfig, with no model_type, no architectures and keys of its own, `cell`, `emb_size`,
# `pre_trained`, `structure`, `training`, that its BertModel does not read).
_BERT_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size")
_OTHER_FAMILIES_FIELDS = ("embedding_size", "num_hidden_groups", "inner_group_num", "dim",
                          "n_layers", "n_heads", "relative_attention", "position_buckets",
                          "pos_att_type", "true_hidden_size", "trigram_input",
                          "intra_bottleneck_size")


def by_config(values, source="config.json"):
    """The family of a Hugging Face config.json dict: by its `model_type`, or, without one,
    BERT where its fields are BERT's (TinyBERT's released general students); ValueError
    naming what is missing or foreign otherwise."""
    if values.get("model_type") is not None:
        return by_model_type(values["model_type"], source)
    architectures = values.get("architectures") or []
    architectures = [architectures] if isinstance(architectures, str) else list(architectures)
    missing = [k for k in _BERT_FIELDS if k not in values]
    foreign = [k for k in _OTHER_FAMILIES_FIELDS if k in values]
    foreign += [str(a) for a in architectures if not str(a).startswith("Bert")]
    if missing or foreign:
        reasons = ([f"it lacks {', '.join(missing)}"] if missing else []) + (
            [f"it has {', '.join(foreign)}"] if foreign else [])
        raise ValueError(
            f"{source} has no model_type, and kbert reads such a config only as BERT's (the "
            f"fields {', '.join(_BERT_FIELDS)}, as TinyBERT's releases have): "
            f"{' and '.join(reasons)}. Add the model_type, one of "
            f"{', '.join(sorted(f.model_type for f in FORMATS.values()))}.")
    return FORMATS["bert"]


def by_keras_hub_class(class_name, source="keras-hub preset"):
    """The family of a keras-hub backbone class ("BertBackbone")."""
    for family in FORMATS.values():
        if family.keras_hub_class is not None and family.keras_hub_class == class_name:
            return family
    raise ValueError(
        f"{source} holds a keras-hub {class_name}; kbert reads "
        f"{', '.join(f.keras_hub_class for f in FORMATS.values() if f.keras_hub_class)} "
        "presets."
    )


def of_model(model):
    """The family of a kbert model: a backbone, or a model with a `backbone`."""
    backbone = getattr(model, "backbone", model)
    for name, classes in models.FAMILIES.items():
        if type(backbone) is classes.backbone:
            return get(name)
    raise ValueError(
        f"{type(model).__name__} is not a kbert model of a known family: expected a "
        f"backbone or pretrainer of {', '.join(models.FAMILIES)}."
    )


__all__ = ["FORMATS", "Companion", "FamilyFormat", "by_config", "by_keras_hub_class", "by_model_type",
           "get", "of_model"]
