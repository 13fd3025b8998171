"""What every kbert backbone is: a functional Keras model from token ids to hidden states,
made from its family's config and saved as that config."""

import dataclasses
import inspect

import keras

# The attributes every backbone has, which heads, converters and distillers read.
LAYER_ATTRIBUTES = ("embeddings", "transformer_layers", "pooler")


def layer_from_config(layer_class, config, **given):
    """A `layer_class` whose arguments are the fields of `config` (a family's config, or any
    object with the same attributes) of the same names, and `given` (which win): a family's
    layers take their settings from its config by name."""
    parameters = inspect.signature(layer_class.__init__).parameters
    taken = {name: getattr(config, name) for name, parameter in parameters.items()
             if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and name != "self"
             and name not in given and hasattr(config, name)}
    return layer_class(**taken, **given)


def encoder_blocks(block_class, config, count, dtype, per_layer=None, **given):
    """`count` blocks `transformer_layer_0`, ... (the names converters and saved models
    read), each a `layer_from_config(block_class, config, **given)`; `per_layer(i)`: the
    arguments of block i's own (a pruned model's sizes), added to `given`."""
    return [layer_from_config(block_class, config, dtype=dtype, name=f"transformer_layer_{i}",
                              **given, **(per_layer(i) if per_layer else {}))
            for i in range(count)]


class Internals:
    """What a backbone's graph collects on request (`Backbone.with_internals`): the hidden
    states (the embeddings' output, then each layer's) and each layer's attention
    probabilities, as transformers' `output_hidden_states` and `output_attentions`. A family's
    `network` passes its embeddings' output through `embedded` and runs each block through
    `block`; `NO_INTERNALS` (the default) collects nothing and changes nothing in the graph."""

    def __init__(self, hidden_states=False, attentions=False):
        self.hidden_states = [] if hidden_states else None
        self.attentions = [] if attentions else None

    def embedded(self, x):
        if self.hidden_states is not None:
            self.hidden_states.append(x)
        return x

    def block(self, block, x, *args, **kwargs):
        """`block(x, *args, **kwargs)`, keeping its output and attention probabilities."""
        if self.attentions is not None:
            x, probs = _WithProbabilities(block)(x, *args, **kwargs)
            self.attentions.append(probs)
        else:
            x = block(x, *args, **kwargs)
        return self.embedded(x)

    def outputs(self):
        """{"hidden_states": [...], "attentions": [...]}, of those collected."""
        return {name: value for name, value in (("hidden_states", self.hidden_states),
                                                ("attentions", self.attentions))
                if value is not None}


NO_INTERNALS = Internals()


class _WithProbabilities(keras.layers.Layer):
    """`block` returning its attention probabilities too, as an operation of its own: a
    functional graph maps a layer's outputs by its first call's, which returns one tensor."""

    def __init__(self, block, **kwargs):
        super().__init__(dtype=block.dtype_policy, **kwargs)
        self.block = block

    def call(self, inputs, *args, **kwargs):
        return self.block(inputs, *args, return_attention_probs=True, **kwargs)

    def compute_output_spec(self, inputs, *args, **kwargs):
        return self.block.compute_output_spec(inputs, *args, return_attention_probs=True,
                                              **kwargs)


def int_inputs(names):
    """A `keras.Input` int32 [B, S] for each of `names`, by name."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in names}


class Backbone(keras.Model):
    """The base class of every family's backbone (`BertBackbone`, `AlbertBackbone`,
    `DistilBertBackbone`, `ElectraBackbone`, `RobertaBackbone`, `DebertaV3Backbone`,
    `MobileBertBackbone`, `ModernBertBackbone`): `isinstance(model, Backbone)` means "any
    kbert backbone".

    A family sets `config_class`, a frozen dataclass whose fields are the constructor's
    arguments (it validates them and holds their defaults), and writes `make_layers(config,
    dtype)`, `network(config, layers, inputs, internals)` (its functional graph) and, where
    its inputs differ, `input_names(config)`. `layers` maps attribute names to layers: `embeddings`,
    `transformer_layers` (the blocks, a list), `pooler` (`None` without one) and any of the
    family's own (DeBERTa-v3's `relative_embedding`). The base class makes the config, keeps
    the dtype policy and saves and loads the config (`get_config`, `from_config`).

    It takes the fields of the family's config class, plus `dtype` (a dtype policy such as
        "mixed_bfloat16") and the usual `keras.Model` keyword arguments.

    Inputs (a dict): `token_ids`, `padding_mask` and, where the family has segments,
        `segment_ids`, each int [B, S].
    Outputs (a dict): `sequence_output` [B, S, H] and, where `has_pooler`,
        `pooled_output` [B, H].
    """

    config_class = None
    # Whether the outputs hold `pooled_output`.
    has_pooler = False
    # Where the position table's row for the first token is (RoBERTa: 2; see `Embeddings`).
    position_offset = 0
    # The layer the family's task models put between the encoder and their classifier
    # (ModernBERT's prediction head), made from the config by `layer_from_config`; `None`: none.
    prediction_head_class = None

    def __init__(self, vocabulary_size, num_layers, hidden_size, num_heads, intermediate_size,
                 dtype=None, **kwargs):
        if self.config_class is None:
            raise TypeError(
                f"{type(self).__name__} has no config_class: Backbone is the base class of "
                "the families' backbones (BertBackbone, ...), which set it."
            )
        fields = {f.name for f in dataclasses.fields(self.config_class)}
        config = self.config_class(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            hidden_size=hidden_size,
            num_heads=num_heads,
            intermediate_size=intermediate_size,
            **{name: kwargs.pop(name) for name in list(kwargs) if name in fields},
        )
        layers = self.make_layers(config, dtype)
        inputs = int_inputs(self.input_names(config))
        outputs = self.network(config, layers, inputs, NO_INTERNALS)
        missing = [name for name in LAYER_ATTRIBUTES if name not in layers]
        if missing:
            raise TypeError(f"{type(self).__name__}.make_layers returned no {missing}: "
                            f"every backbone has {list(LAYER_ATTRIBUTES)}.")
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        if dtype is not None:
            # A functional Model does not keep `dtype`; get_config must save the policy.
            self.dtype_policy = keras.dtype_policies.get(dtype)
        self.config = config  # the family's config (BertConfig, AlbertConfig, ...)
        self._layer_names = tuple(layers)
        for name, layer in layers.items():
            setattr(self, name, layer)

    def make_layers(self, config, dtype):
        """The family's layers, by attribute name (see the class)."""
        raise NotImplementedError(f"{type(self).__name__} must define make_layers.")

    def input_names(self, config):
        """The names of the int inputs: token_ids, (segment_ids,) padding_mask."""
        return ("token_ids", "segment_ids", "padding_mask")

    def network(self, config, layers, inputs, internals):
        """The family's graph on `inputs` (symbolic): its outputs dict (see the class), with
        the embeddings' output and each block passed through `internals`."""
        raise NotImplementedError(f"{type(self).__name__} must define network.")

    def with_internals(self, hidden_states=True, attentions=True):
        """A `keras.Model` on this backbone's layers (its weights, not a copy) whose outputs
        add, as transformers' `output_hidden_states` / `output_attentions`:
        `hidden_states`, a list of num_layers + 1 tensors [B, S, H] (the embeddings' output,
        then each layer's), and `attentions`, a list of num_layers tensors [B, N, S, S] (each
        layer's attention probabilities after the softmax, 0 on padded keys). The backbone
        itself computes neither: its attention stays fused."""
        if not (hidden_states or attentions):
            raise ValueError("with_internals needs hidden_states=True or attentions=True.")
        internals = Internals(hidden_states, attentions)
        inputs = int_inputs(self.input_names(self.config))
        layers = {name: getattr(self, name) for name in self._layer_names}
        outputs = self.network(self.config, layers, inputs, internals)
        return keras.Model(inputs, {**outputs, **internals.outputs()},
                           name=f"{self.name}_internals")

    def enable_lora(self, rank, alpha=None, keep_trainable=("pooler",)):
        """Parameter-efficient fine-tuning: freezes the backbone and puts LoRA of `rank` on
        its encoder blocks' dense layers (`kbert.layers.lora`: the fused attention
        projection gets A [hidden, rank] and B [rank, 3, heads, head_size]); `alpha` scales
        the update (default: `rank`). The layers named in `keep_trainable` train fully (the
        pooler, which a classifier head reads; `()` for none); a task head on the backbone
        stays trainable. Compile after this. Saving merges the update into the weights: the
        saved model reloads as a plain one, ready to export. Returns the number of
        trainable parameters of the backbone.

        Keras' `load_weights` on a model with LoRA enabled zeroes its A and B (Keras' LoRA
        layers do so), after which they no longer train: resume a LoRA run from a
        `tf.train.Checkpoint` (as tools/finetune.py does), or enable LoRA after loading.
        Setting `trainable = True` on the backbone afterwards unfreezes its kernels too.
        Under a mixed policy the update is added to the kernel in the compute dtype in the
        forward pass; saving merges it in float32."""
        from kbert.layers import lora

        lora.enable_lora(self, rank, alpha, keep_trainable)
        return int(sum(keras.ops.size(v) for v in self.trainable_weights))

    @property
    def token_embedding(self):
        """The token `keras.layers.Embedding`; heads tie their output weights to it."""
        return self.embeddings.token_embedding

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        config["dtype"] = keras.dtype_policies.serialize(self.dtype_policy)
        config.update(self.config.to_dict())
        return config

    @classmethod
    def from_config(cls, config, **kwargs):
        """A backbone from its family's config object (`BertConfig`, `AlbertConfig`, ...;
        `kwargs`: `dtype`, `name`) or from the dict of `get_config()` (Keras loading)."""
        if not isinstance(config, dict):
            return cls(**config.to_dict(), **kwargs)
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.get(config["dtype"])
        return cls(**config)
