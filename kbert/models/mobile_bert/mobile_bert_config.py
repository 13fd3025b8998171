"""Every architecture field of a MobileBERT model: BERT's plus the bottlenecks and stacking."""

import dataclasses
from typing import Optional, Tuple

import numpy as np

from kbert.layers import _utils
from kbert.models.mobile_bert.no_norm import NORMALIZATION_TYPES
from kbert.models.bert.bert_config import BertConfig


@dataclasses.dataclass(frozen=True)
class MobileBertConfig(BertConfig):
    """Architecture of a MobileBERT encoder (Sun et al. 2020), with the released model's
    defaults (google/mobilebert-uncased: relu, no hidden dropout, 128-wide embeddings and
    bottlenecks, 4 feed-forward networks, NoNorm, no pooler dense).

    It takes the fields of `BertConfig` (`hidden_size` is the inter-block width, 512;
    `intermediate_size` the feed-forward width inside the bottleneck, 512), plus these.

    Args:
        embedding_size: width of the token table (128).
        intra_bottleneck_size: width inside each block, where attention and the feed-forward
            networks run (128; transformers' `true_hidden_size`).
        num_feedforward_networks: stacked feed-forward networks per block (4).
        normalization_type: "no_norm" (an elementwise scale and bias) or "layer_norm".
        trigram_input: embed each token with its neighbours (a 3-token window).
        classifier_activation: the pooler's tanh dense layer; `False` (the release) pools the
            first token's vector as it is.
        layer_feedforward_sizes: each block's feed-forward widths where they differ (a pruned
            model's, `kbert.models.pruning`): per layer, one int per feed-forward network;
            `None`: `intermediate_size` everywhere (`layer_intermediate_sizes` is not used).
    """

    activation: str = "relu"
    dropout: float = 0.0
    attention_dropout: float = 0.1
    embedding_size: int = 128
    intra_bottleneck_size: int = 128
    num_feedforward_networks: int = 4
    normalization_type: str = "no_norm"
    trigram_input: bool = True
    classifier_activation: bool = False
    layer_feedforward_sizes: Optional[Tuple[Tuple[int, ...], ...]] = None

    FAMILY = "MobileBERT"
    ORIGINAL_NAMES = {**BertConfig.ORIGINAL_NAMES, "true_hidden_size": "intra_bottleneck_size"}

    def __post_init__(self):
        super().__post_init__()
        for name in ("embedding_size", "intra_bottleneck_size", "num_feedforward_networks"):
            _utils.check_positive_int(name, getattr(self, name))
        _utils.check_positive_int("type_vocab_size", self.type_vocab_size)
        if self.intra_bottleneck_size % self.num_heads:
            raise ValueError(
                f"intra_bottleneck_size={self.intra_bottleneck_size} is not divisible by "
                f"num_heads={self.num_heads}: attention runs inside the bottleneck."
            )
        if self.embedding_size > self.hidden_size:
            raise ValueError(
                f"embedding_size={self.embedding_size} is larger than hidden_size="
                f"{self.hidden_size}: the masked-LM head widens the token table to hidden_size."
            )
        if self.normalization_type not in NORMALIZATION_TYPES:
            raise ValueError(f"Unknown normalization_type {self.normalization_type!r}. "
                             f"Allowed: {', '.join(NORMALIZATION_TYPES)}.")
        self._check_feedforward_sizes()
        for name in ("trigram_input", "classifier_activation"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"`{name}` must be True or False, got "
                                 f"{getattr(self, name)!r}.")

    def _check_feedforward_sizes(self):
        if self.layer_intermediate_sizes is not None:
            raise ValueError(f"layer_intermediate_sizes={self.layer_intermediate_sizes!r}: a "
                             f"MobileBERT block has several feed-forward networks; give "
                             f"layer_feedforward_sizes (per layer, one int per network).")
        sizes = self.layer_feedforward_sizes
        if sizes is None:
            return
        count = self.num_feedforward_networks
        good = not isinstance(sizes, (str, bytes)) and hasattr(sizes, "__len__") and \
            len(sizes) == self.num_layers and all(
                hasattr(layer, "__len__") and len(layer) == count and
                all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
                    for v in layer)
                for layer in sizes)
        if not good:
            raise ValueError(f"layer_feedforward_sizes={sizes!r}: per layer ({self.num_layers}"
                             f"), one width > 0 per feed-forward network ({count}), or None.")
        object.__setattr__(self, "layer_feedforward_sizes",
                           tuple(tuple(int(v) for v in layer) for layer in sizes))

    def block_arguments(self, index):
        if self.layer_heads is None and self.layer_feedforward_sizes is None:
            return {}
        sizes = self.layer_feedforward_sizes
        return {"num_heads": self.layer_sizes(index)["num_heads"],
                "head_size": self.intra_bottleneck_size // self.num_heads,
                "feedforward_sizes": None if sizes is None else list(sizes[index])}

    def pruned_sizes(self, heads, units):
        """As `BertConfig.pruned_sizes`; each block's `units` are its feed-forward networks'
        widths (`layer_feedforward_sizes`)."""
        units = tuple(tuple(u) if isinstance(u, tuple) else (u,) for u in units)
        return {"layer_heads": None if set(heads) == {self.num_heads} else tuple(heads),
                "layer_feedforward_sizes": None if {v for u in units for v in u} == {
                    self.intermediate_size} else units}

    def pruned_fields(self):
        fields = super().pruned_fields()
        if self.layer_feedforward_sizes is not None:
            fields["layer_feedforward_sizes"] = self.layer_feedforward_sizes
        return fields
