"""Every architecture field of a ModernBERT encoder."""

import dataclasses
from typing import Optional, Tuple

from kbert.layers import _utils
from kbert.models.bert.bert_config import BertConfig

POOLINGS = ("cls", "mean")


@dataclasses.dataclass(frozen=True)
class ModernBertConfig(BertConfig):
    """Architecture of a ModernBERT encoder (Warner et al. 2024): rotary positions, GeGLU
    feed-forward layers, pre-LayerNorm blocks, and attention that is global in every
    `global_attn_every_n_layers`-th layer (0, N, 2N, ...) and a sliding window elsewhere.

    It takes the fields of `BertConfig` with ModernBERT's defaults (exact GELU, LayerNorm
    epsilon 1e-5, no dropout, 8,192 positions, no segments: `type_vocab_size` must be 0 and
    `embedding_size` `None`; `intermediate_size` is the width of the GeGLU's gated half, as
    transformers' `intermediate_size`), and those below.

    Args:
        global_rope_theta: the rotary base of the global layers (160,000).
        local_rope_theta: the rotary base of the sliding-window layers (10,000).
        local_attention: the window: a token attends to the tokens at most
            `local_attention // 2` positions away (128: 64 each side).
        global_attn_every_n_layers: layer i is global where i % N == 0 (3).
        norm_bias: whether the LayerNorms have a bias (beta) (False).
        attention_bias: whether the query/key/value and output projections have biases.
        mlp_bias: whether the GeGLU's two dense layers have biases.
        embedding_dropout: dropout after the embeddings' LayerNorm (`dropout` is the
            feed-forward's, transformers' `mlp_dropout`; `attention_dropout` is on the
            probabilities and on the attention output, as transformers').
        classifier_activation: the activation of the prediction head (the masked LM's and
            the task heads' dense + activation + LayerNorm) (exact GELU).
        classifier_bias: whether that head's dense layer has a bias.
        decoder_bias: whether the masked LM's output layer has a bias (True).
        classifier_pooling: how a sequence classifier reads the sequence, "cls" (the first
            token) or "mean" (over the real tokens).
        classifier_dropout: the task heads' dropout.
        global_layers: which layers attend globally where they are not every
            `global_attn_every_n_layers`-th (a pruned model's, `kbert.models.pruning`: the
            kept layers keep their kinds), one bool per layer; `None`: by that rule.
        first_layer_norm: whether the first layer normalizes its input before attention
            (False: the embeddings' LayerNorm precedes it, as in every released model; a
            pruned model whose first layer was removed has its second's).

    There is no table of absolute positions: `max_sequence_length` is the length the model
    was trained to (the tokenizer's limit), and the rotary positions reach any length.
    """

    activation: str = "gelu"
    dropout: float = 0.0
    attention_dropout: float = 0.0
    max_sequence_length: int = 8192
    type_vocab_size: int = 0
    layer_norm_epsilon: float = 1e-5
    global_rope_theta: float = 160000.0
    local_rope_theta: float = 10000.0
    local_attention: int = 128
    global_attn_every_n_layers: int = 3
    norm_bias: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    embedding_dropout: float = 0.0
    classifier_activation: str = "gelu"
    classifier_bias: bool = False
    decoder_bias: bool = True
    classifier_pooling: str = "cls"
    classifier_dropout: float = 0.0
    global_layers: Optional[Tuple[bool, ...]] = None
    first_layer_norm: bool = False

    FAMILY = "ModernBERT"
    ORIGINAL_NAMES = {**BertConfig.ORIGINAL_NAMES, "hidden_activation": "activation",
                      "norm_eps": "layer_norm_epsilon", "mlp_dropout": "dropout"}

    def __post_init__(self):
        super().__post_init__()
        if self.type_vocab_size:
            raise ValueError(f"type_vocab_size={self.type_vocab_size}: ModernBERT has no "
                             "segment embeddings (0).")
        if self.embedding_size not in (None, self.hidden_size):
            raise ValueError(f"embedding_size={self.embedding_size}: ModernBERT has no "
                             "factorized embedding (None).")
        if (self.hidden_size // self.num_heads) % 2:
            raise ValueError(
                f"hidden_size / num_heads = {self.hidden_size // self.num_heads}: the rotary "
                "positions turn pairs of a head's units, so each head needs an even width.")
        _utils.check_positive_float("global_rope_theta", self.global_rope_theta)
        _utils.check_positive_float("local_rope_theta", self.local_rope_theta)
        _utils.check_positive_int("local_attention", self.local_attention)
        if self.local_attention < 2:
            raise ValueError(f"local_attention={self.local_attention}: the window reaches "
                             "local_attention // 2 tokens each side, so it must be at least 2.")
        _utils.check_positive_int("global_attn_every_n_layers",
                                  self.global_attn_every_n_layers)
        if self.global_layers is not None:
            kinds = self.global_layers
            if isinstance(kinds, (str, bytes)) or not hasattr(kinds, "__len__") or \
                    len(kinds) != self.num_layers or \
                    not all(isinstance(kind, bool) for kind in kinds):
                raise ValueError(f"global_layers={kinds!r}: one bool per layer, "
                                 f"{self.num_layers} (num_layers), or None.")
            object.__setattr__(self, "global_layers", tuple(kinds))
        for name in ("norm_bias", "attention_bias", "mlp_bias", "classifier_bias",
                     "decoder_bias", "first_layer_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"`{name}` must be True or False, got "
                                 f"{getattr(self, name)!r}.")
        _utils.check_rate("embedding_dropout", self.embedding_dropout)
        _utils.check_rate("classifier_dropout", self.classifier_dropout)
        _utils.get_activation(self.classifier_activation)
        if self.classifier_pooling not in POOLINGS:
            raise ValueError(f"classifier_pooling={self.classifier_pooling!r}; allowed: "
                             f"{', '.join(map(repr, POOLINGS))}.")

    @property
    def window_radius(self):
        """How far a sliding-window layer's token sees each side: `local_attention // 2`."""
        return self.local_attention // 2

    def is_global(self, layer):
        """Whether layer `layer` (0-based) attends to the whole sequence."""
        if self.global_layers is not None:
            return self.global_layers[layer]
        return layer % self.global_attn_every_n_layers == 0

    def kept_layers(self, layers):
        """As `BertConfig.kept_layers`; each kept layer keeps its kind (`global_layers`
        where the every-N rule no longer gives it) and its LayerNorm before attention
        (`first_layer_norm` where the first layer goes)."""
        kinds = tuple(self.is_global(i) for i in layers)
        every = tuple(i % self.global_attn_every_n_layers == 0 for i in range(len(layers)))
        return {"num_layers": len(layers), "global_layers": None if kinds == every else kinds,
                "first_layer_norm": self.first_layer_norm or layers[0] != 0}

    def pruned_fields(self):
        fields = super().pruned_fields()
        if self.global_layers is not None:
            fields["global_layers"] = self.global_layers
        if self.first_layer_norm:
            fields["first_layer_norm"] = True
        return fields
