"""Extractive summarization (BERTSum, Liu 2019) on any kbert backbone: a score per sentence,
read at the sentence's own [CLS]."""

import keras
from keras import ops

from kbert.tasks import task as task_lib

# What of a document longer than the sequence is scored (`windows`; features.py cuts them).
WINDOWS = ("first", "all")
# What the segment ids alternate by (`segments`; features.py lays them out).
SEGMENTS = ("sentence", "paragraph")


def check_windows(windows):
    """`windows`, checked against `WINDOWS`."""
    if windows not in WINDOWS:
        raise ValueError(f"windows must be one of {WINDOWS} (the document's windows a "
                         f"summarizer scores), got {windows!r}.")
    return windows


def check_segments(segments):
    """`segments`, checked against `SEGMENTS`."""
    if segments not in SEGMENTS:
        raise ValueError(f"segments must be one of {SEGMENTS} (what a summarizer's segment "
                         f"ids alternate by), got {segments!r}.")
    return segments


@keras.saving.register_keras_serializable(package="kbert")
class SentenceCrossentropy(keras.losses.Loss):
    """Sigmoid cross-entropy at every position of logits [B, S], weighted by the sample
    weights (1 at each sentence's [CLS], 0 elsewhere) and averaged over their sum."""

    def __init__(self, name="sentence_crossentropy", reduction="mean_with_sample_weight",
                 dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        return ops.binary_crossentropy(ops.cast(y_true, y_pred.dtype), y_pred,
                                       from_logits=True)


@keras.saving.register_keras_serializable(package="kbert")
class SentenceAccuracy(keras.metrics.BinaryAccuracy):
    """Binary accuracy of logits (threshold 0) against the targets taken as 0/1 at 0.5: the
    oracle's labels as they are; soft ROUGE targets (`labels="rouge"` of
    `features.encode_summaries`) as "at least half the document's best", which a target
    strictly between 0 and 1 could otherwise never equal."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype, threshold=0.0)

    def update_state(self, y_true, y_pred, sample_weight=None):
        return super().update_state(ops.cast(ops.greater_equal(y_true, 0.5), "float32"),
                                    y_pred, sample_weight=sample_weight)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


@keras.saving.register_keras_serializable(package="kbert")
class ExtractiveSummarizer(task_lib.Task, keras.Model):
    """BERTSum's sentence scorer: the document is packed as `[CLS] s1 [SEP] [CLS] s2 [SEP]
    ...` with segment ids alternating by sentence (0, 1, 0, ...: BERTSum's interval
    segments) or by paragraph (`segments`; all 0 for RoBERTa, which has one segment type,
    and absent for DistilBERT, which has none), and each sentence is scored by `scorer`, a
    dense(1) on the sequence output at its [CLS], sigmoid -> the probability that it belongs
    to the summary (BERTSum's "simple classifier").

    The layer is position-wise, so the model scores every position, [B, S]; only the
    sentences' [CLS] positions are read (`kbert.tasks.extractive_summarization.features`
    packs documents and knows them), and training weighs those alone: pass label weights (1
    at each real sentence's [CLS], 0 at other tokens, padding and padding sentences) as
    Keras sample weights, `fit(features, labels, sample_weight=label_weights)` or a dataset
    of `(features, labels, label_weights)`; fitting without them is refused.

    Args:
        backbone: a kbert backbone of any family.
        dropout: the rate before `scorer`; `None`: the backbone's dropout.
        windows: what of a document longer than the sequence is scored
            (`kbert.tasks.extractive_summarization.features`): "first" (the default,
            BERTSum's: the document cut after the sentences that fit; every position id is
            the token's place in the document) or "all" (windows of whole sentences, each
            a row whose positions start again at 0: every sentence can be chosen). Saved
            with the model; training rows, the pipeline and the SavedModel follow it.
        segments: what the segment ids alternate by: "sentence" (the default, BERTSum's
            interval segments) or "paragraph" (every sentence of a paragraph takes its
            paragraph's id, so the model sees where paragraphs end, as in a paper's
            abstract before its introduction; blank lines end paragraphs). Saved with the
            model and followed as `windows` is.

    Inputs (a dict): the backbone's inputs, int [B, S].
    Labels: float [B, S] (1 at the [CLS] of a sentence of the oracle summary).
    Outputs: logits [B, S] (no sigmoid).

    `compile()` defaults: BERT's fine-tuning AdamW (2e-5), sigmoid cross-entropy averaged
    over the weighted positions (`reduction="mean_with_sample_weight"`), and the weighted
    sentence `accuracy` (at logit 0).
    """

    def __init__(self, backbone, dropout=None, windows="first", segments="sentence",
                 preprocessor=None, **kwargs):
        if preprocessor is not None:
            raise ValueError("An ExtractiveSummarizer reads documents split into sentences "
                             "(kbert.tasks.extractive_summarization.features, or "
                             "kbert.pipeline('summarization')): it takes no preprocessor.")
        dropout = task_lib.head_dropout(backbone, "extractive_summarizer", dropout)
        check_windows(windows)
        check_segments(segments)

        # === Layers ===
        dropout_layer = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy,
                                             name="dropout")
        scorer = task_lib.dense_layer(backbone, 1, "scorer")

        # === Functional model ===
        inputs = task_lib.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]  # [B, S, H]
        logits = ops.squeeze(scorer(dropout_layer(sequence)), -1)  # [B, S]
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self._init_task(backbone, dropout=dropout, windows=windows, segments=segments)
        self.scorer = scorer

    @classmethod
    def from_config(cls, config):
        # A summarizer saved before `windows` existed scored every window, and one saved
        # before `segments` existed alternated them by sentence: it reloads so.
        return super().from_config({"windows": "all", "segments": "sentence", **config})

    def head_layers(self):
        return {"scorer": self.scorer}

    def default_loss(self):
        return SentenceCrossentropy(), None

    def default_metrics(self):
        return None, [SentenceAccuracy()]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if y is not None and sample_weight is None:
            raise ValueError(
                "An ExtractiveSummarizer trains on its sentences' [CLS] positions alone: pass "
                "the label weights as sample weights (fit(features, labels, "
                "sample_weight=label_weights), or a dataset of (features, labels, "
                "label_weights): kbert.tasks.extractive_summarization.features).")
        return super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                    training=training)
