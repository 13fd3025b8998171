"""`kbert.load`: every kind of spec (a preset name, a pretraining run, a fine-tuning run, a
Hugging Face and a kbert checkpoint directory, a SavedModel checked before it loads) gives the
model asked for and its tokenizer; anything else is an error naming what was tried."""

import dataclasses
import json
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert import convert, loading, models, presets, tasks
from kbert.loading import runs
from kbert.untrusted import UnsafeSavedModelError
from tests.training.test_distillation import (
    SMALL, VOCABULARY, assert_same_outputs, make_run, outputs,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DISTIL_BERT = FIXTURES / "hf_tiny" / "distil_bert"
CLASSIFIER = FIXTURES / "hf_tasks" / "bert_seq_single"


def test_kbert_load_is_the_function_whatever_was_imported_first():
    import kbert.loading  # noqa: F401 - importing the module must not shadow the function

    assert kbert.load is loading.load
    assert callable(kbert.load) and "load" in dir(kbert)


# === preset names ===

@pytest.fixture
def release(monkeypatch):
    """distil_bert_base's release, replaced by the tiny DistilBERT fixture (no download)."""
    from kbert.convert import download

    fetched = []

    def pretrained(name, source, cache=None, sha256=None):
        fetched.append(name)
        return convert.read(DISTIL_BERT)

    monkeypatch.setattr(download, "pretrained", pretrained)
    return fetched


def test_a_preset_name(release):
    loaded = kbert.load("distil_bert_base", head="mlm")
    assert loaded.kind == "preset" and loaded.description == "preset distil_bert_base"
    vocabulary = (DISTIL_BERT / "vocab.txt").read_text(encoding="utf-8").split()
    assert loaded.tokenizer.vocabulary == vocabulary
    assert_same_outputs(outputs(loaded.model, len(vocabulary)),
                        outputs(convert.load(DISTIL_BERT, head="mlm"), len(vocabulary)))
    assert release == ["distil_bert_base"]  # the model and its tokenizer from one read
    assert loaded.max_sequence_length == convert.read(DISTIL_BERT).config.max_sequence_length
    # kbert.presets.load gives the same model.
    assert_same_outputs(outputs(presets.load("distil_bert_base", head="mlm"), len(vocabulary)),
                        outputs(loaded.model, len(vocabulary)))
    fill = kbert.load("distil_bert_base", task="fill-mask").model
    assert tasks.registry.MASKED_LM.holds(fill)
    with pytest.raises(ValueError, match="A new text_classifier head needs its classes"):
        kbert.load("distil_bert_base", task="text-classification")


def test_a_preset_with_random_weights_has_no_tokenizer():
    loaded = kbert.load("bert_tiny", head=None, weights=None, max_sequence_length=32)
    assert isinstance(loaded.model, models.BertBackbone) and loaded.tokenizer is None
    assert loaded.max_sequence_length == 32
    with pytest.raises(ValueError, match="Unknown head 'nsp'. Allowed: 'auto', 'pretrainer'"):
        kbert.load("bert_tiny", head="nsp", weights=None)


# === run directories ===

def test_a_pretraining_run(tmp_path):
    trained = make_run(tmp_path / "run")
    loaded = kbert.load(tmp_path / "run")
    assert loaded.kind == "pretraining_run" and "ckpt-10" in loaded.description
    assert loaded.tokenizer.vocabulary == VOCABULARY and loaded.tokenizer.lowercase is False
    assert type(loaded.model) is type(trained)
    assert_same_outputs(outputs(loaded.model, len(VOCABULARY)),
                        outputs(trained, len(VOCABULARY)))
    encoder = kbert.load(tmp_path / "run", head=None).model
    assert isinstance(encoder, models.BertBackbone)
    assert loaded.max_sequence_length == SMALL["max_sequence_length"]
    with pytest.raises(ValueError, match="trained --objective=mlm, a mlm model: "
                                         "head='pretrainer' is not in it"):
        kbert.load(tmp_path / "run", head="pretrainer")
    with pytest.raises(ValueError, match="takes no overrides"):
        kbert.load(tmp_path / "run", dropout=0.0)


def test_a_pretraining_run_without_a_checkpoint(tmp_path):
    make_run(tmp_path / "run", checkpoint=False)
    with pytest.raises(runs.RunError, match="has no checkpoint in"):
        kbert.load(tmp_path / "run")


def test_a_finetuning_run(tmp_path):
    classifier = convert.load(CLASSIFIER)
    tokenizer = convert.load_tokenizer(CLASSIFIER)
    run = tmp_path / "finetune"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"task": "text_classifier",
                                                 "checkpoint": str(CLASSIFIER)}))
    with pytest.raises(runs.RunError, match="has not ended: it has no model.keras"):
        kbert.load(run)
    convert.save_kbert(classifier, tmp_path / "saved", vocabulary=tokenizer)
    for file in (tmp_path / "saved").iterdir():
        shutil.move(str(file), run / file.name)
    loaded = kbert.load(run)
    assert loaded.kind == "finetuning_run" and loaded.description == f"fine-tuning run {run}"
    assert isinstance(loaded.model, tasks.TextClassifier)
    assert loaded.label_names == classifier.label_names == ["NEGATIVE", "NEUTRAL", "POSITIVE"]
    assert loaded.tokenizer.vocabulary == tokenizer.vocabulary
    features = {"token_ids": np.array([[2, 7, 9, 3]]), "segment_ids": np.zeros((1, 4), int),
                "padding_mask": np.ones((1, 4), int)}
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded.model(features)),
                               keras.ops.convert_to_numpy(classifier(features)), atol=1e-5)
    assert isinstance(kbert.load(run, head=None).model, models.BertBackbone)


def test_run_settings_defaults_are_pretrain_flags_defaults():
    """Runs made before a field existed are rebuilt with tools/pretrain.py's default."""
    from kbert.training import PretrainingConfig
    from kbert.training.objectives import OBJECTIVES

    flags = {f.name: f for f in dataclasses.fields(PretrainingConfig)}
    for field in dataclasses.fields(runs.RunSettings):
        if field.name == "tokenizer_type":  # "auto" now; WordPiece before the flag existed
            continue
        expected = flags[field.name]
        if field.default_factory is not dataclasses.MISSING:
            assert field.default_factory() == expected.default_factory(), field.name
        else:
            assert field.default == expected.default, field.name
    assert set(runs.OBJECTIVE_MODELS) == {o.name for o in OBJECTIVES.values()
                                          if not o.needs_teacher}


# === checkpoint directories ===

def test_a_hugging_face_checkpoint():
    backbone = kbert.load(DISTIL_BERT, head=None)
    assert backbone.kind == "checkpoint" and isinstance(backbone.model, models.BertBackbone)
    loaded = kbert.load(CLASSIFIER)
    assert isinstance(loaded.model, tasks.TextClassifier)
    assert loaded.label_names == ["NEGATIVE", "NEUTRAL", "POSITIVE"]
    assert kbert.load(CLASSIFIER, task="sentiment-analysis").label_names == loaded.label_names
    # A task the checkpoint holds no head of: a new head on its encoder, with the
    # checkpoint's tokenizer in its preprocessor.
    reader = kbert.load(CLASSIFIER, task="question-answering").model
    assert isinstance(reader, tasks.QuestionAnswerer)
    assert reader.preprocessor.tokenizer.vocabulary == loaded.tokenizer.vocabulary
    with pytest.raises(ValueError, match="fill-mask needs a masked-LM head"):
        kbert.load(CLASSIFIER, task="fill-mask")
    with pytest.raises(ValueError, match="weights= and sha256= choose a preset's weights"):
        kbert.load(DISTIL_BERT, weights=None)


def test_a_kbert_checkpoint(tmp_path):
    model = presets.load("bert_tiny", head="mlm", weights=None,
                         vocabulary_size=len(VOCABULARY), **SMALL)
    convert.save_kbert(model, tmp_path / "kbert", vocabulary=VOCABULARY, lowercase=False)
    loaded = kbert.load(tmp_path / "kbert")
    assert loaded.kind == "checkpoint" and loaded.tokenizer.vocabulary == VOCABULARY
    assert loaded.tokenizer.lowercase is False
    assert_same_outputs(outputs(loaded.model, len(VOCABULARY)), outputs(model, len(VOCABULARY)))


# === SavedModels ===

class _Doubler(tf.Module):
    def __init__(self, sentinel=None):
        super().__init__()
        self.sentinel = sentinel

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def __call__(self, token_ids):
        if self.sentinel is not None:  # a file op: what no kbert export holds
            tf.io.write_file(self.sentinel, tf.strings.as_string(token_ids[0, 0]))
        return {"out": token_ids * 2}


def _saved_model(path, sentinel=None):
    module = _Doubler(sentinel)
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.__call__})
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                               "The", "the"]) + "\n")
    return path


def test_a_saved_model_is_checked_before_it_loads(tmp_path):
    path = _saved_model(tmp_path / "benign")
    loaded = kbert.load(path)
    assert loaded.kind == "saved_model" and loaded.description == f"SavedModel {path}"
    out = loaded.model.signatures["serving_default"](token_ids=tf.constant([[1, 2]]))
    np.testing.assert_array_equal(out["out"].numpy(), [[2, 4]])
    assert loaded.tokenizer.lowercase is False  # "The": a cased vocabulary
    with pytest.raises(ValueError, match="loaded as it was exported: head do not apply"):
        kbert.load(path, head=None)

    sentinel = tmp_path / "written"
    hostile = _saved_model(tmp_path / "hostile", str(sentinel))
    with pytest.raises(UnsafeSavedModelError, match="WriteFile"):
        kbert.load(hostile)
    trusted = kbert.load(hostile, trusted=True).model  # the caller's own: not checked
    trusted.signatures["serving_default"](token_ids=tf.constant([[3]]))
    assert sentinel.read_text() == "3"
    with pytest.raises(ValueError, match="trusted=True skips the check of a SavedModel"):
        kbert.load(DISTIL_BERT, trusted=True)


# === anything else ===

def test_an_unknown_spec_names_what_was_tried_and_what_is_allowed(tmp_path):
    with pytest.raises(ValueError) as error:
        kbert.load("bert_tinyy")
    message = str(error.value)
    assert "'bert_tinyy' does not exist and is not a preset name" in message
    assert "bert_tiny, " in message and loading.ALLOWED in message
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="is not a checkpoint kbert can read"):
        kbert.load(tmp_path)
    with pytest.raises(TypeError, match="spec=3 \\(int\\): expected a preset name"):
        kbert.load(3)
