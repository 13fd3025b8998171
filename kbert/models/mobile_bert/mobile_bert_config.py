"""Every architecture field of a MobileBERT model: BERT's plus the bottlenecks and stacking."""

import dataclasses

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
        for name in ("trigram_input", "classifier_activation"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"`{name}` must be True or False, got "
                                 f"{getattr(self, name)!r}.")
