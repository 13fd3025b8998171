"""What every kbert task model shares: the backbone's inputs, a fine-tuning compile(), config."""

import importlib

import keras

from kbert import models
from kbert.layers import _utils
from kbert.models.backbone import int_inputs, layer_from_config
from kbert.models.internals import model_with_internals
from kbert.models.optimizers import NO_DECAY_NAMES
from kbert.tasks.fitting import TextInputs

# transformers' BERT, ALBERT and ELECTRA span heads have no dropout before `qa_outputs`.
_NO_DROPOUT = {"question_answerer"}


def family_of(backbone):
    """The `kbert.models.FAMILIES` key of `backbone`'s class ("bert" for unknown subclasses of
    `BertBackbone`), from the most specific class up: `ElectraBackbone` is a `BertBackbone`."""
    for cls in type(backbone).__mro__:
        for name, family in models.FAMILIES.items():
            if family.backbone is cls:
                return name
    raise TypeError(
        f"A kbert task needs a kbert backbone (one of "
        f"{', '.join(f.backbone.__name__ for f in models.FAMILIES.values())}); "
        f"got {type(backbone).__name__}."
    )


def default_dropout(backbone, task):
    """The rate transformers' `*For<Task>` model of `backbone`'s family uses: the config's
    `classifier_dropout` where it has one (ModernBERT's, for every head)."""
    family = family_of(backbone)
    rate = getattr(backbone.config, "classifier_dropout", None)
    if rate is not None:
        return rate
    own = models.FAMILIES[family].head_dropout  # the family's record: transformers' rate
    if task in own:
        return own[task]
    if task in _NO_DROPOUT:
        return 0.0
    return backbone.config.dropout


def backbone_inputs(backbone):
    """New `keras.Input`s with the backbone's names (DistilBERT has no `segment_ids`)."""
    return int_inputs(backbone.input)


def head_dropout(backbone, task, dropout):
    """The checked rate of a task head's dropout; `None`: `default_dropout`."""
    if dropout is None:
        dropout = default_dropout(backbone, task)
    return _utils.check_rate("dropout", dropout)


def dense_layer(backbone, units, name, activation=None, initializer=None):
    """A head's `Dense(units)` in the backbone's dtype policy, its kernel initialized as the
    backbone's (`initializer`: one made so, shared by several layers)."""
    if initializer is None:
        initializer = _utils.truncated_normal(backbone.config.initializer_range)
    return keras.layers.Dense(units, activation=activation, kernel_initializer=initializer,
                              dtype=backbone.dtype_policy, name=name)


def prediction_head(backbone, name="prediction_head"):
    """The layer `backbone`'s family puts between the encoder and a task's classifier
    (`Backbone.prediction_head_class`, ModernBERT's dense + activation + LayerNorm), made
    from its config in its dtype policy; `None` where the family has none."""
    layer_class = type(backbone).prediction_head_class
    if layer_class is None:
        return None
    return layer_from_config(layer_class, backbone.config, dtype=backbone.dtype_policy,
                             name=name)


def default_label_names(count):
    """transformers' names for outputs that have none: "LABEL_0", "LABEL_1", ..."""
    return [f"LABEL_{i}" for i in range(count)]


def check_label_names(label_names, num_classes):
    if label_names is None:
        return None
    if isinstance(label_names, str) or not all(isinstance(n, str) for n in label_names):
        raise ValueError(f"`label_names` must be a list of strings, got {label_names!r}.")
    label_names = list(label_names)
    if num_classes is not None and len(label_names) != num_classes:
        raise ValueError(
            f"{len(label_names)} label_names for num_classes={num_classes}: give one name "
            "per output."
        )
    return label_names


def fine_tuning_adamw(learning_rate=2e-5):
    """BERT's fine-tuning optimizer (run_classifier.py, run_squad.py): Adam with decoupled
    weight decay 0.01, epsilon 1e-6, the global gradient norm clipped at 1.0. BERT's warm-up
    and linear decay need the run's length: pass a schedule (`kbert.models.WarmupSchedule`)."""
    return keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
    )


# The formats `Task.export` writes as the pipeline answers (`kbert.export`); any other is
# Keras' own `Model.export`.
KBERT_FORMATS = ("saved_model", "tflite")


class Task(TextInputs):
    """Mixed into every task model (before `keras.Model`), as `kbert.models.Pretrainer`: a
    mixin and not a `keras.Model` subclass, because Keras rewrites the bases of a class built
    as a functional model to `Functional`.

    A task model may carry its `preprocessor` (`kbert.tasks.preprocessor`): `fit`,
    `evaluate` and `predict` then take the task's raw inputs (`kbert.tasks.fitting`), and
    `.keras` saving keeps it, its tokenizer's files included.

    Subclasses define `default_loss()` -> (loss, loss_weights or None) and
    `default_metrics()` -> (metrics, weighted_metrics or None), and pass their constructor's
    other arguments (what `get_config` saves besides the backbone) to `_init_task`.
    """

    # The key of a single-tensor output in `with_internals`'s dict (transformers' name).
    output_name = "logits"

    def head_layers(self):
        """{name: dense layer} of this model's head in Hugging Face files (transformers'
        names: "classifier", "qa_outputs", ...), for `kbert.convert`'s weight maps (in and
        out of Hugging Face checkpoints, kbert runs and `kbert.load`); {} for a head without
        weights of its own. A task model defines it: without it, converting would rebuild
        the head fresh, so this base refuses."""
        raise NotImplementedError(f"{type(self).__name__} names no head layers "
                                  f"(Task.head_layers): kbert.convert has no weight map for "
                                  f"its head.")

    def with_internals(self, hidden_states=True, attentions=True):
        """A `keras.Model` on this model's layers (its weights, not a copy) whose outputs are
        a dict: this model's outputs (a single tensor under `output_name`, "logits" as in
        transformers' `SequenceClassifierOutput`), then the backbone's `hidden_states` and/or
        `attentions`, as `Backbone.with_internals` gives them (transformers'
        `output_hidden_states` / `output_attentions`). This model stays as it is."""
        return model_with_internals(self, hidden_states, attentions, self.output_name)

    def compile(self, optimizer="adamw", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with the task's defaults: any argument given replaces its
        default, as in Keras.

        optimizer: "adamw" (the default) is BERT's fine-tuning AdamW (learning rate 2e-5,
            weight decay 0.01 without LayerNorm weights and biases, epsilon 1e-6, global
            gradient norm clipped at 1.0). Any optimizer with weight decay gets the same
            exclusions (also after a reload: Keras does not save the exclusion list).
        loss: "auto" is the task's loss (see the class docstring).
        metrics: "auto" is the task's metrics.
        """
        if isinstance(optimizer, str) and optimizer == "adamw":
            optimizer = fine_tuning_adamw()
        if isinstance(optimizer, keras.optimizers.Optimizer) and optimizer.weight_decay:
            optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
        if isinstance(loss, str) and loss == "auto":
            loss, loss_weights = self.default_loss()
            if loss_weights is not None:
                kwargs.setdefault("loss_weights", loss_weights)
        if isinstance(metrics, str) and metrics == "auto":
            metrics, weighted_metrics = self.default_metrics()
            if weighted_metrics is not None:
                kwargs.setdefault("weighted_metrics", weighted_metrics)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        # Keras skips models with a custom compile(); this one takes the saved arguments as is.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _init_task(self, backbone, preprocessor=None, **settings):
        """Keeps `backbone`, its `preprocessor` (or None: token ids in) and the task's
        `settings` (attributes of their names, saved by `get_config`)."""
        # Keras decides on loss scaling (mixed_float16) from the compiled model's own policy.
        self.dtype_policy = backbone.dtype_policy
        self.backbone = backbone
        if preprocessor is not None:
            self.set_preprocessor(preprocessor)
        for name, value in settings.items():
            setattr(self, name, value)
        self._task_settings = tuple(settings)

    def export(self, filepath, format="saved_model", verbose=None, input_signature=None,
               **options):
        """Exports this model as its task's pipeline answers (`kbert.export`): with
        `format="saved_model"` a SavedModel directory whose `serving_default` takes raw
        strings and returns the pipeline's answers (transformers' keys and ranking; a
        `TextClassifier`'s `label` and `score`), `serving_ids` beside it (token ids in, the
        raw logits out) and an `export.json`; with `format="tflite"` a `.tflite` file
        (`quantize=`). `options`: `kbert.export`'s (`task=`, `tokenizer=`, the pipeline's
        call options such as `top_k`). The tokenizer is the preprocessor's.

        Keras' own formats ("tf_saved_model", "onnx", "openvino", "litert", ...: token ids
        in, the raw outputs out) are `keras.Model.export`'s, with its arguments.
        """
        if format not in KBERT_FORMATS:
            return super().export(filepath, format=format, verbose=verbose,
                                  input_signature=input_signature, **options)
        if input_signature is not None:
            raise ValueError(f"input_signature is for Keras' own export (format="
                             f"'tf_saved_model', token ids in); format={format!r} takes raw "
                             "strings.")
        import kbert  # the floor above (kbert.pipelines), reached through the package root

        return kbert.export(self, filepath, format=format, **options)

    def set_preprocessor(self, preprocessor):
        """Gives the model its preprocessor (`kbert.tasks.preprocessor`): raw inputs in
        `fit`, `evaluate` and `predict` from then on, saved with the model."""
        length = self.backbone.config.max_sequence_length
        if getattr(preprocessor, "sequence_length", 0) > length:
            raise ValueError(f"The preprocessor's sequence_length "
                             f"({preprocessor.sequence_length}) is longer than the "
                             f"backbone's max_sequence_length ({length}).")
        self.preprocessor = preprocessor

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "preprocessor": (keras.saving.serialize_keras_object(self.preprocessor)
                             if self.preprocessor is not None else None),
            **{name: getattr(self, name) for name in self._task_settings},
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("backbone"), dict):
            config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        if isinstance(config.get("preprocessor"), dict):
            # The preprocessor's class is registered with Keras when its module is imported:
            # the task folder's, which its record (`TASK`) names.
            for klass in cls.__mro__:
                if issubclass(klass, Task) and klass.__module__.startswith("kbert.tasks."):
                    folder = importlib.import_module(klass.__module__.rpartition(".")[0])
                    if getattr(folder, "TASK", None) is not None and folder.TASK.preprocessed:
                        folder.TASK.module("preprocessor")
                        break
            config["preprocessor"] = keras.saving.deserialize_keras_object(
                config["preprocessor"])
        return cls(**config)
