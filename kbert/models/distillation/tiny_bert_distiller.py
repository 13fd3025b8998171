"""TinyBERT distillation (Jiao et al. 2020): a student imitates a frozen teacher layer by layer."""

import keras
from keras import ops

from kbert.layers import TransformerEncoder, _utils
from kbert.models.distillation.distiller import (
    Distillation, check_student_and_teacher, check_teacher_layers,
)

STAGES = ("intermediate", "prediction", "both")
# The model families whose blocks are `TransformerEncoder`s, whose attention scores and hidden
# states TinyBERT's losses compare. DeBERTa-v3 (disentangled attention over relative
# positions) and MobileBERT (bottlenecked blocks) distil with DistilBERT's recipe instead.
TINY_BERT_FAMILIES = ("bert", "albert", "distil_bert", "electra", "roberta")


def check_tiny_bert_backbone(backbone, role="student"):
    """Refuses a backbone whose blocks TinyBERT cannot read, naming the families it takes."""
    blocks = getattr(backbone, "transformer_layers", None)
    if not blocks or not all(type(b) is TransformerEncoder for b in blocks):
        kind = type(blocks[0]).__name__ if blocks else "no"
        raise ValueError(
            f"TinyBERT's recipe compares the attention scores and hidden states of "
            f"TransformerEncoder blocks; the {role} is a {type(backbone).__name__} with {kind} "
            f"blocks. It distils the {', '.join(TINY_BERT_FAMILIES)} families; use "
            "DistilBERT's recipe (Distiller) for the others.")


def tiny_bert_layers(teacher_layers, num_student_layers):
    """TinyBERT's uniform mapping: student layer i learns from teacher layer (i+1)*T/S - 1.

    For 4 of 12 this is [2, 5, 8, 11]: every third layer, the last one included.
    """
    if not 0 < num_student_layers <= teacher_layers:
        raise ValueError(f"A student of {num_student_layers} layers cannot learn from a teacher "
                         f"of {teacher_layers}.")
    return [(i + 1) * teacher_layers // num_student_layers - 1
            for i in range(num_student_layers)]


def backbone_states(backbone, inputs, training=None):
    """The embedding output, every block's output and attention scores of a BERT-style backbone.

    Runs the backbone's own layers as its functional graph does, so the last hidden state is
    its `sequence_output`. Returns (embeddings [B, S, H], [hidden [B, S, H]] * L,
    [scores [B, N, S, S]] * L), the scores before the softmax with padded keys at -1e9.
    """
    check_tiny_bert_backbone(backbone, "model")
    blocks = backbone.transformer_layers
    mask = inputs["padding_mask"]
    positions = {"padding_mask": mask} if backbone.position_offset else {}
    segments = inputs.get("segment_ids") if "segment_ids" in backbone.input else None
    x = backbone.embeddings(inputs["token_ids"], segments, training=training, **positions)
    embeddings, hidden, scores = x, [], []
    layers = backbone.config.num_layers
    for i in range(layers):
        x, s = blocks[i * len(blocks) // layers](x, padding_mask=mask, training=training,
                                                 return_attention_scores=True)
        hidden.append(x)
        scores.append(s)
    return embeddings, hidden, scores


@keras.saving.register_keras_serializable(package="kbert")
class TinyBertDistiller(Distillation):
    """Trains `student` to imitate the frozen `teacher` as TinyBERT's general distillation.

    Student layer i learns from teacher layer `tiny_bert_layers(T, S)[i]`; the student's
    embeddings from the teacher's. Where the widths differ, a learned linear map W (one for
    the embeddings, one per student layer; trained with the student, not exported) takes the
    student's states to the teacher's width. The loss is the sum of:

      - intermediate (`stage` "intermediate" or "both"): MSE(embeddings W_e, teacher
        embeddings) + sum over layers of MSE(attention scores) + MSE(hidden W_i, teacher
        hidden), the scores before the softmax with padded keys set to 0 (as TinyBERT's code),
        each averaged over the non-padding tokens;
      - prediction (`stage` "prediction" or "both"): the soft cross-entropy
        -sum softmax(t / T) log softmax(s / T) of the masked-LM logits at temperature T,
        averaged over the masked positions.
    TinyBERT runs the stages one after the other (intermediate, then prediction); "both" sums
    them. `fit` reports `loss`, `embedding_loss`, `attention_loss`, `hidden_loss`,
    `prediction_loss` (each 0 when its stage is off) and the student's `mlm_loss` and
    `mlm_accuracy` (not trained: TinyBERT has no hard-label term).

    Args:
        student, teacher: pretrainers with a masked-LM head on backbones of
            `TransformerEncoder` blocks (`TINY_BERT_FAMILIES`) over one vocabulary, with the
            same number of attention heads.
        temperature: softmax temperature of the prediction loss, > 0 (TinyBERT: 1).
        stage: "intermediate", "prediction" or "both".
        teacher_layers: teacher layer of each student layer; default `tiny_bert_layers(...)`.
    """

    config_settings = ("temperature", "stage", "teacher_layers")

    def __init__(self, student, teacher, temperature=1.0, stage="both", teacher_layers=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.temperature = _utils.check_positive_float("temperature", temperature)
        if stage not in STAGES:
            raise ValueError(f"stage={stage!r}: one of {', '.join(STAGES)}.")
        s_config, t_config = check_student_and_teacher(student, teacher)
        for role, model in (("student", student), ("teacher", teacher)):
            check_tiny_bert_backbone(model.backbone, role)
        if stage != "prediction" and (s_config.num_heads != t_config.num_heads or any(
                c.layer_heads is not None for c in (s_config, t_config))):
            raise ValueError(f"The attention loss compares heads one to one, the same in every "
                             f"layer: the student has "
                             f"{s_config.layer_heads or s_config.num_heads}, the teacher "
                             f"{t_config.layer_heads or t_config.num_heads}.")
        layers = teacher_layers
        if layers is None:
            layers = tiny_bert_layers(t_config.num_layers, s_config.num_layers)
        layers = check_teacher_layers(layers, s_config, t_config, "teacher_layers")
        self._keep_student_and_teacher(student, teacher)
        self.stage = stage
        self.teacher_layers = layers
        # === Layers ===   student width -> teacher width, where they differ
        self.projections = None
        if s_config.hidden_size != t_config.hidden_size:
            self.projections = [
                keras.layers.Dense(t_config.hidden_size, dtype=student.dtype_policy,
                                   kernel_initializer=_utils.truncated_normal(
                                       s_config.initializer_range),
                                   name=f"projection_{name}")
                for name in ["embeddings", *(f"layer_{i}" for i in range(len(layers)))]]
            for p in self.projections:
                p.build((None, None, s_config.hidden_size))
        self.trackers = {name: keras.metrics.Mean(name=name) for name in (
            "embedding_loss", "attention_loss", "hidden_loss", "prediction_loss")}

    @staticmethod
    def _run(model, inputs, training):
        embeddings, hidden, scores = backbone_states(model.backbone, inputs, training)
        logits = model.mlm_head(hidden[-1], inputs["mask_positions"])  # [B, P, V]
        return embeddings, hidden, scores, logits

    def call(self, inputs, training=None):
        embeddings, hidden, scores, logits = self._run(self.student, inputs, training)
        if self.projections is not None:
            embeddings = self.projections[0](embeddings)
            hidden = [p(h) for p, h in zip(self.projections[1:], hidden)]
        t_embeddings, t_hidden, t_scores, t_logits = self._run(self.teacher, inputs, False)
        return {
            "mlm_logits": logits, "embeddings": embeddings, "hidden": hidden,
            "scores": scores,
            "teacher_logits": ops.stop_gradient(t_logits),
            "teacher_embeddings": ops.stop_gradient(t_embeddings),
            "teacher_hidden": [ops.stop_gradient(t_hidden[i]) for i in self.teacher_layers],
            "teacher_scores": [ops.stop_gradient(t_scores[i]) for i in self.teacher_layers],
        }

    def _mse(self, student, teacher, mask):
        """Squared error averaged over the last axis, then over the non-padding tokens."""
        error = ops.square(ops.cast(student, "float32") - ops.cast(teacher, "float32"))
        return ops.sum(ops.mean(error, axis=-1) * mask) / ops.maximum(ops.sum(mask), 1.0)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y = self._check_labels(y, ("mask_ids",))
        mlm_loss, weights = self.masked_lm_loss(y, y_pred["mlm_logits"])
        mask = ops.cast(x["padding_mask"], "float32")  # [B, S]
        zero = ops.zeros(())
        losses = dict.fromkeys(self.trackers, zero)
        if self.stage != "prediction":
            losses["embedding_loss"] = self._mse(y_pred["embeddings"],
                                                 y_pred["teacher_embeddings"], mask)
            # Padded keys hold -1e9 in both: TinyBERT compares them as 0.
            keys = mask[:, None, None, :]  # [B, 1, 1, S]
            losses["attention_loss"] = sum(
                self._mse(ops.transpose(s * keys, (0, 2, 1, 3)),  # [B, S, N, S]
                          ops.transpose(t * keys, (0, 2, 1, 3)), mask[:, :, None])
                / s.shape[1]  # mean over heads
                for s, t in zip(y_pred["scores"], y_pred["teacher_scores"]))
            losses["hidden_loss"] = sum(
                self._mse(s, t, mask) for s, t in zip(y_pred["hidden"], y_pred["teacher_hidden"]))
        if self.stage != "intermediate":
            t = self.temperature
            student = ops.log_softmax(ops.cast(y_pred["mlm_logits"], "float32") / t, axis=-1)
            teacher = ops.softmax(ops.cast(y_pred["teacher_logits"], "float32") / t, axis=-1)
            cross_entropy = -ops.sum(teacher * student, axis=-1)  # [B, P]
            losses["prediction_loss"] = self.weighted_mean(
                cross_entropy, weights, self.trackers["prediction_loss"], floor=1e-5)
        for name, value in losses.items():
            if name != "prediction_loss" or self.stage == "intermediate":
                self.trackers[name].update_state(value)
        return self.add_regularization(sum(losses.values()))
