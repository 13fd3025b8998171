"""Every architecture field of a RoBERTa model."""

import dataclasses

from kbert.models.bert.bert_config import BertConfig


@dataclasses.dataclass(frozen=True)
class RobertaConfig(BertConfig):
    """Architecture of a RoBERTa encoder (Liu et al. 2019): BERT's fields with RoBERTa's
    defaults: the exact GELU, LayerNorm epsilon 1e-5, one segment type.

    `max_sequence_length` is the longest input (512); the position table has 2 rows more
    (`RobertaBackbone.position_offset`), which Hugging Face's `max_position_embeddings` (514)
    counts.
    """

    activation: str = "gelu"
    layer_norm_epsilon: float = 1e-5
    type_vocab_size: int = 1

    FAMILY = "RoBERTa"
