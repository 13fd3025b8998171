"""Optimizers for a training run: `create_optimizer` from the run's settings."""

from kbert.models.optimizers import DECAYS, NO_DECAY_NAMES, AdamW, Lamb, WarmupSchedule

OPTIMIZERS = ("adamw", "lamb")
__all__ = ["DECAYS", "NO_DECAY_NAMES", "OPTIMIZERS", "AdamW", "Lamb", "WarmupSchedule",
           "create_optimizer"]


def create_optimizer(name="adamw", learning_rate=1e-4, warmup_steps=0, total_steps=1,
                     decay="linear", power=1.0, end_learning_rate=0.0, weight_decay=0.01,
                     beta_1=0.9, beta_2=0.999, epsilon=1e-6, clipnorm=1.0,
                     gradient_accumulation_steps=None, learning_rate_multipliers=None):
    """AdamW or LAMB with BERT's warm-up/decay schedule and weight decay.

    Weight decay skips LayerNorm weights and biases. `clipnorm` clips the global gradient
    norm (None: no clipping). `gradient_accumulation_steps` > 1 averages gradients over that many
    batches before each update (Keras's own accumulation). `learning_rate_multipliers`
    (variable path -> factor) scales some variables' rates, e.g. from
    `kbert.training.layer_wise.learning_rate_multipliers` (layer-wise decay).
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
                              end_learning_rate)
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
