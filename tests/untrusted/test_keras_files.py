"""kbert.untrusted.load_model refuses hostile .keras archives before Keras reads them."""

import json
import re
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest

from kbert import presets
from kbert.untrusted import UnsafeModelError, load_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("keras") / "backbone.keras")
    backbone = presets.load("bert_tiny", head=None, weights=None, vocabulary_size=300)
    backbone.save(path)
    return path, backbone


def rewrite(source, target, config=None, extra_members=()):
    """A copy of the `.keras` archive `source` with a new config and extra members."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename == "config.json" and config is not None:
                data = json.dumps(config).encode()
            new.writestr(info, data)
        for name, data in extra_members:
            new.writestr(name, data)
    return str(target)


def test_a_kbert_model_loads_and_predicts_the_same(good):
    path, backbone = good
    loaded = load_model(path)
    inputs = {"token_ids": np.array([[2, 7, 9, 3]]), "segment_ids": np.zeros((1, 4), "int32"),
              "padding_mask": np.ones((1, 4), "int32")}
    np.testing.assert_allclose(loaded(inputs)["pooled_output"], backbone(inputs)["pooled_output"],
                               atol=1e-6)


def test_a_lambda_layer_is_refused(tmp_path):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2)(inputs))
    path = str(tmp_path / "lambda.keras")
    model.save(path)
    with pytest.raises(UnsafeModelError, match="holds a Lambda layer, which would run "
                                               "arbitrary Python code"):
        load_model(path)


def test_a_config_naming_an_arbitrary_function_is_refused(good, tmp_path):
    path, _ = good
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    config["config"]["activation"] = {"module": "os", "class_name": "function",
                                      "config": "system", "registered_name": "system"}
    hostile = rewrite(path, tmp_path / "function.keras", config=config)
    with pytest.raises(UnsafeModelError, match=re.escape(
            "config.json.config.activation names os.system, outside Keras and kbert")):
        load_model(hostile)


@pytest.mark.parametrize("member", ["../outside.txt", "/etc/evil", "assets/../../up.txt"])
def test_a_member_outside_the_archive_is_refused(good, tmp_path, member):
    path, _ = good
    hostile = rewrite(path, tmp_path / "slip.keras", extra_members=[(member, b"x")])
    with pytest.raises(UnsafeModelError, match=re.escape(f"the member {member!r} points "
                                                         "outside the archive")):
        load_model(hostile)
    assert not (tmp_path.parent / "outside.txt").exists()


def test_not_a_keras_archive(tmp_path):
    path = tmp_path / "x.keras"
    path.write_text("not a zip")
    with pytest.raises(UnsafeModelError, match="is not a .keras archive"):
        load_model(str(path))


def test_nothing_in_kbert_turns_safe_mode_off():
    for source in (ROOT / "kbert").rglob("*.py"):
        text = source.read_text()
        assert not re.search(r"safe_mode\s*=\s*False", text), source
        assert "enable_unsafe_deserialization" not in text, source
