"""kbert's optimizers and learning-rate schedule as Keras objects (keras.optimizers underneath).

They live below `kbert.training` so that loading a saved model finds them registered without
importing the training loop: `kbert.untrusted.keras_archive.load_model` needs only the models.
`create_optimizer` builds one from a run's settings (`kbert.training.create_optimizer` too).
"""

import keras
from keras import ops

from kbert import _fused_adam, _keras_private, _replicas

DECAYS = ("linear", "polynomial", "constant", "warmup_stable_decay")
# BERT decays every weight but LayerNorm's (gamma, beta) and the biases.
NO_DECAY_NAMES = ("bias", "gamma", "beta")
OPTIMIZERS = ("adamw", "lamb")


@keras.saving.register_keras_serializable(package="kbert")
class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak` over `warmup_steps`, then `decay`.

    decay: "linear" (to `end_learning_rate` at `total_steps`), "polynomial" (with `power`,
    as in BERT's phase-2 and LAMB recipes), "constant", or "warmup_stable_decay"
    (ModernBERT's trapezoid, Warner et al. 2024 section 2.2.2: `peak` held until the last
    `decay_steps` steps, then the 1-sqrt decay of Hägele et al. 2024 down to
    `end_learning_rate` at `total_steps`: peak - (peak - end) * sqrt(fraction of the decay
    done)).
    decay_steps: the length of warmup_stable_decay's final decay, in
    [1, total_steps - warmup_steps]; None: the last 10% of the steps after warm-up.
    """

    def __init__(self, peak, warmup_steps, total_steps, decay="linear", power=1.0,
                 end_learning_rate=0.0, decay_steps=None):
        if decay not in DECAYS:
            raise ValueError(f"Unknown decay {decay!r}. Allowed: {', '.join(DECAYS)}.")
        if peak <= 0:
            raise ValueError(f"The learning rate must be > 0, got {peak!r}.")
        if not 0 <= warmup_steps <= total_steps or total_steps < 1:
            raise ValueError(
                f"Need 0 <= warmup_steps <= total_steps and total_steps >= 1; got "
                f"warmup_steps={warmup_steps!r}, total_steps={total_steps!r}."
            )
        if decay_steps is not None and decay != "warmup_stable_decay":
            raise ValueError(f"decay_steps={decay_steps!r} sets warmup_stable_decay's final "
                             f"decay; decay={decay!r} has none (leave it None).")
        if decay == "warmup_stable_decay":
            after_warmup = total_steps - warmup_steps
            if decay_steps is None:
                decay_steps = max(after_warmup // 10, 1)
            if not (isinstance(decay_steps, int) and 1 <= decay_steps <= max(after_warmup, 1)):
                raise ValueError(
                    f"decay_steps={decay_steps!r}: the final decay must be an integer in "
                    f"[1, total_steps - warmup_steps = {after_warmup}].")
        self.peak = float(peak)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.decay = decay
        self.power = float(power) if decay == "polynomial" else 1.0
        self.end_learning_rate = float(end_learning_rate)
        self.decay_steps = decay_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = self.peak * step / max(self.warmup_steps, 1)
        if self.decay == "constant":
            after = ops.convert_to_tensor(self.peak, "float32")
        elif self.decay == "warmup_stable_decay":
            start = self.total_steps - self.decay_steps
            done = ops.clip((step - start) / self.decay_steps, 0.0, 1.0)
            after = self.peak - (self.peak - self.end_learning_rate) * ops.sqrt(done)
        else:
            span = max(self.total_steps - self.warmup_steps, 1)
            left = ops.clip((self.total_steps - step) / span, 0.0, 1.0)
            after = (self.peak - self.end_learning_rate) * left**self.power + self.end_learning_rate
        return ops.where(step < self.warmup_steps, warmup, after)

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "decay": self.decay,
            "power": self.power,
            "end_learning_rate": self.end_learning_rate,
            "decay_steps": self.decay_steps,
        }


class _ClipTheSummedGradient:
    """Global-norm clipping of the replicas' summed gradient under tf.distribute.

    Keras clips each replica's gradient before it sums them across replicas (see
    tensorflow/tensorflow#33929: "before gradients get aggregated (usually wrong)"), so with
    N replicas the update is not the one a single device makes. Here the replicas first sum
    their gradients, clip that sum by its global norm, and hand on 1/N of it each, so that
    Keras's own sum gives the clipped total. One replica (or JAX): Keras's clipping as is.
    """

    def __init__(self, *args, **kwargs):
        _keras_private.guard("clip_gradients")
        super().__init__(*args, **kwargs)

    def _clip_gradients(self, grads):
        context = _replicas.replica_context() if self.global_clipnorm else None
        if context is not None:
            return _replicas.clip_summed_gradients(context, grads, self.global_clipnorm)
        return super()._clip_gradients(grads)


class _PerVariableRates:
    """Learning-rate multipliers by variable path (layer-wise learning-rate decay).

    `learning_rate_multipliers` maps a variable's `path` to the factor its learning rate is
    multiplied by; variables not named keep the schedule's rate. The factor scales the step
    inside `update_step` (Keras's hook for custom optimizers), so it works for Adam, whose
    update does not scale with the gradient. The decoupled weight decay keeps the base rate.
    """

    def __init__(self, *args, learning_rate_multipliers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.learning_rate_multipliers = {str(k): float(v) for k, v in
                                          (learning_rate_multipliers or {}).items()}
        self._factors = []

    def build(self, variables):
        super().build(variables)
        # update_step sees the backend's variable (a tf.Variable, or a replica's copy), not
        # the Keras one with its path: factors are looked up by the optimizer's own index.
        self._factors = [self.learning_rate_multipliers.get(v.path, 1.0) for v in variables]
        if self.learning_rate_multipliers:
            _keras_private.guard("optimizer_variable_index")

    def update_step(self, gradient, variable, learning_rate):
        if self.learning_rate_multipliers:
            factor = self._factors[self._get_variable_index(variable)]
            if factor != 1.0:
                learning_rate = ops.multiply(learning_rate,
                                             ops.cast(factor, learning_rate.dtype))
        return super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        config = super().get_config()
        if self.learning_rate_multipliers:
            config["learning_rate_multipliers"] = dict(self.learning_rate_multipliers)
        return config


class _FusedAdamStep:
    """Adam's update of each variable as TensorFlow's fused kernel where that is Keras's
    arithmetic (`kbert._fused_adam`, which says where and the one difference), and the
    decoupled weight decay in fewer passes; Keras's own update elsewhere."""

    def _fused(self, variable):
        return _fused_adam.applies(self, variable)

    def _apply_weight_decay(self, variables):
        """Keras's decoupled decay, x -= lr wd x, with lr wd one number first (two passes over
        each variable, not three)."""
        fused = [self._fused(v) for v in variables]
        if self.weight_decay is None or not any(fused):
            return super()._apply_weight_decay(variables)
        super()._apply_weight_decay([v for v, f in zip(variables, fused) if not f])
        rate = ops.cast(self.learning_rate, "float32") * ops.cast(self.weight_decay, "float32")
        for variable in (v for v, f in zip(variables, fused) if f):
            if self._use_weight_decay(variable):
                variable.assign_sub(variable * rate)

    def update_step(self, gradient, variable, learning_rate):
        if not self._fused(variable):
            return super().update_step(gradient, variable, learning_rate)
        _fused_adam.adam_step(self, gradient, variable, learning_rate)


@keras.saving.register_keras_serializable(package="kbert")
class AdamW(_PerVariableRates, _ClipTheSummedGradient, _FusedAdamStep, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW`, clipping the summed gradient under tf.distribute, with
    optional per-variable learning-rate multipliers, its update TensorFlow's fused Adam
    kernel where that is the same (`_FusedAdamStep`)."""


@keras.saving.register_keras_serializable(package="kbert")
class Lamb(_PerVariableRates, _ClipTheSummedGradient, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb`, clipping the summed gradient under tf.distribute, with
    optional per-variable learning-rate multipliers."""


def create_optimizer(name="adamw", learning_rate=1e-4, warmup_steps=0, total_steps=1,
                     decay="linear", power=1.0, end_learning_rate=0.0, weight_decay=0.01,
                     beta_1=0.9, beta_2=0.999, epsilon=1e-6, clipnorm=1.0,
                     gradient_accumulation_steps=None, learning_rate_multipliers=None,
                     decay_steps=None):
    """AdamW or LAMB with BERT's warm-up/decay schedule and weight decay.

    Weight decay skips LayerNorm weights and biases. `clipnorm` clips the global gradient
    norm (None: no clipping). `gradient_accumulation_steps` > 1 averages gradients over that many
    batches before each update (Keras's own accumulation). `learning_rate_multipliers`
    (variable path -> factor) scales some variables' rates, e.g. from
    `kbert.training.layer_wise.learning_rate_multipliers` (layer-wise decay). `decay_steps`:
    the final decay of `decay="warmup_stable_decay"` (see `WarmupSchedule`).
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {name!r}. Allowed: {', '.join(OPTIMIZERS)}.")
    if gradient_accumulation_steps is not None and (
        not isinstance(gradient_accumulation_steps, int) or gradient_accumulation_steps < 1
    ):
        raise ValueError(
            f"gradient_accumulation_steps must be an integer >= 1, got "
            f"{gradient_accumulation_steps!r}."
        )
    if gradient_accumulation_steps == 1:
        gradient_accumulation_steps = None
    schedule = WarmupSchedule(learning_rate, warmup_steps, total_steps, decay, power,
                              end_learning_rate, decay_steps)
    cls = AdamW if name == "adamw" else Lamb
    optimizer = cls(
        learning_rate=schedule,
        weight_decay=float(weight_decay or 0.0),
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm,
        gradient_accumulation_steps=gradient_accumulation_steps,
        learning_rate_multipliers=learning_rate_multipliers,
    )
    if weight_decay:
        optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer
