"""Every architecture field of a DeBERTa-v3 encoder."""

import dataclasses
from typing import Optional

from kbert.layers import _utils
from kbert.models.bert.bert_config import BertConfig

ATTENTION_TYPES = ("c2p", "p2c")  # content-to-position, position-to-content


@dataclasses.dataclass(frozen=True)
class DebertaV3Config(BertConfig):
    """Architecture of a DeBERTa-v3 encoder (He et al. 2021): BERT's fields without absolute
    positions or segments, plus disentangled relative attention.

    Its fields are those of `BertConfig` with DeBERTa-v3's defaults (exact GELU, LayerNorm
    epsilon 1e-7, no segments: `type_vocab_size` must be 0; `embedding_size` must be `None`),
    and these:

    Args:
        position_buckets: relative distances are log-bucketed into `2 * position_buckets`
            rows of the relative embedding table (256 in the released models).
        max_relative_positions: the distance the log buckets reach; `None` means
            `max_sequence_length` (Hugging Face's -1).
        attention_types: the position terms added to content-to-content attention, a subset
            of ("c2p", "p2c"); the scores are scaled by sqrt(head_size * (1 + their number)).

    `max_sequence_length` is kept for the tokenizer and the buckets; the model has no table of
    absolute positions, so it reads longer inputs too. The relative terms use the query and
    key projections (Hugging Face's `share_att_key=True`), and the relative table is
    layer-normalized (`norm_rel_ebd="layer_norm"`), as in every released DeBERTa-v3.
    """

    activation: str = "gelu"
    type_vocab_size: int = 0
    layer_norm_epsilon: float = 1e-7
    position_buckets: int = 256
    max_relative_positions: Optional[int] = None
    attention_types: tuple = ATTENTION_TYPES

    FAMILY = "DeBERTa-v3"
    ORIGINAL_NAMES = {**BertConfig.ORIGINAL_NAMES, "pos_att_type": "attention_types"}

    def __post_init__(self):
        super().__post_init__()
        if self.type_vocab_size:
            raise ValueError(f"type_vocab_size={self.type_vocab_size}: DeBERTa-v3 has no "
                             "segment embeddings (0).")
        if self.embedding_size not in (None, self.hidden_size):
            raise ValueError(f"embedding_size={self.embedding_size}: kbert's DeBERTa-v3 has "
                             "no factorized embedding (None).")
        _utils.check_positive_int("position_buckets", self.position_buckets)
        if self.position_buckets < 2:
            raise ValueError("position_buckets must be at least 2: distances up to "
                             "position_buckets / 2 keep a bucket each.")
        if self.max_relative_positions is not None:
            _utils.check_positive_int("max_relative_positions", self.max_relative_positions)
            if self.max_relative_positions < 2:
                raise ValueError("max_relative_positions must be at least 2.")
        types = self.attention_types
        if isinstance(types, str):
            types = tuple(t.strip() for t in types.split("|") if t.strip())
        types = tuple(types)
        if len(set(types)) != len(types) or not set(types) <= set(ATTENTION_TYPES):
            raise ValueError(f"attention_types={self.attention_types!r}: a subset of "
                             f"{ATTENTION_TYPES}, each once.")
        # Stored sorted as a tuple so that equal configs compare equal (JSON gives lists).
        object.__setattr__(self, "attention_types",
                           tuple(t for t in ATTENTION_TYPES if t in types))

    @property
    def max_relative_distance(self):
        """The distance the log buckets reach: `max_relative_positions`, else
        `max_sequence_length`."""
        return self.max_relative_positions or self.max_sequence_length

    def to_dict(self):
        values = dataclasses.asdict(self)
        values["attention_types"] = list(self.attention_types)
        return values
