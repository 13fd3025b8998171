"""Models of the BERT family (keras.ops only: any Keras backend)."""

from kbert.models.bert import BertBackbone, BertConfig, BertPretrainer

# family -> (config class, backbone class, pretrainer class); the "model" field of a preset.
FAMILIES = {"bert": (BertConfig, BertBackbone, BertPretrainer)}
# What `build` (and `kbert.presets.load`) put on top of the backbone.
HEADS = ("pretrainer", "mlm", None)


def build(family, config, head="pretrainer", dtype=None, name=None):
    """Builds a model of `family` ("bert") from its config object.

    Args:
        family: a key of `FAMILIES`.
        config: the family's config (e.g. a `BertConfig`).
        head: "pretrainer" (every pretraining head of the family), "mlm" (masked LM alone) or
            `None` (the backbone).
        dtype: a Keras dtype policy name, e.g. "mixed_bfloat16".
        name: the model's name; the backbone gets `f"{name}_backbone"`.
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown model family {family!r}. Known: {', '.join(FAMILIES)}.")
    if head not in HEADS:
        raise ValueError(f"Unknown head {head!r}. Allowed: {', '.join(map(repr, HEADS))}.")
    _, backbone_class, pretrainer_class = FAMILIES[family]
    backbone = backbone_class.from_bert_config(
        config, dtype=dtype, name=f"{name}_backbone" if name else None
    )
    if head is None:
        return backbone
    return pretrainer_class(backbone, next_sentence_prediction=(head == "pretrainer"), name=name)


__all__ = ["BertBackbone", "BertConfig", "BertPretrainer", "FAMILIES", "HEADS", "build"]
