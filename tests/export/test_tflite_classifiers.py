"""Text classifiers and embedders exported to TFLite as their pipelines (`model.export(path,
format="tflite")`, `kbert.export`, `pipe.export_tflite`), run in ai-edge-litert's
interpreter with tensorflow-text's kernels registered, against their SavedModel exports
(`model.export(path)`) with the same pipeline options.

Float models answer as the SavedModel (labels equal, scores within 1e-4) on the same strings,
hostile ones included, single texts (`serving_default`) and pairs (`serving_pairs`, cut as
transformers' longest_first); `serving_ids` (ids in, as long as the texts are packed) gives the
SavedModel's raw outputs within 1e-4; the texts are cut at the export's `max_length`; the
pipeline's function is applied (softmax, sigmoid for multi-label, none for regression);
dynamic-range int8 gives the same top label on at least 99% of a held-out set of 300
strings, float16 scores within 1e-2; no model holds an op outside TFLite's built-ins and
tensorflow-text's kernels."""

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert import tasks
from kbert.serving import metadata
from kbert.tasks.text_classification.features import classification_dataset
from tests.export.test_tflite import (
    HOSTILE, SEQUENCE_LENGTH, assert_only_allowed_ops, backbone, classifier, held_out, packed,
    randomized, run, saved, signatures, strings, topics)
from tests.export.test_tflite_tasks import class_scores, softmax
from tests.tokenizers.test_alignment import tiny_tokenizer

# A classifier's pipeline options: every class's score, texts cut at SEQUENCE_LENGTH tokens
# (the model takes 64).
ANSWERS = dict(top_k=None, truncation=True, max_length=SEQUENCE_LENGTH)


@pytest.fixture(scope="module")
def centred(tmp_path_factory):
    """A tiny classifier with random weights whose output bias is centred on held-out texts
    (uncentred, the [CLS] vectors of a random model differ little and every text would get
    the same label; near ties everywhere: fine for float32, not for int8), exported with
    ANSWERS as a SavedModel and a float TFLite model: (tokenizer, model, saved, tflite)."""
    tmp, tokenizer = tmp_path_factory.mktemp("centred"), tiny_tokenizer()
    model = randomized(tasks.TextClassifier(backbone("bert", tokenizer), num_classes=3,
                                            label_names=["a", "b", "c"]), 0)
    logits = np.concatenate([np.asarray(model(f)) for f in classification_dataset(
        held_out(50, seed=1), tokenizer, SEQUENCE_LENGTH, 64)])
    bias = next(w for w in model.classifier.weights  # the output layer's
                if w.path.endswith("bias") and w.shape == (model.num_classes,))
    bias.assign(bias - logits.mean(axis=0))
    model.export(str(tmp / "saved"), tokenizer=tokenizer, **ANSWERS)
    path = model.export(str(tmp / "float.tflite"), format="tflite", tokenizer=tokenizer,
                        **ANSWERS)
    return tokenizer, model, tmp / "saved", path


def test_float_classifier_equals_the_saved_model_on_hostile_strings(centred):
    tokenizer, model, saved_path, path = centred
    texts = strings(HOSTILE + held_out(50, seed=1))
    ours, theirs = run(path, text=texts), saved(saved_path, text=texts)
    assert set(ours) == set(theirs) == {"label", "score"}
    assert ours["score"].shape == (len(texts), 3)
    np.testing.assert_array_equal(ours["label"][:, 0], theirs["label"][:, 0])
    scores = class_scores(ours, model.label_names)
    np.testing.assert_allclose(scores, class_scores(theirs, model.label_names), atol=1e-4)
    assert len(set(ours["label"][:, 0])) == 3  # the labels vary: the comparison means something
    # Texts cut at max_length: the softmax of the model's logits on kbert's ids cut there.
    cut = saved(saved_path, "serving_ids", **packed(tokenizer, SEQUENCE_LENGTH, texts))
    np.testing.assert_allclose(scores, softmax(cut["logits"]), atol=1e-4)
    # serving_ids: ids as long as the export packs its texts (max_length, not the model's
    # 64: TFLite slices no tensor of unknown length) in, the SavedModel's raw logits out.
    assert signatures(path) == {"serving_default", "serving_pairs", "serving_ids"}
    assert metadata.read(path)["ids_length"] == SEQUENCE_LENGTH
    ids = packed(tokenizer, SEQUENCE_LENGTH, texts)
    ours, theirs = run(path, "serving_ids", **ids), saved(saved_path, "serving_ids", **ids)
    assert set(ours) == set(theirs) == {"logits"}
    np.testing.assert_allclose(ours["logits"], theirs["logits"], atol=1e-4)
    # A special-token literal is text in TFLite (the SavedModel reads it as its token).
    literal = strings(["paris [SEP] tokyo [CLS]", "[SEP]"])
    spaced = strings(["paris [ SEP ] tokyo [ CLS ]", "[ SEP ]"])
    np.testing.assert_allclose(run(path, text=literal)["score"],
                               saved(saved_path, text=spaced)["score"], atol=1e-4)
    meta = metadata.read(path)
    assert (meta["task"], meta["label_names"], meta["options"], meta["max_length"]) == \
        ("text-classification", ["a", "b", "c"], ANSWERS, 64)
    assert_only_allowed_ops(path)


def test_classifier_pairs_equal_the_saved_model(centred):
    """`serving_pairs` (`text`, `text_pair`): every mix of short, long and empty segments is
    cut as the SavedModel's `serving_pairs` cuts it (transformers' longest_first) and gets
    its answers."""
    tokenizer, model, saved_path, path = centred
    texts = held_out(40, seed=4)
    firsts = strings(HOSTILE + texts[:20])
    seconds = strings(list(reversed(HOSTILE)) + texts[20:])
    ours = run(path, "serving_pairs", text=firsts, text_pair=seconds)
    theirs = saved(saved_path, "serving_pairs", text=firsts, text_pair=seconds)
    np.testing.assert_array_equal(ours["label"][:, 0], theirs["label"][:, 0])
    scores = class_scores(ours, model.label_names)
    np.testing.assert_allclose(scores, class_scores(theirs, model.label_names), atol=1e-4)
    lengths = [tokenizer.tokenize(tf.constant(t)).row_lengths().numpy()
               for t in (firsts, seconds)]
    cut = lengths[0] + lengths[1] > SEQUENCE_LENGTH - 3
    assert 5 < cut.sum() < len(cut)  # pairs cut, and pairs whole
    single = class_scores(run(path, text=firsts), model.label_names)
    assert (np.abs(scores - single).max(-1) > 1e-4).mean() > 0.9  # the second text counts
    assert len(set(ours["label"][:, 0])) > 1


@pytest.mark.slow
def test_quantized_classifiers(tmp_path, capsys):
    """On a briefly trained classifier (`kbert.export`) and 300 held-out strings: float32
    within 1e-4 of the SavedModel; dynamic int8 the same top label on >= 99%; float16 within
    1e-2. The largest score differences are printed."""
    tokenizer = tiny_tokenizer()
    model = classifier(tokenizer)
    model.export(str(tmp_path / "saved"), tokenizer=tokenizer, **ANSWERS)
    texts = strings(topics(300, seed=1)[0])
    theirs = class_scores(saved(tmp_path / "saved", text=texts), model.label_names)
    counts = np.bincount(theirs.argmax(-1), minlength=3)
    assert counts.min() >= 0.1 * len(texts), counts  # every label is a real share
    sizes = {}
    for quantize in (None, "dynamic", "float16"):
        path = tmp_path / f"{quantize or 'float32'}.tflite"
        kbert.export(model, str(path), format="tflite", tokenizer=tokenizer,
                     quantize=quantize, **ANSWERS)
        assert_only_allowed_ops(path)
        assert metadata.read(path)["quantize"] == quantize
        ours = class_scores(run(path, text=texts), model.label_names)
        agreement = float(np.mean(ours.argmax(-1) == theirs.argmax(-1)))
        difference = float(np.abs(ours - theirs).max())
        sizes[quantize] = path.stat().st_size
        with capsys.disabled():
            print(f"\n{quantize or 'float32'}: {sizes[quantize]} bytes; top label agrees on "
                  f"{agreement:.2%} of {len(texts)} held-out texts; largest score "
                  f"difference {difference:.4g}")
        assert agreement >= 0.99
        if quantize is None:
            assert difference < 1e-4
        else:
            assert sizes[quantize] < sizes[None]
        if quantize == "float16":
            assert difference < 1e-2


@pytest.mark.slow
def test_multi_label_regression_and_embedder_equal_their_saved_models(tmp_path):
    """Each answers as its SavedModel (`pipe.export_tflite` against `model.export`), with
    the pipeline's function: sigmoid (multi-label), none (regression: the raw value), the
    embedder's pooled vector; `serving_ids` gives the SavedModel's raw outputs."""
    tokenizer = tiny_tokenizer()
    cases = {  # name: (model, task, options, length of serving_ids' ids)
        "multi_label": (tasks.TextClassifier(backbone("distil_bert", tokenizer),
                                             num_classes=4, problem_type="multi_label"),
                        "text-classification", ANSWERS, SEQUENCE_LENGTH),
        "regression": (tasks.TextClassifier(backbone("electra", tokenizer),
                                            problem_type="regression"),
                       "text-classification", dict(truncation=True, max_length=24),
                       SEQUENCE_LENGTH),
        "embedder": (tasks.TextEmbedder(backbone("bert", tokenizer, SEQUENCE_LENGTH),
                                        pooling="mean", normalize=True),
                     "sentence-embeddings", {}, SEQUENCE_LENGTH),
    }
    texts = strings(HOSTILE + held_out(20, seed=3))
    for seed, (name, (model, task, options, length)) in enumerate(cases.items()):
        randomized(model, seed)
        saved_path = model.export(str(tmp_path / name), tokenizer=tokenizer, **options)
        pipe = kbert.pipeline(task, model=model, tokenizer=tokenizer)
        path = pipe.export_tflite(str(tmp_path / f"{name}.tflite"), **options)
        ours, theirs = run(path, text=texts), saved(saved_path, text=texts)
        assert set(ours) == set(theirs), name
        if "label" in theirs and theirs["label"].shape[1] > 1:  # every class, best first:
            names = sorted(label.decode() for label in theirs["label"][0])  # a near tie may
            np.testing.assert_allclose(class_scores(ours, names),  # order two differently
                                       class_scores(theirs, names), atol=1e-4, err_msg=name)
        else:
            for key, value in theirs.items():
                if value.dtype == object:
                    np.testing.assert_array_equal(ours[key], value)
                else:
                    np.testing.assert_allclose(ours[key], value, atol=1e-4, err_msg=name)
        ids = packed(tokenizer, length, texts)
        raw = run(path, "serving_ids", **ids)
        expected = saved(saved_path, "serving_ids", **ids)
        assert set(raw) == set(expected) == {"embedding" if name == "embedder" else "logits"}
        for key, value in expected.items():
            np.testing.assert_allclose(raw[key], value, atol=1e-4, err_msg=name)
        # The pipeline's function on the logits of the texts cut at max_length.
        logits = saved(saved_path, "serving_ids", **packed(tokenizer, 24, texts)).get("logits")
        if name == "multi_label":
            scores = class_scores(ours, [f"LABEL_{i}" for i in range(4)])
            np.testing.assert_allclose(scores, 1 / (1 + np.exp(-logits)), atol=1e-4)
            assert np.abs(scores.sum(-1) - 1).max() > 0.1  # not a softmax
        elif name == "regression":
            assert ours["label"].tolist() == [[b"LABEL_0"]] * len(texts)
            np.testing.assert_allclose(ours["score"], logits, atol=1e-4)
            assert (ours["score"] < 0).any() or (ours["score"] > 1).any()  # no sigmoid
        else:
            np.testing.assert_allclose(ours["embedding"], raw["embedding"], atol=1e-4)
            np.testing.assert_allclose(np.linalg.norm(ours["embedding"], axis=-1), 1,
                                       atol=1e-4)
        assert_only_allowed_ops(path)
