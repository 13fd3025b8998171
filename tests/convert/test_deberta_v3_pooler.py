"""A DeBERTa-v3 sequence classifier whose ContextPooler kbert's head cannot compute (issue 19):
its encoder loads (the pooler is only the classification head's), its task model is refused
with the reason, and it does not go back out as a classifier."""

import json
import shutil

import keras
import numpy as np
import pytest

import kbert.convert
from kbert import models
from tests.convert._tasks import FIXTURES

NAME = "deberta_v3_seq_single"
CHANGES = [{"pooler_hidden_act": "tanh"}, {"pooler_hidden_size": 16}]
MESSAGES = ["pooler_hidden_act='tanh'; kbert's DeBERTa-v3 TextClassifier serves "
            "pooler_hidden_act='gelu'",
            "pooler_hidden_size=16 \\(hidden_size=24\\); kbert's DeBERTa-v3 TextClassifier "
            "serves a pooler as wide as the encoder"]


def _copy_with_config(folder, **changes):
    shutil.copytree(FIXTURES / NAME, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


def _sequence(model, ids):
    return keras.ops.convert_to_numpy(model(
        {"token_ids": ids, "padding_mask": np.ones_like(ids)}, training=False)["sequence_output"])


@pytest.mark.parametrize("change", CHANGES, ids=["act", "size"])
def test_the_encoder_of_a_classifier_with_another_pooler_loads(tmp_path, change):
    folder = _copy_with_config(tmp_path / "x", **change)
    backbone = kbert.convert.load(folder, task=None)
    assert isinstance(backbone, models.DebertaV3Backbone)
    assert kbert.convert.read(folder).task.architecture == "DebertaV2ForSequenceClassification"
    # The same encoder weights as the unchanged checkpoint's.
    expected = kbert.convert.load(FIXTURES / NAME, task=None)
    ids = np.array([[1, 5, 9, 13, 2]], np.int32)
    np.testing.assert_array_equal(_sequence(backbone, ids), _sequence(expected, ids))


@pytest.mark.parametrize("change, message", list(zip(CHANGES, MESSAGES)), ids=["act", "size"])
def test_the_task_model_of_a_classifier_with_another_pooler_is_refused(tmp_path, change,
                                                                       message):
    folder = _copy_with_config(tmp_path / "x", **change)
    for task in ("auto", "text_classifier", "text-classification"):
        with pytest.raises(ValueError, match=f"a DebertaV2ForSequenceClassification with "
                                             f"{message}.* task=None"):
            kbert.convert.load(folder, task=task)
    # Written back as a classifier, transformers would compute its default pooler instead.
    checkpoint = kbert.convert.read(folder)
    with pytest.raises(ValueError, match=message):
        kbert.convert.hugging_face.write(checkpoint, tmp_path / "out")
    assert not (tmp_path / "out").exists()
