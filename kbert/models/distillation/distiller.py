"""Knowledge distillation (Sanh et al. 2019): a student masked LM learns from a frozen teacher."""

import keras
import numpy as np
from keras import ops

from kbert.layers import _utils
from kbert.models.pretrainer import Pretrainer


def student_layers(teacher_layers, num_student_layers):
    """Which teacher layers initialise the student: spread evenly, first and last included.

    For 6 of 12 this is [0, 2, 4, 7, 9, 11], the layers DistilBERT took from BERT-Base.
    """
    if not 0 < num_student_layers <= teacher_layers:
        raise ValueError(f"A student of {num_student_layers} layers cannot take its layers "
                         f"from a teacher of {teacher_layers}.")
    return [int(i) for i in np.round(np.linspace(0, teacher_layers - 1, num_student_layers))]


def _copy(target, source, what):
    if len(target.weights) != len(source.weights):
        raise ValueError(f"{what}: the student has {len(target.weights)} weights, the "
                         f"teacher {len(source.weights)}.")
    for t, s in zip(target.weights, source.weights):
        if tuple(t.shape) != tuple(s.shape):
            raise ValueError(f"{what}: student {t.path} is {tuple(t.shape)}, teacher "
                             f"{s.path} is {tuple(s.shape)}.")
        # A copy: under JAX, assigning the variable itself would share one buffer between
        # student and teacher, which a jitted step cannot donate twice.
        t.assign(ops.convert_to_numpy(s))


def initialize_student(student, teacher, layers=None):
    """Copies a teacher's embeddings, chosen layers and masked-LM head into a student.

    As DistilBERT's initialisation: the token and position embeddings (and their LayerNorm
    and projection), the segment embeddings when both have them, DeBERTa-v3's relative-
    position table, the blocks of `layers`, the pooler when both have one, and the masked-LM
    head. Any family whose student and teacher share an architecture (BERT / DistilBERT,
    RoBERTa, DeBERTa-v3, MobileBERT, ELECTRA; ALBERT without shared blocks in the student).

    Args:
        student, teacher: pretrainers with a masked-LM head (or bare backbones) whose
            widths agree; the student has one block per layer.
        layers: teacher layer of each student layer; default `student_layers(...)`.

    Returns:
        the teacher layers used.
    """
    s_backbone = getattr(student, "backbone", student)
    t_backbone = getattr(teacher, "backbone", teacher)
    s_config, t_config = s_backbone.config, t_backbone.config
    fields = ("vocabulary_size", "hidden_size", "num_heads", "intermediate_size")
    wrong = [f"{f} {getattr(s_config, f)} vs {getattr(t_config, f)}" for f in fields
             if getattr(s_config, f) != getattr(t_config, f)]
    if (s_config.embedding_size or s_config.hidden_size) != (
            t_config.embedding_size or t_config.hidden_size):
        wrong.append(f"embedding_size {s_config.embedding_size} vs {t_config.embedding_size}")
    if s_config.max_sequence_length > t_config.max_sequence_length:
        wrong.append(f"max_sequence_length {s_config.max_sequence_length} vs "
                     f"{t_config.max_sequence_length}")
    if len(s_backbone.transformer_layers) != s_config.num_layers:
        wrong.append("the student shares blocks between layers (num_groups)")
    s_block, t_block = s_backbone.transformer_layers[0], t_backbone.transformer_layers[0]
    if type(s_block) is not type(t_block):
        wrong.append(f"blocks {type(s_block).__name__} vs {type(t_block).__name__} (a student "
                     "starts from a teacher of its own architecture)")
    if getattr(s_backbone, "position_offset", 0) != getattr(t_backbone, "position_offset", 0):
        wrong.append(f"position_offset {s_backbone.position_offset} vs "
                     f"{t_backbone.position_offset}")
    if wrong:
        raise ValueError("The student cannot start from the teacher's weights (student vs "
                         f"teacher): {'; '.join(wrong)}.")
    if layers is None:
        layers = student_layers(t_config.num_layers, s_config.num_layers)
    layers = check_teacher_layers(layers, s_config, t_config)

    s_emb, t_emb = s_backbone.embeddings, t_backbone.embeddings
    s_positions = getattr(s_emb, "position_embedding", None)
    if s_positions is not None:  # the student's first rows (RoBERTa's, after the same offset)
        s_positions.assign(
            ops.convert_to_numpy(t_emb.position_embedding)[: s_positions.shape[0]])
    # Whatever else both embeddings have: BERT's LayerNorm, MobileBERT's trigram projection
    # and NoNorm, ALBERT's and ELECTRA's projection, DistilBERT's missing segments.
    for name in ("token_embedding", "segment_embedding", "projection", "layer_norm", "norm"):
        s_layer, t_layer = getattr(s_emb, name, None), getattr(t_emb, name, None)
        if s_layer is not None and t_layer is not None:
            _copy(s_layer, t_layer, f"embedding {name}")
    s_relative = getattr(s_backbone, "relative_embedding", None)
    if s_relative is not None:  # DeBERTa-v3's relative-position table (shared by the layers)
        _copy(s_relative, t_backbone.relative_embedding, "relative embedding")
    t_blocks = t_backbone.transformer_layers
    for j, i in enumerate(layers):
        block = t_blocks[i * len(t_blocks) // t_config.num_layers]  # ALBERT teachers share
        _copy(s_backbone.transformer_layers[j], block, f"student layer {j} <- teacher {i}")
    if s_backbone.pooler is not None and t_backbone.pooler is not None:
        _copy(s_backbone.pooler, t_backbone.pooler, "pooler")
    s_head, t_head = getattr(student, "mlm_head", None), getattr(teacher, "mlm_head", None)
    if s_head is not None and t_head is not None:
        # Its transform, bias (and MobileBERT's extra output columns); the tied token table
        # is the embedding's, copied above.
        _copy(s_head, t_head, "masked-LM head")
    return layers


def check_teacher_layers(layers, s_config, t_config, name="layers"):
    """`layers` (the teacher layer of each student layer) as ints; a ValueError naming
    `name` unless there is one per student layer, each a teacher layer."""
    layers = [int(i) for i in layers]
    if len(layers) != s_config.num_layers or not all(0 <= i < t_config.num_layers
                                                     for i in layers):
        raise ValueError(f"{name}={layers}: need {s_config.num_layers} teacher layers, each in "
                         f"[0, {t_config.num_layers}).")
    return layers


def check_student_and_teacher(student, teacher):
    """Refuses a student or teacher that is not a pretrainer with a masked-LM head, or two
    that do not share a vocabulary size; returns their backbones' configs."""
    for role, model in (("student", student), ("teacher", teacher)):
        if getattr(model, "mlm_head", None) is None or not hasattr(model, "backbone"):
            raise ValueError(f"The {role} must be a pretrainer with a masked-LM head "
                             f"(e.g. head='mlm'); got {type(model).__name__}.")
    s_config, t_config = student.backbone.config, teacher.backbone.config
    if s_config.vocabulary_size != t_config.vocabulary_size:
        raise ValueError(f"The student's vocabulary_size {s_config.vocabulary_size} differs "
                         f"from the teacher's {t_config.vocabulary_size}.")
    return s_config, t_config


class Distillation(Pretrainer, keras.Model):
    """What DistilBERT's `Distiller` and `TinyBertDistiller` are: a `student` pretrainer
    trained to imitate a frozen `teacher`, both with a masked-LM head. The student's backbone
    is `backbone`, what is exported. Subclasses check their arguments, call
    `_keep_student_and_teacher` and compute their losses."""

    config_models = ("student", "teacher")

    def _keep_student_and_teacher(self, student, teacher):
        teacher.trainable = False
        self.student = student
        self.teacher = teacher
        self.backbone = student.backbone  # what is exported
        # The features it reads (a functional model's are `model.input`).
        self.feature_names = sorted({*student.backbone.input, *teacher.backbone.input,
                                     "mask_positions"})
        self._add_mlm_metrics()


@keras.saving.register_keras_serializable(package="kbert")
class Distiller(Distillation):
    """Trains `student` to imitate the frozen `teacher` at the masked positions (DistilBERT).

    Loss = `kl_weight * L_KL + mlm_weight * L_MLM + cosine_weight * L_cos`:

      - `L_KL`: KL(teacher || student) of the vocabulary distributions at temperature
        `temperature`, times `temperature**2` (Hinton et al. 2015), averaged over the masked
        positions (Hugging Face's distiller with `restrict_ce_to_mask`);
      - `L_MLM`: the student's masked-LM cross-entropy against the true tokens;
      - `L_cos`: 1 - cosine similarity of the student's and teacher's last hidden states,
        averaged over the non-padding tokens (needs equal hidden sizes).
    The defaults 5 / 2 / 1 and T = 2 are DistilBERT's training command. The teacher runs in
    inference mode (no dropout) and is never trained. `fit` reports `loss`, `kl_loss`,
    `mlm_loss`, `mlm_accuracy` (the student's) and `cosine_loss`.

    Args:
        student: a pretrainer with a masked-LM head (`BertPretrainer` without NSP,
            `DistilBertPretrainer`, ...): what is trained and exported.
        teacher: a pretrainer with a masked-LM head over the same vocabulary.
        temperature: softmax temperature of the KL term, > 0.
        kl_weight, mlm_weight, cosine_weight: the weights of the three losses, >= 0.

    Inputs: the union of both models' inputs (e.g. a BERT teacher's `segment_ids`) and
        `mask_positions`. Labels: `mask_ids` and optional `mask_weights`.
    """

    config_settings = ("temperature", "kl_weight", "mlm_weight", "cosine_weight")

    def __init__(self, student, teacher, temperature=2.0, kl_weight=5.0, mlm_weight=2.0,
                 cosine_weight=1.0, **kwargs):
        super().__init__(**kwargs)
        temperature = _utils.check_positive_float("temperature", temperature)
        kl_weight, mlm_weight, cosine_weight = (
            _utils.check_positive_float(name, value, allow_zero=True)
            for name, value in (("kl_weight", kl_weight), ("mlm_weight", mlm_weight),
                                ("cosine_weight", cosine_weight)))
        s_config, t_config = check_student_and_teacher(student, teacher)
        if cosine_weight and s_config.hidden_size != t_config.hidden_size:
            raise ValueError(
                f"The cosine loss compares hidden states: the student's hidden_size "
                f"{s_config.hidden_size} differs from the teacher's {t_config.hidden_size}. "
                "Use cosine_weight=0."
            )
        self._keep_student_and_teacher(student, teacher)
        self.temperature, self.kl_weight = temperature, kl_weight
        self.mlm_weight, self.cosine_weight = mlm_weight, cosine_weight
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")
        self.cosine_loss_tracker = keras.metrics.Mean(name="cosine_loss")

    @staticmethod
    def _run(model, inputs, training):
        features = model.backbone({k: inputs[k] for k in model.backbone.input},
                                  training=training)
        sequence = features["sequence_output"]  # [B, S, H]
        return sequence, model.mlm_head(sequence, inputs["mask_positions"])  # [B, P, V]

    def call(self, inputs, training=None):
        sequence, logits = self._run(self.student, inputs, training)
        t_sequence, t_logits = self._run(self.teacher, inputs, False)
        return {"mlm_logits": logits, "sequence_output": sequence,
                "teacher_logits": ops.stop_gradient(t_logits),
                "teacher_sequence_output": ops.stop_gradient(t_sequence)}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y = self._check_labels(y, ("mask_ids",))
        mlm_loss, weights = self.masked_lm_loss(y, y_pred["mlm_logits"])

        t = self.temperature
        student = ops.log_softmax(ops.cast(y_pred["mlm_logits"], "float32") / t, axis=-1)
        teacher = ops.log_softmax(ops.cast(y_pred["teacher_logits"], "float32") / t, axis=-1)
        kl = ops.sum(ops.exp(teacher) * (teacher - student), axis=-1)  # [B, P]
        kl_loss = self.weighted_mean(kl * (t * t), weights, self.kl_loss_tracker, floor=1e-5)

        if self.cosine_weight:
            s_hidden = ops.cast(y_pred["sequence_output"], "float32")
            t_hidden = ops.cast(y_pred["teacher_sequence_output"], "float32")
            cosine = ops.sum(s_hidden * t_hidden, axis=-1) / ops.maximum(
                ops.norm(s_hidden, axis=-1) * ops.norm(t_hidden, axis=-1), 1e-8)
            cosine_loss = self.weighted_mean(1.0 - cosine, x["padding_mask"],  # [B, S]
                                             self.cosine_loss_tracker)
        else:
            cosine_loss = ops.zeros(())
            self.cosine_loss_tracker.update_state(cosine_loss)
        loss = (self.kl_weight * kl_loss + self.mlm_weight * mlm_loss
                + self.cosine_weight * cosine_loss)
        return self.add_regularization(loss)
