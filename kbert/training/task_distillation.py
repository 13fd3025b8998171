"""Distilling a fine-tuned classifier into a smaller one on the task's data: Hinton et al.'s
knowledge distillation ("Distilling the Knowledge in a Neural Network", 2015) of a text
classifier's logits, as DistilBERT's and nn_pruning's task distillation trains a student
beside the teacher it came from.

`TaskDistiller(student, teacher)` is a `keras.Model` whose loss is

    alpha * CE(labels, student) + (1 - alpha) * T**2 * KL(softmax(teacher / T) ||
                                                          softmax(student / T))

on each batch, the teacher run in inference mode (no dropout) and never trained. `fit` takes
what the student's `fit` takes: raw texts and labels through the student's preprocessor in
batches grouped by length, or a `tf.data` dataset of `(inputs, labels)` batches. The student
is what is trained and kept (`distiller.student`); its weights change in place.

The use it is made for: recovering a pruned model (`kbert.training.pruning.prune`) from the
unpruned one, whose answers on the training data carry more than the labels do
(`tools/finetune.py --prune_distil`).
"""

import math
import numbers

import keras
from keras import ops

from kbert import _replicas
from kbert.tasks.text_classification.model import TextClassifier
from kbert.training import layer_wise


def _check_pair(student, teacher):
    for role, model in (("student", student), ("teacher", teacher)):
        if not isinstance(model, TextClassifier):
            raise ValueError(f"Task distillation takes two kbert TextClassifiers; the {role} "
                             f"is a {type(model).__name__}.")
        if model.problem_type != "single_label":
            raise ValueError(f"Task distillation matches the teacher's class distribution: "
                             f"the {role}'s problem_type is {model.problem_type!r}; allowed: "
                             f"'single_label'.")
    if student.num_classes != teacher.num_classes or \
            list(student.label_names or []) != list(teacher.label_names or []):
        raise ValueError(f"The student's classes ({student.num_classes}: "
                         f"{student.label_names}) are not the teacher's "
                         f"({teacher.num_classes}: {teacher.label_names}).")
    if student is teacher:
        raise ValueError("The student and the teacher are the same model.")
    inputs = [sorted(model.input) for model in (student, teacher)]
    sizes = [model.backbone.config.vocabulary_size for model in (student, teacher)]
    if inputs[0] != inputs[1] or sizes[0] != sizes[1]:
        raise ValueError(f"The teacher reads the student's token ids: the student takes "
                         f"{inputs[0]} over {sizes[0]} tokens, the teacher {inputs[1]} over "
                         f"{sizes[1]}.")
    teachers = {id(v) for v in teacher.variables}
    shared = [v.path for v in student.trainable_variables if id(v) in teachers]
    if shared:
        raise ValueError(f"The student trains variables of the teacher ({shared[0]}, ...), "
                         f"which stays frozen: give a teacher of its own weights.")


def _number(name, value, allowed, holds):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or not holds(value):
        raise ValueError(f"{name}={value!r}: {allowed}.")
    return float(value)


class TaskDistiller(keras.Model):
    """Trains `student` on the task's labels and on the frozen `teacher`'s answers (see the
    module). `temperature` > 0 (2 by default, DistilBERT's); `alpha` in [0, 1]: the weight
    of the labels' cross-entropy (0.5 by default; 0: the teacher alone). Compile it with an
    optimizer (`compile(optimizer=...)`; the loss is its own) and `fit` it. `fit` reports
    `loss` and `accuracy` (the student's, on the labels). The teacher reads the student's
    token ids (the same inputs and vocabulary size, checked); it is frozen while `fit` runs,
    its layers' and variables' `trainable` as they were after it."""

    def __init__(self, student, teacher, temperature=2.0, alpha=0.5, **kwargs):
        super().__init__(**kwargs)
        _check_pair(student, teacher)
        self.temperature = _number("temperature", temperature, "a positive finite number",
                                   lambda v: v > 0)
        self.alpha = _number("alpha", alpha, "the labels' share of the loss, in [0, 1]",
                             lambda v: 0 <= v <= 1)
        # Keras decides on loss scaling (mixed_float16) from the compiled model's own policy.
        self.dtype_policy = student.dtype_policy
        self.student, self.teacher = student, teacher
        self.backbone = student.backbone  # what layer-wise fine-tuning reads
        self.accuracy_metric = keras.metrics.SparseCategoricalAccuracy(name="accuracy")

    def call(self, inputs, training=None):
        student = self.student(inputs, training=training)
        teacher = self.teacher(inputs, training=False)
        return {"logits": student, "teacher_logits": ops.stop_gradient(teacher)}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        logits = ops.cast(y_pred["logits"], "float32")
        t = self.temperature
        student = ops.log_softmax(logits / t, axis=-1)
        teacher = ops.log_softmax(ops.cast(y_pred["teacher_logits"], "float32") / t, axis=-1)
        kl = ops.sum(ops.exp(teacher) * (teacher - student), axis=-1) * (t * t)  # [B]
        labels = ops.reshape(y, [-1])
        ce = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        per_example = self.alpha * ce + (1.0 - self.alpha) * kl
        weights = ops.ones_like(per_example) if sample_weight is None else \
            ops.reshape(sample_weight, [-1])
        # Each replica's share of the global weighted mean: Keras sums the replicas' gradients.
        loss = _replicas.weighted_share(per_example, weights, floor=1e-9)
        self.accuracy_metric.update_state(labels, logits, sample_weight)
        return _replicas.with_regularization(loss, self.losses)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None, **kwargs):
        """`keras.Model.fit`. Raw inputs and labels (`x`, `y`) are read as the student's `fit`
        reads them: through its preprocessor, shuffled, in batches grouped by length;
        `validation_data` as `(x, y)` of them. A dataset of `(inputs, labels)` batches or
        token-id features go to Keras as they are."""
        student = self.student
        if not student._takes_raw(x):
            with layer_wise.frozen(self.teacher):
                return super().fit(x, y, batch_size=batch_size, epochs=epochs,
                                   validation_data=validation_data, **kwargs)
        arguments = student.raw_fit_arguments(x, y, batch_size, epochs, validation_data, kwargs,
                                              "TaskDistiller.fit")
        with layer_wise.frozen(self.teacher):
            return super().fit(**arguments)
