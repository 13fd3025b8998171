"""Models of the BERT family (keras.ops only: any Keras backend)."""

from kbert.models.albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from kbert.models.bert import BertBackbone, BertConfig, BertPretrainer
from kbert.models.distil_bert import DistilBertBackbone, DistilBertConfig, DistilBertPretrainer
from kbert.models.electra import ElectraBackbone, ElectraConfig

# family -> (config class, backbone class, pretrainer class); the "model" field of a preset.
# ELECTRA's own pretrainer (generator + discriminator) is not built here yet: its masked-LM
# pretrainer is BERT's on the ELECTRA backbone.
FAMILIES = {
    "bert": (BertConfig, BertBackbone, BertPretrainer),
    "albert": (AlbertConfig, AlbertBackbone, AlbertPretrainer),
    "distil_bert": (DistilBertConfig, DistilBertBackbone, DistilBertPretrainer),
    "electra": (ElectraConfig, ElectraBackbone, BertPretrainer),
}
# What `build` (and `kbert.presets.load`) put on top of the backbone.
HEADS = ("pretrainer", "mlm", None)


def build(family, config, head="pretrainer", dtype=None, name=None):
    """Builds a model of `family` ("bert") from its config object.

    Args:
        family: a key of `FAMILIES`: "bert", "albert", "distil_bert", "electra".
        config: the family's config (e.g. a `BertConfig`).
        head: "pretrainer" (every pretraining head of the family: BERT MLM + NSP, ALBERT
            MLM + SOP, DistilBERT MLM), "mlm" (masked LM alone) or `None` (the backbone).
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
    sentence_head = head == "pretrainer" and pretrainer_class.has_sentence_head
    return pretrainer_class(backbone, next_sentence_prediction=sentence_head, name=name)


__all__ = [
    "AlbertBackbone", "AlbertConfig", "AlbertPretrainer", "BertBackbone", "BertConfig",
    "BertPretrainer", "DistilBertBackbone", "DistilBertConfig", "DistilBertPretrainer",
    "ElectraBackbone", "ElectraConfig", "FAMILIES", "HEADS", "build",
]
