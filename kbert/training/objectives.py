"""The pretraining objectives: one record each, with everything a run needs to know of it.

    mlm       masked LM alone (RoBERTa style)
    mlm_nsp   masked LM + next-sentence prediction (BERT)
    mlm_sop   masked LM + sentence-order prediction (ALBERT)
    rtd       replaced-token detection: ELECTRA's (a narrower generator on the shared
              embeddings) or DeBERTa-v3's (a shallower generator, gradient-disentangled
              embedding sharing)
    distill   a student learns the masked LM from a frozen teacher (DistilBERT's or TinyBERT's
              recipe)

A run reads the record instead of testing the family or the model's heads.
"""

import dataclasses
from typing import Callable, Optional

from kbert import models, presets
from kbert.loading.runs import RTD_FAMILIES, pretraining_model
from kbert.models.distillation.tiny_bert_distiller import TINY_BERT_FAMILIES
from kbert.training.config_fields import ConfigError


def _from_preset(head):
    def build(config, overrides, teacher=None):
        return pretraining_model(config, head, overrides)

    return build


def _masked_lm(config, overrides, teacher=None):
    """The family's masked-LM pretrainer; with `separate_documents` (ModernBERT's packed rows)
    one that takes the rows' `document_ids`."""
    model = pretraining_model(config, "mlm", overrides)
    if getattr(config, "separate_documents", False):
        model = type(model)(model.backbone, document_ids=True, name=model.name)
    return model


def _served(model):
    """What a masked-LM run exports: a pretrainer that took `document_ids` without them."""
    return model.without_document_ids() if getattr(model, "document_ids", False) else model


def _replaced_token_detection(config, overrides, teacher=None):
    """ELECTRA's pretrainer on an electra preset, DeBERTa-v3's (GDES) on a deberta_v3 one."""
    return pretraining_model(config, "rtd", overrides)


DISTILL_RECIPES = ("distil_bert", "tiny_bert")


def _distiller(config, overrides, teacher):
    print(f"Teacher: {teacher.description}.")
    student = _from_preset("mlm")(config, overrides)
    try:
        if config.distill_recipe == "tiny_bert":
            return models.TinyBertDistiller(
                student, teacher.build(config.dtype()), temperature=config.temperature,
                stage=config.tiny_bert_stage, teacher_layers=config.student_layers,
                name="distiller")
        return models.Distiller(
            student, teacher.build(config.dtype()), temperature=config.temperature,
            kl_weight=config.distill_kl_weight, mlm_weight=config.distill_mlm_weight,
            cosine_weight=config.distill_cosine_weight, name="distiller",
        )
    except ValueError as e:  # the teacher's family or sizes, known once it is built
        raise ConfigError(f"--distill_recipe={config.distill_recipe}, --teacher="
                          f"{config.teacher}: {e}") from None


def _check_generator(config):
    """ELECTRA's generator has a width and a depth flag; DeBERTa-v3's is as wide as its
    discriminator, so its width flag, set away from its default, is refused, not ignored."""
    from kbert.models.electra.electra_generator import generator_size

    fields = {f.name: f.default for f in dataclasses.fields(config)}
    width = "generator_hidden_fraction"
    if config.family == "deberta_v3" and getattr(config, width) != fields[width]:
        raise ConfigError(
            f"--{width}={getattr(config, width)!r} does not apply to --preset={config.preset} "
            f"({config.family}): its generator is as wide as its discriminator; "
            "--generator_layers_fraction sets its size.")
    try:
        generator_size(presets.config(config.preset), config.generator_hidden_fraction,
                       config.resolved_generator_layers_fraction)
    except ValueError as e:
        raise ConfigError(f"--{e}") from None


def _check_teacher(config):
    import tensorflow as tf

    teacher = config.teacher
    if teacher not in presets.list() and not (
            tf.io.gfile.exists(teacher) or tf.io.gfile.exists(teacher + ".index")):
        raise ConfigError(
            f"--teacher={teacher!r}: not a kbert run (model_dir with config.json and "
            f"checkpoints/), a preset ({', '.join(presets.list())}) or a checkpoint "
            "directory: it does not exist.")
    if config.temperature <= 0:
        raise ConfigError(f"--temperature must be > 0, got {config.temperature!r}.")
    if config.distill_recipe == "tiny_bert" and config.family not in TINY_BERT_FAMILIES:
        raise ConfigError(
            f"--distill_recipe=tiny_bert: --preset={config.preset} is {config.family}, whose "
            "blocks TinyBERT's attention and hidden-state losses cannot read; it distils the "
            f"{', '.join(TINY_BERT_FAMILIES)} families. Use --distill_recipe=distil_bert.")


def _initialize_student(model, config):
    """A new DistilBERT student starts from the teacher's embeddings, layers and MLM head;
    a TinyBERT student from random weights (its widths may differ from the teacher's)."""
    if not config.init_student or config.distill_recipe == "tiny_bert":
        return
    try:
        layers = models.initialize_student(model.student, model.teacher, config.student_layers)
    except ValueError as e:
        raise ConfigError(f"{e} Pass --noinit_student to start from random weights.") from None
    print(f"Initialized the student from the teacher's embeddings and layers {layers}.")


@dataclasses.dataclass(frozen=True)
class Objective:
    """What a pretraining objective trains, on which data, and what a run keeps of it.

    Attributes:
        name: the `--objective` value.
        help: what it is, for the flag's help and errors.
        sentence_task: the sentence pairs `kbert.data` builds: "none", "nsp" or "sop". Any
            but "none" needs a family with a sentence-level head.
        build: (config, architecture overrides, teacher or None) -> the Keras model, random.
        metrics: the log keys the run's final line reports.
        families: the model families it trains; None: any family (with the head it needs).
        needs_teacher: it trains against `--teacher`.
        check: (config) -> None, raising `ConfigError` for settings of its own that cannot
            run (before any work starts); None: nothing to check.
        initialize: (model, config) -> None, for a model that starts from something other
            than random weights on a fresh run; None: nothing to do.
        exported: what the SavedModel at the end is, for the run's last message.
        export: (trained model) -> the model the SavedModel holds; None: the model itself
            (a distillation's: the student).
    """

    name: str
    help: str
    sentence_task: str
    build: Callable
    metrics: tuple
    families: Optional[tuple] = None
    needs_teacher: bool = False
    check: Optional[Callable] = None
    initialize: Optional[Callable] = None
    exported: str = "the model"
    export: Optional[Callable] = None

    def model_to_export(self, model):
        """What the run's SavedModel holds: `export(model)` where the objective has one (the
        discriminator of replaced-token detection), a distillation's student, else the model
        it trained."""
        if self.export is not None:
            return self.export(model)
        return model.student if self.needs_teacher else model

    def encoder(self, model):
        """The backbone that fine-tuning starts from: the exported model's encoder."""
        exported = self.model_to_export(model)
        return getattr(exported, "backbone", exported)


_MLM = ("mlm_accuracy", "mlm_loss")
OBJECTIVES = {objective.name: objective for objective in (
    Objective("mlm", "masked LM alone", "none", _masked_lm, _MLM, export=_served),
    Objective("mlm_nsp", "masked LM + next-sentence prediction (BERT)", "nsp",
              _from_preset("pretrainer"), _MLM + ("nsp_accuracy", "nsp_loss")),
    Objective("mlm_sop", "masked LM + sentence-order prediction (ALBERT)", "sop",
              _from_preset("pretrainer"), _MLM + ("nsp_accuracy", "nsp_loss")),
    Objective("rtd", "replaced-token detection (ELECTRA; DeBERTa-v3 with GDES)", "none",
              _replaced_token_detection,
              ("mlm_accuracy", "rtd_accuracy", "mlm_loss", "rtd_loss"), families=RTD_FAMILIES,
              check=_check_generator, exported="the discriminator",
              export=lambda model: model.discriminator()),
    Objective("distill", "distillation from --teacher (--distill_recipe: DistilBERT's or "
              "TinyBERT's)", "none", _distiller,
              _MLM + ("kl_loss", "embedding_loss", "attention_loss", "hidden_loss",
                      "prediction_loss"), needs_teacher=True, check=_check_teacher,
              initialize=_initialize_student, exported="the student"),
)}
