"""TFLite exports run in ai-edge-litert's interpreter with tensorflow-text's kernels
registered, and the helpers the TFLite tests of text classifiers share
(tests/export/test_tflite_classifiers.py).

Here: a DistilBERT backbone exported as its feature-extraction pipeline (`kbert.export(backbone,
path, format="tflite", tokenizer=...)`: text in) equals its SavedModel within 1e-4, hostile
strings included, and so does its `serving_ids`; ALBERT's ids-in file
(`kbert.serving.export_tflite`: `serving_ids` alone) equals the Keras model; the TFLite
tokenizer differs from kbert's where `kbert.serving.tflite` says; no model holds an op
outside TFLite's built-ins and tensorflow-text's kernels (read from the flatbuffer); what
TFLite cannot follow is refused with a message that says so; docs/devices.md's snippets run
as written."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert
import kbert.models
from kbert import tasks
from kbert.serving import export_tflite, metadata
from kbert.serving.runtimes import TEXT_OPS, check_ops, custom_ops, interpreter, model_ops
from kbert.serving.tflite import tokenization_differences
from kbert.tokenizers import WordPieceTokenizer
from tests.export.test_tflite_pipelines import (  # noqa: F401 - shared with the TFLite tests
    HOSTILE, WORDS, assert_only_allowed_ops, held_out, run, saved, signatures, strings)
from tests.helpers import TINY
from tests.tasks.question_answering.test_features import sentence_piece_tokenizer
from tests.tokenizers.test_alignment import TINY_VOCABULARY, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[2]
SEQUENCE_LENGTH = 24
KEYWORDS = ["tokyo", "paris", "york"]


def topics(count, seed):
    """`count` held-out-like texts, each with one keyword inserted at random, and the
    keyword's index: what the tiny classifier learns."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for text in held_out(count, seed):
        words = [w for w in text.split() if w not in KEYWORDS]
        label = int(rng.integers(len(KEYWORDS)))
        words.insert(int(rng.integers(len(words) + 1)), KEYWORDS[label])
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.array(labels)


def backbone(family, tokenizer, max_sequence_length=64):
    config = kbert.models.FAMILIES[family].config(
        **{**TINY, "vocabulary_size": tokenizer.vocabulary_size,
           "max_sequence_length": max_sequence_length})
    return kbert.models.build(family, config, head=None)


def randomized(model, seed):
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(weight.dtype))
    return model


def classifier(tokenizer, seed=0, max_sequence_length=64, epochs=12):
    """A tiny classifier trained briefly (400 texts) to tell which keyword a text holds: its
    labels vary and its probabilities are mostly far from a tie, as a fine-tuned model's."""
    import keras

    from kbert.tasks.text_classification.features import classification_dataset

    keras.utils.set_random_seed(seed)
    model = tasks.TextClassifier(backbone("bert", tokenizer, max_sequence_length),
                                 num_classes=3, label_names=["tokyo", "paris", "new york"])
    texts, labels = topics(400, seed=100 + seed)
    features = next(iter(classification_dataset(texts, tokenizer, SEQUENCE_LENGTH, 400)))
    model.compile(optimizer=keras.optimizers.Adam(5e-3), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(features, labels, batch_size=16, epochs=epochs, verbose=0)
    return model


def packed(tokenizer, length, *texts):
    """kbert's ids of `texts` (one array of strings, or two: pairs, trimmed longest first),
    numpy int32 [B, length]: `token_ids`, `segment_ids`, `padding_mask`."""
    features = tokenizer.pack([tokenizer.tokenize(tf.constant(t)) for t in texts], length)
    return {k: np.asarray(v, np.int32) for k, v in features.items()}


def test_ops_outside_tflite_and_tensorflow_text_are_refused():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def lower(text):
        return {"lower": tf.strings.lower(text)}

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [lower.get_concrete_function()])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS,
                                           tf.lite.OpsSet.SELECT_TF_OPS]
    flatbuffer = converter.convert()
    assert "FlexStringLower" in model_ops(flatbuffer)
    with pytest.raises(ValueError, match="FlexStringLower"):
        check_ops(flatbuffer)


def test_tokenization_differences_are_the_documented_ones():
    """The TFLite tokenizer (tensorflow-text's normaliser) gives kbert's ids on the hostile
    texts' characters, and differs where `kbert.serving.tflite`'s docstring says."""
    tokenizer = tiny_tokenizer()
    assert tokenization_differences(tokenizer, sorted(set("".join(HOSTILE)))) == []
    # Controls (kbert deletes them; spaces in TFLite), private use, unassigned and U+FFFD
    # (kept in TFLite), NFKC compatibility characters and full case folding (uncased).
    # Format characters (zero-width space, soft hyphen) are deleted by both.
    documented = ["\x00", "\x07", "\ue000", "\u0378", "\ufffd", "\ufb01", "\uff21",
                  "\u00df"]
    assert tokenization_differences(tokenizer, documented + ["\u200b", "\u00ad"]) == \
        documented
    cased = WordPieceTokenizer(TINY_VOCABULARY + ["\u8eca"], lowercase=False)
    # Cased: kbert composes (NFC), which maps a CJK compatibility ideograph to its unified
    # twin; the TFLite tokenizer does not.
    assert tokenization_differences(cased, ["\uf902", "a", "\u00e9"]) == ["\uf902"]


@pytest.mark.slow
def test_backbones_text_in_and_ids_in(tmp_path):
    """DistilBERT (no segments, no pooler) as its feature-extraction pipeline, text in,
    equals its SavedModel, and its `serving_ids` the SavedModel's; ALBERT's ids-in file
    (`export_tflite`, its SentencePiece tokenizer has no TFLite twin) equals the Keras
    model."""
    tokenizer = tiny_tokenizer()
    distil = randomized(backbone("distil_bert", tokenizer, SEQUENCE_LENGTH), 3)
    kbert.export(distil, str(tmp_path / "saved"), tokenizer=tokenizer, truncation=True)
    path = kbert.export(distil, str(tmp_path / "distil.tflite"), format="tflite",
                        tokenizer=tokenizer, truncation=True)
    texts = strings(HOSTILE + held_out(10, seed=3))
    ours, theirs = run(path, text=texts), saved(tmp_path / "saved", text=texts)
    assert set(ours) == set(theirs) | {"padding_mask"} == {"features", "padding_mask",
                                                           "num_tokens"}
    assert ours["features"].shape == theirs["features"].shape == \
        (len(texts), SEQUENCE_LENGTH, TINY["hidden_size"])
    np.testing.assert_array_equal(ours["num_tokens"], theirs["num_tokens"])
    np.testing.assert_array_equal(
        ours["padding_mask"], np.arange(SEQUENCE_LENGTH) < ours["num_tokens"][:, None])
    np.testing.assert_allclose(ours["features"], theirs["features"], atol=1e-4)
    assert len(set(ours["num_tokens"])) > 5 and ours["num_tokens"].max() == SEQUENCE_LENGTH
    assert signatures(path) == {"serving_default", "serving_ids"}
    ids = packed(tokenizer, SEQUENCE_LENGTH, texts)
    ours = run(path, "serving_ids", **ids)
    theirs = saved(tmp_path / "saved", "serving_ids", **ids)
    assert set(ours) == set(theirs) == {"sequence_output"}
    np.testing.assert_allclose(ours["sequence_output"], theirs["sequence_output"], atol=1e-4)
    assert_only_allowed_ops(path)

    sp = sentence_piece_tokenizer()
    albert = randomized(backbone("albert", sp), 4)
    path = export_tflite(albert, str(tmp_path / "albert.tflite"),
                         sequence_length=SEQUENCE_LENGTH)
    assert interpreter(path).get_signature_list() == {"serving_ids": {
        "inputs": ["padding_mask", "segment_ids", "token_ids"],
        "outputs": ["pooled_output", "sequence_output"]}}
    meta = metadata.read(path)
    assert (meta["runtime"], meta["model"], meta["max_length"]) == ("tflite", "backbone", 24)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, sp.vocabulary_size, (3, SEQUENCE_LENGTH)).astype(np.int32)
    mask = (np.arange(SEQUENCE_LENGTH)[None] < np.array([[24], [9], [2]])).astype(np.int32)
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    ours, theirs = run(path, "serving_ids", **inputs), albert(inputs)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(ours[name], np.asarray(theirs[name]), atol=1e-4)
    assert custom_ops(Path(path).read_bytes()) == []


def test_what_tflite_cannot_follow_is_refused(tmp_path):
    tokenizer = tiny_tokenizer()
    model = tasks.TextClassifier(backbone("bert", tokenizer), num_classes=2)
    path = str(tmp_path / "m.tflite")
    with pytest.raises(ValueError, match="quantize='int4'; allowed: None"):
        export_tflite(model, path, quantize="int4")
    for length in (65, 2, True, 24.0):
        with pytest.raises(ValueError,
                           match=r"sequence_length must be an integer in \[3, 64\]"):
            export_tflite(model, path, sequence_length=length)
    pipe = kbert.pipeline("text-classification", model=model, tokenizer=tokenizer)
    with pytest.raises(TypeError, match="export_tflite takes a kbert model with raw outputs "
                                        r"\(a backbone, .*not TextClassificationPipeline"):
        export_tflite(pipe, path)
    with pytest.raises(ValueError, match="truncation=False: a TFLite model cannot refuse a "
                                         "text longer than the model"):
        model.export(path, format="tflite", tokenizer=tokenizer)
    with pytest.raises(ValueError, match="quantize='dynamic' is for format='tflite'"):
        kbert.export(model, str(tmp_path / "saved"), tokenizer=tokenizer, quantize="dynamic")
    sp = sentence_piece_tokenizer()
    with pytest.raises(ValueError, match="SentencePieceTokenizer .ALBERT. cannot go inside"):
        kbert.export(backbone("albert", sp), path, format="tflite", tokenizer=sp,
                     truncation=True)
    # A pipeline's TFLite tokenizer splits literals as text whatever the tokenizer says
    # (test_tflite_classifiers.py); kbert's TFLite tokenizer twin refuses such a tokenizer.
    literals = WordPieceTokenizer(TINY_VOCABULARY, split_special_tokens=False)
    with pytest.raises(ValueError, match="The tokenizer has split_special_tokens=False"):
        tokenization_differences(literals, "a")
    assert not (tmp_path / "m.tflite").exists() and not (tmp_path / "saved").exists()


def readme_blocks():
    """The Python blocks of docs/devices.md: (export, classify)."""
    text = (ROOT / "docs" / "devices.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


GUARD = """
import sys
assert not any(m.split(".")[0] in ("kbert", "keras_hub") for m in sys.modules)
"""


@pytest.mark.slow
def test_readme_run_on_a_device(tmp_path, monkeypatch):
    """docs/devices.md's two snippets as written: the export (on a tiny classifier of
    max_sequence_length 128), then the classification in a process without kbert (the
    interpreter is ai-edge-litert's; tensorflow-text only registers its kernels), which
    prints the pipeline's labels."""
    export, classify = readme_blocks()
    tokenizer = tiny_tokenizer()
    model = classifier(tokenizer, seed=5, max_sequence_length=128, epochs=2)
    monkeypatch.chdir(tmp_path)
    exec(export, {"classifier": model, "tokenizer": tokenizer})
    result = subprocess.run([sys.executable, "-c", classify + GUARD], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    texts = ["A great movie!", "Awful."]
    expected = [answer["label"] for answer in kbert.pipeline(
        "text-classification", model=model, tokenizer=tokenizer)(texts)]
    assert result.stdout.strip().splitlines()[-1] == str(expected)


def test_readme_has_the_snippets():
    export, classify = readme_blocks()
    assert 'format="tflite"' in export and "truncation=True" in export
    assert "get_signature_runner" in classify and "kbert" not in classify
