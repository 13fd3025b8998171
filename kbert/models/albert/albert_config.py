"""Every architecture field of an ALBERT model: BERT's plus the embedding width and groups."""

import dataclasses
from typing import Optional

from kbert.layers import _utils
from kbert.models.bert.bert_config import BertConfig


@dataclasses.dataclass(frozen=True)
class AlbertConfig(BertConfig):
    """Architecture of an ALBERT encoder (Lan et al. 2019).

    Its fields are those of `BertConfig` with ALBERT's defaults (no dropout, 128-wide
    embeddings), and this one:

    Args:
        num_groups: blocks of weights; `num_layers / num_groups` consecutive layers share one
            (1: every layer shares the same block, as in the released models).
    """

    dropout: float = 0.0
    attention_dropout: float = 0.0
    embedding_size: Optional[int] = 128
    num_groups: int = 1

    FAMILY = "ALBERT"
    PER_LAYER_SIZES = False  # its layers share blocks
    ORIGINAL_NAMES = {**BertConfig.ORIGINAL_NAMES, "num_hidden_groups": "num_groups"}

    def __post_init__(self):
        super().__post_init__()
        _utils.check_positive_int("num_groups", self.num_groups)
        if self.num_layers % self.num_groups:
            raise ValueError(
                f"num_layers={self.num_layers} is not divisible by num_groups="
                f"{self.num_groups}: each group of weights serves num_layers / num_groups layers."
            )
