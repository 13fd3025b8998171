"""Distillation beyond BERT: a RoBERTa, DeBERTa-v3 or MobileBERT student with a teacher of its
own family. DistilBERT's recipe (initialisation from the teacher's layers + KL, MLM, cosine)
takes every family; TinyBERT's takes the families of TransformerEncoder blocks and refuses
the others by name."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert import models, presets
from kbert.models import Distiller, TinyBertDistiller, initialize_student
from kbert.models.distillation.tiny_bert_distiller import TINY_BERT_FAMILIES
from tests.helpers import random_batch
from tests.models._family_checks import randomize

QUIET = dict(dropout=0.0, attention_dropout=0.0)
COMMON = dict(vocabulary_size=97, hidden_size=32, num_heads=4, max_sequence_length=24, **QUIET)
# One preset per family, at unit-test sizes.
SIZES = {
    "bert_tiny": dict(intermediate_size=64),
    "albert_base": dict(intermediate_size=64, embedding_size=16),
    "distil_bert_base": dict(intermediate_size=64),
    "electra_small": dict(intermediate_size=64, embedding_size=16),
    "roberta_base": dict(intermediate_size=64),
    "deberta_v3_xsmall": dict(intermediate_size=64, position_buckets=8),
    "mobile_bert": dict(intermediate_size=32, embedding_size=16, intra_bottleneck_size=16),
}
NEW_FAMILIES = ["roberta_base", "deberta_v3_xsmall", "mobile_bert", "electra_small"]


def masked_lm(preset, num_layers):
    return presets.load(preset, head="mlm", weights=None, num_layers=num_layers,
                        **COMMON, **SIZES[preset])


def features_of(model):
    features, labels = random_batch(seq=16)
    return {k: v for k, v in features.items() if k in (*model.backbone.input,
                                                          "mask_positions")}, labels


def numpy(x):
    return ops.convert_to_numpy(x)


def test_every_family_has_a_size_here():
    # ModernBERT has no preset yet (issue 31, item 3): add modern_bert_base here with it.
    assert {presets.get(p)["model"] for p in SIZES} == set(models.FAMILIES) - {"modern_bert"}


@pytest.mark.parametrize("preset", NEW_FAMILIES)
def test_a_student_with_every_teacher_layer_is_the_teacher(preset):
    """initialize_student copies everything the masked LM computes with: RoBERTa's offset
    position rows, DeBERTa-v3's relative-position table, MobileBERT's NoNorm embeddings and
    extra output columns. A student given all of the teacher's layers predicts as it does."""
    teacher = masked_lm(preset, 2)
    randomize(teacher)
    student = masked_lm(preset, 2)
    assert initialize_student(student, teacher) == [0, 1]
    features, _ = features_of(teacher)
    np.testing.assert_allclose(numpy(student(features)["mlm_logits"]),
                               numpy(teacher(features)["mlm_logits"]), atol=1e-5)


@pytest.mark.parametrize("preset", NEW_FAMILIES)
def test_distil_bert_recipe_trains_a_same_family_student(preset):
    """A 1-layer student, initialised from a 3-layer teacher of its family: one Distiller fit
    step gives finite losses and moves the student, never the teacher."""
    teacher = masked_lm(preset, 3)
    randomize(teacher)
    student = masked_lm(preset, 1)
    assert initialize_student(student, teacher) == [0]
    distiller = Distiller(student, teacher)
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)  # one step
    before = [numpy(w).copy() for w in teacher.weights]
    start = numpy(student.backbone.transformer_layers[0].weights[0]).copy()
    features, labels = features_of(teacher)
    logs = distiller.fit({k: v for k, v in features.items() if k in distiller.feature_names},
                         labels, batch_size=4, epochs=1, verbose=0).history
    for name in ("loss", "kl_loss", "mlm_loss", "cosine_loss"):
        assert np.isfinite(logs[name][-1]), logs
    for w, value in zip(teacher.weights, before):
        np.testing.assert_array_equal(numpy(w), value)
    assert not np.array_equal(numpy(student.backbone.transformer_layers[0].weights[0]), start)


def test_a_student_of_another_architecture_is_refused():
    with pytest.raises(ValueError, match=r"blocks DisentangledAttentionEncoder vs "
                                         r"TransformerEncoder \(a student starts from a "
                                         r"teacher of its own architecture\)"):
        initialize_student(masked_lm("deberta_v3_xsmall", 1), masked_lm("bert_tiny", 2))
    with pytest.raises(ValueError, match="position_offset 2 vs 0"):
        initialize_student(masked_lm("roberta_base", 1), masked_lm("bert_tiny", 2))


@pytest.mark.parametrize("preset", sorted(SIZES))
def test_tiny_bert_takes_exactly_its_families(preset):
    """TinyBertDistiller is built for a student and teacher of each family in
    TINY_BERT_FAMILIES, and refused at construction, naming them, for the others."""
    family = presets.get(preset)["model"]
    student, teacher = masked_lm(preset, 1), masked_lm(preset, 2)
    if family in TINY_BERT_FAMILIES:
        distiller = TinyBertDistiller(student, teacher)
        features, _ = features_of(teacher)
        outputs = distiller(features)
        assert len(outputs["scores"]) == 1 and len(outputs["teacher_hidden"]) == 1
    else:
        with pytest.raises(ValueError) as error:
            TinyBertDistiller(student, teacher)
        assert (f"the student is a {type(student.backbone).__name__}" in str(error.value)
                and "bert, albert, distil_bert, electra, roberta families" in str(error.value)
                and "DistilBERT's recipe" in str(error.value))


@pytest.mark.parametrize("preset", ["deberta_v3_xsmall", "mobile_bert"])
def test_the_tool_refuses_tiny_bert_for_the_other_families_before_any_work(tmp_path, preset):
    from kbert.training.config_fields import ConfigError
    from tests.tools.test_pretrain import parse_flags

    config = parse_flags([f"--model_dir={tmp_path}", f"--preset={preset}",
                          "--objective=distill", "--teacher=bert_tiny",
                          "--distill_recipe=tiny_bert"])
    with pytest.raises(ConfigError) as error:
        config.validate()
    family = presets.get(preset)["model"]
    assert (f"--distill_recipe=tiny_bert: --preset={preset} is {family}" in str(error.value)
            and "Use --distill_recipe=distil_bert." in str(error.value))
    parse_flags([f"--model_dir={tmp_path}", f"--preset={preset}", "--objective=distill",
                 "--teacher=bert_tiny"]).validate()  # DistilBERT's recipe: accepted
