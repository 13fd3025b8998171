"""Sentence and sentence-pair classification and regression (GLUE) on any kbert backbone."""

import keras

from kbert import models
from kbert.layers import _utils
from kbert.tasks import task as task_lib
from kbert.tasks._heads import ClassificationHead, TokenPooling

PROBLEM_TYPES = ("single_label", "multi_label", "regression")
HEADS = ("auto", "pooled", "cls", "mean")
# The head of transformers' *ForSequenceClassification is each family's record's
# (`kbert.models.Family.classifier_head`): BERT, ALBERT and MobileBERT read the pooler
# (MobileBERT's is the first token as it is, without classifier_activation), DistilBERT,
# ELECTRA and RoBERTa (no trained pooler) the [CLS] (<s>) hidden state; DeBERTa-v3's
# ContextPooler (dense + GELU on [CLS]) and classifier compute ELECTRA's head.


def inferred_problem_type(num_classes):
    """The problem type transformers infers where a checkpoint declares none (and no labels
    tell): one output is a regression, more a single-label classification."""
    return "regression" if num_classes == 1 else "single_label"


def family_head(family):
    """The `head` that head="auto" gives a backbone of `family` (a `kbert.models.FAMILIES`
    key): the layout of transformers' `*ForSequenceClassification` of that family."""
    return models.FAMILIES[family].classifier_head


def family_heads(family):
    """The `head`s that have the layout of transformers' `*ForSequenceClassification` of
    `family`: ModernBERT's "cls" and "mean", one for any other family (`family_head`)."""
    return models.FAMILIES[family].classifier_heads or (family_head(family),)


class HeadParts:
    """A `TextClassifier`'s head as a function of the backbone's outputs: the graph's, and
    the early-exit forward's on the rows still running (`early_exit`). Holds the head's
    layers (`None` where the head has no such part)."""

    def __init__(self, head, pooling, prediction_head, cls_token, pre_classifier, dropout,
                 classifier):
        self.head, self.pooling, self.prediction_head = head, pooling, prediction_head
        self.cls_token, self.pre_classifier = cls_token, pre_classifier
        self.dropout, self.classifier = dropout, classifier

    def __call__(self, features, padding_mask):
        """The backbone's outputs dict and padding mask [B, S] -> logits [B, N]."""
        if self.head == "pooled":
            return self.classifier(self.dropout(features["pooled_output"]))
        if self.pooling is not None:
            x = self.pooling(features["sequence_output"], padding_mask)  # [B, H]
            return self.classifier(self.dropout(self.prediction_head(x)))
        if self.cls_token is not None:
            x = self.pre_classifier(self.cls_token(features["sequence_output"]))  # [B, H]
            return self.classifier(self.dropout(x))
        return self.classifier(features["sequence_output"])


@keras.saving.register_keras_serializable(package="kbert")
class TextClassifier(task_lib.Task, keras.Model):
    """A classification or regression head on a kbert backbone, for single texts and pairs
    (a pair is one input with `segment_ids` 0 and 1; DistilBERT has no segments).

    The head is the one of transformers' `*ForSequenceClassification` of the family, layer
    for layer, so that fine-tuned weights can be imported:

    - "pooled" (BERT, ALBERT, MobileBERT): pooled output -> `dropout` -> `classifier`
      dense(N).
    - "cls" on DistilBERT: [CLS] hidden -> `pre_classifier` dense(H, ReLU) -> `dropout` ->
      `classifier` dense(N).
    - "cls" on any other family (ELECTRA's, RoBERTa's): `classifier`, a `ClassificationHead`
      ([CLS] hidden -> dropout -> dense(H) -> GELU (RoBERTa: tanh) -> dropout -> `out_proj`
      dense(N)).
    - "cls" or "mean" on ModernBERT (its `classifier_pooling`): the first token's hidden
      state or the mean over the real tokens (`pooling`) -> `prediction_head` (dense(H) ->
      activation -> LayerNorm, `kbert.models.ModernBertPredictionHead`) -> `dropout` ->
      `classifier` dense(N).

    Args:
        backbone: a kbert backbone (BERT, ALBERT, DistilBERT, ELECTRA, RoBERTa).
        num_classes: number of outputs; `None` means `len(label_names)`, or 1 for
            "regression" (which needs 1).
        problem_type: "single_label" (softmax over the classes; labels int [B]),
            "multi_label" (a sigmoid per class; labels multi-hot [B, N]) or "regression"
            (one value, e.g. STS-B; labels float [B]).
        head: "auto" (the family's, above; ModernBERT: its config's `classifier_pooling`),
            "pooled", "cls" or "mean" (ModernBERT only).
        dropout: the head's dropout rate; `None`: transformers' default for the family
            (the backbone's dropout; ALBERT 0.1, DistilBERT 0.2).
        label_names: a name per class (strings), kept in the config for exports; or `None`.
        problem_type_declared: whether the problem type is stated, as transformers'
            config.json `problem_type` states it. False is a fine-tuned checkpoint without one
            (cross-encoders, most classifiers transformers saves): `problem_type` is then what
            transformers infers from the outputs ("regression" for one, else "single_label")
            and sets the loss as usual, but `kbert.pipeline` scores as transformers' pipeline
            scores an unstated type (one output: a sigmoid, not the raw value) and
            `kbert.convert.save_hugging_face` writes no `problem_type`.

    Inputs (a dict): the backbone's `token_ids`, `segment_ids` (not DistilBERT),
        `padding_mask`, int [B, S].
    Outputs: logits [B, N] (regression: the value [B, 1]); no softmax / sigmoid.

    `compile()` defaults: BERT's fine-tuning AdamW (2e-5) and, by problem type, sparse
    softmax cross-entropy + accuracy, sigmoid cross-entropy + binary accuracy (at logit 0),
    or mean squared error + mean absolute error.

    Example:
        ```python
        backbone = kbert.presets.load("bert_tiny", head=None)
        classifier = TextClassifier(backbone, num_classes=3, label_names=["neg", "neu", "pos"])
        classifier.compile()
        # classifier.fit(features, labels, epochs=3): see docs/fine-tuning.md
        ```
    """

    def __init__(self, backbone, num_classes=None, problem_type="single_label", head="auto",
                 dropout=None, label_names=None, problem_type_declared=True, preprocessor=None,
                 **kwargs):
        family = task_lib.family_of(backbone)
        if problem_type not in PROBLEM_TYPES:
            raise ValueError(f"Unknown problem_type {problem_type!r}. Allowed: "
                             f"{', '.join(PROBLEM_TYPES)}.")
        if num_classes is None:
            num_classes = 1 if problem_type == "regression" else (
                len(label_names) if label_names is not None else None)
        if num_classes is None:
            raise ValueError("Give `num_classes` (or `label_names`).")
        num_classes = _utils.check_positive_int("num_classes", num_classes)
        if problem_type == "regression" and num_classes != 1:
            raise ValueError(f"problem_type='regression' has one output; got "
                             f"num_classes={num_classes}.")
        label_names = task_lib.check_label_names(label_names, num_classes)
        inferred = inferred_problem_type(num_classes)
        if not problem_type_declared and problem_type != inferred:
            raise ValueError(
                f"problem_type_declared=False with {num_classes} output(s) is "
                f"problem_type={inferred!r}, as transformers infers it; got {problem_type!r}, "
                "which needs problem_type_declared=True.")
        if head not in HEADS:
            raise ValueError(f"Unknown head {head!r}. Allowed: {', '.join(HEADS)}.")
        prediction_head = task_lib.prediction_head(backbone)
        if head == "auto":
            head = getattr(backbone.config, "classifier_pooling", None) or family_head(family)
        if head == "mean" and prediction_head is None:
            raise ValueError(f"head='mean' is ModernBERT's mean pooling; a {family} "
                             f"TextClassifier has head 'auto', 'pooled' or 'cls'.")
        if head == "pooled" and not backbone.has_pooler:
            raise ValueError(f"{type(backbone).__name__} has no pooler: use head='cls'.")
        dropout = task_lib.head_dropout(backbone, "classifier", dropout)
        config = backbone.config
        policy = backbone.dtype_policy
        # One initializer shared by the head's dense layers: a seeded run draws what it drew.
        initializer = _utils.truncated_normal(config.initializer_range)

        # === Layers ===
        pre_classifier = dropout_layer = cls_token = pooling = None
        if prediction_head is not None and head != "pooled":
            pooling = TokenPooling(head, dtype=policy, name="pooling")
            dropout_layer = keras.layers.Dropout(dropout, dtype=policy, name="dropout")
            classifier = task_lib.dense_layer(backbone, num_classes, "classifier",
                                              initializer=initializer)
        elif head == "cls" and family != "distil_bert":
            classifier = ClassificationHead(
                num_classes, dropout=dropout, activation=models.FAMILIES[family].cls_activation,
                initializer_range=config.initializer_range, dtype=policy, name="classifier",
            )
        else:
            if head == "cls":
                cls_token = TokenPooling("cls", dtype=policy, name="cls_token")
                pre_classifier = task_lib.dense_layer(
                    backbone, config.hidden_size, "pre_classifier", activation="relu",
                    initializer=initializer)
            dropout_layer = keras.layers.Dropout(dropout, dtype=policy, name="dropout")
            classifier = task_lib.dense_layer(backbone, num_classes, "classifier",
                                              initializer=initializer)

        # === Functional model ===
        inputs = task_lib.backbone_inputs(backbone)
        head_parts = HeadParts(head, pooling, prediction_head, cls_token, pre_classifier,
                               dropout_layer, classifier)
        logits = head_parts(backbone(inputs), inputs["padding_mask"])  # [B, N]
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self._init_task(backbone, preprocessor, num_classes=num_classes,
                        problem_type=problem_type, head=head, dropout=dropout,
                        label_names=label_names,
                        problem_type_declared=bool(problem_type_declared))
        self.pre_classifier = pre_classifier
        self.prediction_head = prediction_head if pooling is not None else None
        self.classifier = classifier
        self.head_parts = head_parts

    @property
    def declared_problem_type(self):
        """`problem_type` where it is stated, else `None` (see `problem_type_declared`)."""
        return self.problem_type if self.problem_type_declared else None

    def head_layers(self):
        """DistilBERT's `pre_classifier` where it has one; ELECTRA's head as `classifier.dense`
        and `classifier.out_proj`."""
        layers = {} if self.pre_classifier is None else {"pre_classifier": self.pre_classifier}
        if isinstance(self.classifier, ClassificationHead):
            return {**layers, "classifier.dense": self.classifier.dense,
                    "classifier.out_proj": self.classifier.out_proj}
        return {**layers, "classifier": self.classifier}

    def default_loss(self):
        if self.problem_type == "single_label":
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True), None
        if self.problem_type == "multi_label":
            return keras.losses.BinaryCrossentropy(from_logits=True), None
        return keras.losses.MeanSquaredError(), None

    def default_metrics(self):
        if self.problem_type == "single_label":
            return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")], None
        if self.problem_type == "multi_label":
            return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)], None
        return [keras.metrics.MeanAbsoluteError(name="mean_absolute_error")], None
