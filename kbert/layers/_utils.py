"""Small helpers shared by the layers: argument checks, initializers, activations."""

import keras

# Activations a config may name. "gelu" is the exact erf form (Hugging Face BERT);
# "gelu_approximate" is the tanh form of google-research/bert's modeling.py and keras-hub.
_ACTIVATIONS = {
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),
    "gelu_approximate": lambda x: keras.activations.gelu(x, approximate=True),
    "relu": keras.activations.relu,
    "silu": keras.activations.silu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}
ACTIVATION_NAMES = tuple(sorted(_ACTIVATIONS))


def get_activation(name):
    """Returns the activation function called `name` (a string, so configs stay plain data)."""
    if name not in _ACTIVATIONS:
        raise ValueError(
            f"Unknown activation {name!r}. Allowed: {', '.join(ACTIVATION_NAMES)}."
        )
    return _ACTIVATIONS[name]


def check_positive_int(name, value, allow_zero=False):
    ok = isinstance(value, int) and not isinstance(value, bool) and (
        value >= 0 if allow_zero else value > 0
    )
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"`{name}` must be an integer {bound}, got {value!r}.")
    return value


def check_rate(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a number in [0, 1), got {value!r}.")
    return float(value)


def check_positive_float(name, value, allow_zero=False):
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and (
        value >= 0 if allow_zero else value > 0
    )
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"`{name}` must be a number {bound}, got {value!r}.")
    return float(value)


def truncated_normal(stddev):
    """BERT's initializer for every kernel and embedding table."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def check_sequence_length(sequence_length, max_sequence_length):
    """Refuses a static sequence length past the learned positions (a traced, unknown one
    passes: the position table's slice fails there instead)."""
    if isinstance(sequence_length, int) and sequence_length > max_sequence_length:
        raise ValueError(
            f"Sequence length {sequence_length} is longer than max_sequence_length="
            f"{max_sequence_length}: the model has no position embedding past it."
        )


def _check_activation(name, value):
    get_activation(value)
    return value


# The rule of each setting that several layers take, by its name: one place for each.
SETTING_CHECKS = {
    "vocabulary_size": check_positive_int,
    "hidden_size": check_positive_int,
    "max_sequence_length": check_positive_int,
    "num_layers": check_positive_int,
    "num_heads": check_positive_int,
    "intermediate_size": check_positive_int,
    "activation": _check_activation,
    "dropout": check_rate,
    "attention_dropout": check_rate,
    "layer_norm_epsilon": check_positive_float,
    "initializer_range": check_positive_float,
}


def keep_settings(layer, **settings):
    """Checks each setting by the rule of its name (`SETTING_CHECKS`; others are kept as
    given) and stores it on `layer` under that name, which `settings_config` saves;
    `activation` also gives `layer._activation_fn`. Returns `layer`."""
    for name, value in settings.items():
        if name in SETTING_CHECKS:
            value = SETTING_CHECKS[name](name, value)
        setattr(layer, name, value)
    if "activation" in settings:
        layer._activation_fn = get_activation(layer.activation)
    kept = layer.__dict__.get("_kept_settings", ())
    object.__setattr__(layer, "_kept_settings", kept + tuple(n for n in settings if n not in kept))
    return layer


def settings_config(layer):
    """The settings `keep_settings` stored on `layer`, by name (for `get_config`)."""
    return {name: getattr(layer, name) for name in layer.__dict__.get("_kept_settings", ())}


class SettingsConfig:
    """Mixed into a layer (before `keras.layers.Layer`) that keeps its arguments with
    `keep_settings`: its config is the base's plus those settings."""

    def get_config(self):
        config = super().get_config()
        config.update(settings_config(self))
        return config
