"""Fine-tuning layer by layer: learning-rate decay by depth, a frozen backbone, gradual unfreezing.

Depth counts from the bottom of a kbert backbone: the embeddings are 0, transformer layer i
is i + 1, and the pooler and everything outside the backbone (the task head) are
`num_layers + 1`. ALBERT's shared blocks take the depth of the highest layer they serve.
"""

import contextlib

import keras

from kbert._keras_private import flatten_layers


def _backbone(model):
    backbone = getattr(model, "backbone", model)
    if not hasattr(backbone, "transformer_layers") or not hasattr(backbone, "embeddings"):
        raise ValueError(f"{type(model).__name__} is not a kbert backbone and has no "
                         "`backbone` attribute holding one.")
    return backbone


def depths(model):
    """[(layer, depth)] for the embeddings, the transformer blocks and the pooler."""
    backbone = _backbone(model)
    num_layers = backbone.config.num_layers
    blocks = backbone.transformer_layers
    result = [(backbone.embeddings, 0)]
    for i, block in enumerate(blocks):
        # Block i serves layers [i * L / B, (i + 1) * L / B): its top layer sets its depth.
        result.append((block, (i + 1) * num_layers // len(blocks)))
    if backbone.pooler is not None:
        result.append((backbone.pooler, num_layers + 1))
    return result


def learning_rate_multipliers(model, decay):
    """{variable path: decay ** (num_layers + 1 - depth)}: ELECTRA's layer-wise decay.

    The head keeps the base rate (factor 1), each layer below is multiplied by `decay`
    once more, the embeddings last. Pass the result to `create_optimizer`.
    """
    if not 0 < decay <= 1:
        raise ValueError(f"The layer-wise learning-rate decay must be in (0, 1], got {decay!r}.")
    top = _backbone(model).config.num_layers + 1
    return {variable.path: float(decay ** (top - depth))
            for layer, depth in depths(model) for variable in layer.weights}


def set_trainable_layers(model, count):
    """The top `count` backbone layers (by depth, the pooler counted as a layer) train; the
    rest of the backbone is frozen. The head always trains. `count` 0 freezes the backbone;
    None unfreezes it all. Returns the number of depths now trainable."""
    layers = depths(model)
    levels = sorted({depth for _, depth in layers}, reverse=True)
    trainable = set(levels if count is None else levels[:count])
    for layer, depth in layers:
        layer.trainable = depth in trainable
    return len(trainable)


@contextlib.contextmanager
def frozen(layer):
    """`layer` (a backbone, a model) frozen for the block, then every layer's and variable's
    own `trainable` back as it was (setting `trainable` on a layer sets it on all it holds: a
    LoRA backbone's frozen kernels, a partly frozen model). Each variable is frozen itself:
    on a LoRA backbone, `trainable = False` on a block already frozen left the adapters it
    holds trainable (Keras 3.15)."""
    layers = [(each, each.trainable) for each in [layer, *flatten_layers(layer)]]
    variables = [(v, v.trainable) for v in layer.variables]
    layer.trainable = False
    for variable, _ in variables:
        variable.trainable = False
    try:
        yield
    finally:
        for each, trainable in layers:  # parents first, then what they hold
            each.trainable = trainable
        for variable, trainable in variables:
            variable.trainable = trainable


class GradualUnfreezing(keras.callbacks.Callback):
    """Starts with the backbone frozen, then unfreezes it from the top: one more depth (layer)
    every `every` steps (or epochs with `unit="epoch"`), until all of it trains.

    The optimizer must be built for every variable, frozen ones included (the fine-tuning
    run builds it so); a change rebuilds the train function in place, so no manual
    recompiling is needed (`Model.make_train_function(force=True)`).
    """

    def __init__(self, every, unit="step", verbose=True):
        super().__init__()
        if unit not in ("step", "epoch"):
            raise ValueError(f"unit must be 'step' or 'epoch', got {unit!r}.")
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an integer >= 1, got {every!r}.")
        self.every, self.unit, self.verbose = every, unit, verbose
        self._count = None

    def _update(self, position):
        count = position // self.every
        if count == self._count:
            return
        now = set_trainable_layers(self.model, count)
        self._count = count
        if self.model.train_function is not None:
            self.model.make_train_function(force=True)
        if self.verbose:
            print(f"\nGradual unfreezing: the top {now} backbone layer(s) train.")

    def on_train_begin(self, logs=None):
        self._count = None  # a resumed run starts from the state its step or epoch implies

    def on_epoch_begin(self, epoch, logs=None):
        if self.unit == "epoch":
            self._update(epoch)

    def on_train_batch_begin(self, batch, logs=None):
        if self.unit == "step":
            self._update(int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)))
