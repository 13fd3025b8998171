"""Every architecture field of a BERT model, validated in one place."""

import dataclasses
from typing import Optional, Tuple

import numpy as np

from kbert.layers import _utils


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Architecture of a BERT encoder.

    Field names follow Keras (and `BertBackbone`'s arguments); `from_dict` also reads the
    original `bert_config.json` names (`vocab_size`, `num_hidden_layers`, `hidden_act`, ...).

    Args:
        vocabulary_size: number of WordPiece ids (30522 for the English uncased vocab).
        num_layers: transformer blocks.
        hidden_size: width of every block.
        num_heads: attention heads; `hidden_size` must be divisible by it.
        intermediate_size: feed-forward width (4 x hidden_size in the published models).
        activation: feed-forward and MLM-transform activation, one of
            `kbert.layers.ACTIVATION_NAMES`; "gelu_approximate" is google-research/bert's.
        dropout: hidden dropout rate.
        attention_dropout: attention-probability dropout rate.
        max_sequence_length: learned positions (max_position_embeddings).
        type_vocab_size: segments (2 for BERT).
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_epsilon: LayerNorm epsilon.
        embedding_size: embedding table width; `None` means `hidden_size`.
        layer_heads: each block's attention heads where they differ (a pruned model's:
            `kbert.models.pruning`), a sequence of one int per block (`num_layers`; ALBERT's
            `num_groups`); `None`: `num_heads` in every block. Each head keeps the width
            `hidden_size / num_heads`.
        layer_intermediate_sizes: each block's feed-forward width where they differ (`None`:
            `intermediate_size` in every block).
    """

    vocabulary_size: int
    num_layers: int
    hidden_size: int
    num_heads: int
    intermediate_size: int
    activation: str = "gelu_approximate"
    dropout: float = 0.1
    attention_dropout: float = 0.1
    max_sequence_length: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_epsilon: float = 1e-12
    embedding_size: Optional[int] = None
    layer_heads: Optional[Tuple[int, ...]] = None
    layer_intermediate_sizes: Optional[Tuple[int, ...]] = None

    FAMILY = "BERT"  # for messages
    # The original google-research/bert (and Hugging Face) names of the same fields.
    ORIGINAL_NAMES = {
        "vocab_size": "vocabulary_size",
        "num_hidden_layers": "num_layers",
        "num_attention_heads": "num_heads",
        "hidden_act": "activation",
        "hidden_dropout_prob": "dropout",
        "attention_probs_dropout_prob": "attention_dropout",
        "max_position_embeddings": "max_sequence_length",
        "layer_norm_eps": "layer_norm_epsilon",
    }

    def __post_init__(self):
        for name in ("vocabulary_size", "num_layers", "hidden_size", "num_heads",
                     "intermediate_size", "max_sequence_length"):
            _utils.check_positive_int(name, getattr(self, name))
        _utils.check_positive_int("type_vocab_size", self.type_vocab_size, allow_zero=True)
        if self.embedding_size is not None:
            _utils.check_positive_int("embedding_size", self.embedding_size)
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} is not divisible by "
                f"num_heads={self.num_heads}: each head gets hidden_size / num_heads units."
            )
        for name in ("layer_heads", "layer_intermediate_sizes"):
            self._check_per_layer(name)
        _utils.get_activation(self.activation)
        _utils.check_rate("dropout", self.dropout)
        _utils.check_rate("attention_dropout", self.attention_dropout)
        _utils.check_positive_float("initializer_range", self.initializer_range)
        _utils.check_positive_float("layer_norm_epsilon", self.layer_norm_epsilon)

    def _check_per_layer(self, name):
        """`name` (a per-layer field) as a tuple of `num_layers` positive ints, or None."""
        values = getattr(self, name)
        if values is None:
            return
        count, field = self.blocks
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or \
                len(values) != count:
            raise ValueError(f"{name}={values!r}: one int per block, {count} ({field}), "
                             f"or None.")
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
                    value < 1:
                raise ValueError(f"{name}[{index}]={value!r}: each layer's size is an integer "
                                 f"> 0.")
        object.__setattr__(self, name, tuple(int(v) for v in values))

    @property
    def blocks(self):
        """(count, field): how many blocks of weights the model has, and the field that says
        so (`num_layers`: one per layer)."""
        return self.num_layers, "num_layers"

    def block_of(self, layer):
        """The block whose weights layer `layer` runs (itself, but where consecutive layers
        share blocks: ALBERT's `num_groups`)."""
        return layer * self.blocks[0] // self.num_layers

    def layer_sizes(self, index):
        """Block `index`'s `num_heads` and `intermediate_size` (a dict of those names)."""
        count = self.blocks[0]
        return {"num_heads": (self.layer_heads or [self.num_heads] * count)[index],
                "intermediate_size": (self.layer_intermediate_sizes or
                                      [self.intermediate_size] * count)[index]}

    def kept_layers(self, layers):
        """The config fields that change when only the layers `layers` (sorted indices) are
        kept (`kbert.models.pruning`): `num_layers`, and what a family numbers by layer."""
        return {"num_layers": len(layers)}

    def pruned_sizes(self, heads, units):
        """The fields that give the blocks `heads` heads and `units` feed-forward units each
        (two lists, one entry per block; `kbert.models.pruning`): `None` where every block
        has the config's, as an unpruned model has them."""
        return {"layer_heads": None if set(heads) == {self.num_heads} else tuple(heads),
                "layer_intermediate_sizes": None if set(units) == {self.intermediate_size}
                else tuple(units)}

    def pruned_fields(self):
        """The fields in which a pruned model's structure differs from an unpruned one's,
        by name (`{}`: none): what transformers' config cannot say."""
        return {name: getattr(self, name) for name in ("layer_heads",
                                                       "layer_intermediate_sizes")
                if getattr(self, name) is not None}

    def block_arguments(self, index):
        """What block `index` takes beyond the config's fields: a pruned model's sizes
        (`layer_sizes`, and the head width that `hidden_size / num_heads` keeps), `{}` where
        every block has the config's."""
        if self.layer_heads is None and self.layer_intermediate_sizes is None:
            return {}
        return {**self.layer_sizes(index), "head_size": self.hidden_size // self.num_heads}

    @classmethod
    def from_dict(cls, values):
        """Builds a config from kbert names or original bert_config.json names.

        Unknown keys are an error that lists the known ones.
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in values.items():
            name = cls.ORIGINAL_NAMES.get(key, key)
            if name not in fields:
                raise ValueError(
                    f"Unknown {cls.FAMILY} config field {key!r}. Known: "
                    f"{', '.join(sorted(fields))}."
                )
            kwargs[name] = value
        return cls(**kwargs)

    def to_dict(self):
        return dataclasses.asdict(self)

    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        return self.from_dict({**self.to_dict(), **changes})
