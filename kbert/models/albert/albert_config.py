"""Every architecture field of an ALBERT model: BERT's plus the embedding width and groups."""

import dataclasses
from typing import Optional

from kbert.layers import _utils
from kbert.models.bert.bert_config import BertConfig


@dataclasses.dataclass(frozen=True)
class AlbertConfig(BertConfig):
    """Architecture of an ALBERT encoder (Lan et al. 2019).

    Its fields are those of `BertConfig` with ALBERT's defaults (no dropout, 128-wide
    embeddings; a pruned model's `layer_heads` and `layer_intermediate_sizes` have one entry
    per block, `num_groups`), and this one:

    Args:
        num_groups: blocks of weights; `num_layers / num_groups` consecutive layers share one
            (1: every layer shares the same block, as in the released models).
    """

    dropout: float = 0.0
    attention_dropout: float = 0.0
    embedding_size: Optional[int] = 128
    num_groups: int = 1

    FAMILY = "ALBERT"
    ORIGINAL_NAMES = {**BertConfig.ORIGINAL_NAMES, "num_hidden_groups": "num_groups"}

    def __post_init__(self):
        _utils.check_positive_int("num_groups", self.num_groups)
        super().__post_init__()
        if self.num_layers % self.num_groups:
            raise ValueError(
                f"num_layers={self.num_layers} is not divisible by num_groups="
                f"{self.num_groups}: each group of weights serves num_layers / num_groups layers."
            )

    @property
    def blocks(self):
        return self.num_groups, "num_groups"

    def kept_layers(self, layers):
        """As `BertConfig.kept_layers`, and `num_groups`: the blocks some kept layer runs,
        each serving as many of them (else a ValueError naming the counts)."""
        blocks = [self.block_of(i) for i in layers]
        counts = {block: blocks.count(block) for block in blocks}
        if len(set(counts.values())) > 1:
            raise ValueError(f"Keeping layers {list(layers)} leaves ALBERT's blocks serving "
                             f"{', '.join(f'{n} (block {b})' for b, n in counts.items())} "
                             f"layers; each of its num_groups={self.num_groups} blocks serves "
                             f"the same number of consecutive layers: remove as many of each "
                             f"block's layers.")
        return {"num_layers": len(layers), "num_groups": len(counts)}
