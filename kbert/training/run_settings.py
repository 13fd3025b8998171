"""`RunConfig`: the fields every training run has (output, hardware, optimizer), each a flag.

`PretrainingConfig` and the fine-tuning config extend it, so these settings, their help and
their checks are written once for both programs.
"""

import dataclasses
from typing import Optional

from kbert.training import config_fields
from kbert.models.optimizers import DECAYS, OPTIMIZERS, create_optimizer
from kbert.training.config_fields import setting
from kbert.training.strategies import STRATEGIES

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


@dataclasses.dataclass
class RunConfig:
    """Output, hardware and optimizer settings of a run (see `PretrainingConfig`)."""

    model_dir: str = setting(help="Checkpoints, TensorBoard logs, the vocabulary (vocab.txt, "
                             "spiece.model, or vocab.json + merges.txt), config.json "
                             "(a directory; required).", group="Output")
    global_batch_size: int = setting(32, "Sequences per step over all replicas (an integer "
                                     ">= 1, divisible by the replicas).", group="Schedule",
                                     minimum=1)
    optimizer: str = setting("adamw", "Optimizer: adamw or lamb.", group="Schedule",
                             choices=OPTIMIZERS)
    learning_rate: float = setting(1e-4, "Peak learning rate (> 0).", group="Schedule")
    decay: str = setting("linear", "Decay after warm-up: linear, polynomial, constant or "
                         "warmup_stable_decay (the peak held, then a 1-sqrt decay over the "
                         "last --decay_steps: ModernBERT's).", group="Schedule", choices=DECAYS)
    decay_steps: Optional[int] = setting(
        None, "Steps of --decay=warmup_stable_decay's final decay (an integer >= 1; unset: "
              "the last 10% of the steps after warm-up).", group="Schedule", minimum=1)
    power: float = setting(1.0, "Power of the polynomial decay (> 0).", group="Schedule")
    end_learning_rate: float = setting(0.0, "Learning rate at the last step (>= 0).",
                                       group="Schedule", minimum=0)
    weight_decay: float = setting(0.01, "Decoupled weight decay, not on LayerNorm or biases "
                                  "(>= 0).", group="Schedule", minimum=0)
    adam_beta_2: float = setting(0.999, "The optimizer's second-moment decay, in (0, 1) "
                                 "(BERT's 0.999; RoBERTa's and ModernBERT's 0.98).",
                                 group="Schedule")
    adam_epsilon: float = setting(1e-6, "The optimizer's epsilon (> 0; BERT's 1e-6; "
                                  "transformers' Trainer 1e-8).", group="Schedule")
    clipnorm: Optional[float] = setting(1.0, "Global gradient-norm clipping (> 0; 0: off).",
                                        group="Schedule", from_flag=config_fields.zero_is_none)
    gradient_accumulation_steps: int = setting(
        1, "Batches per optimizer update (an integer >= 1; 1 under several replicas).",
        group="Schedule", minimum=1)
    precision: str = setting("float32", "Keras dtype policy (mixed_float16 scales the loss).",
                             group="Hardware", choices=PRECISIONS)
    jit_compile: bool = setting(True, "Compile the train step with XLA: true or false.",
                                group="Hardware")
    steps_per_execution: int = setting(1, "Steps per tf.function call (an integer >= 1).",
                                       group="Hardware", minimum=1)
    strategy: str = setting("default", "tf.distribute strategy (multi_worker reads TF_CONFIG).",
                            group="Hardware", choices=STRATEGIES)
    tpu: str = setting("", "TPU for --strategy=tpu: 'local' on a TPU VM (Colab's TPU runtime), "
                       "else its name or grpc:// address ('' reads $TPU_NAME or "
                       "$COLAB_TPU_ADDR).", group="Hardware")
    export_dir: Optional[str] = setting(None, "Export a SavedModel here at the end (a "
                                        "directory; unset: no export).", group="Output")
    seed: int = setting(0, "Seed of every random choice: data, masks, init, dropout (an "
                        "integer).", group="Output")
    verbose: int = setting(1, "Keras verbosity: 0 silent, 1 progress bar, 2 one line per loop.",
                           group="Output", minimum=0)

    def validate(self):
        """Checks every field's allowed values; subclasses add their own checks."""
        config_fields.check(self)
        if not 0 < self.adam_beta_2 < 1:
            raise config_fields.ConfigError(
                f"--adam_beta_2 must be a number in (0, 1), got {self.adam_beta_2!r}.")
        if not self.adam_epsilon > 0:
            raise config_fields.ConfigError(
                f"--adam_epsilon must be a number > 0, got {self.adam_epsilon!r}.")

    def dtype(self):
        """The Keras dtype policy of the model: None for float32."""
        return None if self.precision == "float32" else self.precision

    def create_optimizer(self, total_steps, warmup_steps, learning_rate_multipliers=None):
        """The optimizer these settings describe, with BERT's warm-up and decay schedule."""
        return create_optimizer(
            self.optimizer, learning_rate=self.learning_rate, warmup_steps=warmup_steps,
            total_steps=total_steps, decay=self.decay, power=self.power,
            end_learning_rate=self.end_learning_rate, weight_decay=self.weight_decay,
            beta_2=self.adam_beta_2, epsilon=self.adam_epsilon, decay_steps=self.decay_steps,
            clipnorm=self.clipnorm, gradient_accumulation_steps=self.gradient_accumulation_steps,
            learning_rate_multipliers=learning_rate_multipliers,
        )
