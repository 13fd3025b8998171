"""Models of the BERT family (keras.ops only: any Keras backend)."""

from kbert.models import (
    albert, bert, deberta_v3, distil_bert, electra, mobile_bert, modern_bert, roberta,
)
from kbert.models.albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from kbert.models.backbone import Backbone
from kbert.models.bert import BertBackbone, BertConfig, BertPretrainer
from kbert.models.deberta_v3 import (
    DebertaV3Backbone, DebertaV3Config, DebertaV3Pretrainer, DebertaV3RtdPretrainer,
)
from kbert.models.distil_bert import DistilBertBackbone, DistilBertConfig, DistilBertPretrainer
from kbert.models.distillation import Distiller, TinyBertDistiller, initialize_student
from kbert.models.family import Family
from kbert.models.electra import (
    ElectraBackbone, ElectraConfig, ElectraMaskedLM, ElectraPretrainer,
)
from kbert.models.mobile_bert import (
    MobileBertBackbone, MobileBertConfig, MobileBertPretrainer,
)
from kbert.models.modern_bert import (
    ModernBertBackbone, ModernBertConfig, ModernBertPretrainer,
)
from kbert.models.optimizers import AdamW, Lamb, WarmupSchedule
from kbert.models.roberta import RobertaBackbone, RobertaConfig, RobertaPretrainer



# The "model" field of a preset -> its family's record (`Family`, in the family's folder).
FAMILIES = {
    "bert": bert.FAMILY, "albert": albert.FAMILY, "distil_bert": distil_bert.FAMILY,
    "electra": electra.FAMILY, "roberta": roberta.FAMILY, "deberta_v3": deberta_v3.FAMILY,
    "mobile_bert": mobile_bert.FAMILY, "modern_bert": modern_bert.FAMILY,
}
# What `build` (and `kbert.presets.load`) put on top of the backbone.
HEADS = ("pretrainer", "mlm", None)


def build(family, config, head="pretrainer", dtype=None, name=None, **pretrainer_kwargs):
    """Builds a model of `family` ("bert") from its config object.

    Args:
        family: a key of `FAMILIES`: "bert", "albert", "distil_bert", "electra", "roberta",
            "mobile_bert".
        config: the family's config (e.g. a `BertConfig`).
        head: "pretrainer" (the family's pretraining model: BERT MLM + NSP, ALBERT MLM + SOP,
            DistilBERT and RoBERTa MLM, ELECTRA generator + replaced-token detection), "mlm"
            (a masked-LM head on the backbone) or `None` (the backbone).
        dtype: a Keras dtype policy name, e.g. "mixed_bfloat16".
        name: the model's name; the backbone gets `f"{name}_backbone"`.
        **pretrainer_kwargs: passed to the pretrainer class with `head="pretrainer"`, e.g.
            `generator_hidden_fraction` of `ElectraPretrainer`.
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown model family {family!r}. Known: {', '.join(FAMILIES)}.")
    if head not in HEADS:
        raise ValueError(f"Unknown head {head!r}. Allowed: {', '.join(map(repr, HEADS))}.")
    backbone_class, pretrainer_class = FAMILIES[family].backbone, FAMILIES[family].pretrainer
    backbone = backbone_class.from_config(
        config, dtype=dtype, name=f"{name}_backbone" if name else None
    )
    if pretrainer_kwargs and head != "pretrainer":
        raise ValueError(f"{sorted(pretrainer_kwargs)} are arguments of the pretrainer; "
                         f"head={head!r} takes none.")
    if head is None:
        return backbone
    if head == "mlm":
        masked_lm_class = getattr(pretrainer_class, "masked_lm_class", pretrainer_class)
        return masked_lm_class(backbone, next_sentence_prediction=False, name=name)
    return pretrainer_class(backbone, name=name, **pretrainer_kwargs)


__all__ = [
    "AlbertBackbone", "AlbertConfig", "AlbertPretrainer", "Backbone", "BertBackbone",
    "BertConfig", "BertPretrainer", "DebertaV3Backbone", "DebertaV3Config",
    "DebertaV3Pretrainer", "DebertaV3RtdPretrainer", "DistilBertBackbone", "DistilBertConfig",
    "DistilBertPretrainer", "Distiller", "ElectraBackbone", "ElectraConfig", "ElectraMaskedLM",
    "ElectraPretrainer", "FAMILIES", "Family", "HEADS", "MobileBertBackbone",
    "MobileBertConfig", "MobileBertPretrainer", "ModernBertBackbone", "ModernBertConfig",
    "ModernBertPretrainer", "RobertaBackbone", "RobertaConfig",
    "RobertaPretrainer", "TinyBertDistiller", "build", "initialize_student",
]
