"""Task models of `kbert.tasks` built in kbert (no checkpoint, no preprocessor) export as their
pipeline answers (`model.export(path, tokenizer=...)`): a multi-label and a regression
classifier answer as `kbert.pipeline("text-classification", model=model)` on texts with
accents, CJK, emoji, zero-width characters and pairs;
and the graph's words and pieces (`kbert.tokenizers.words_graph`, which the token
classification and question answering exports cut words and offsets by) equal
`kbert.tokenizers.alignment`'s.

The exports of checkpoints on every task are tests/serving/test_model_export.py's and
tests/pipelines/test_export.py's."""

import numpy as np
import pytest
import tensorflow as tf

import kbert
import kbert.models
from kbert import tasks
from kbert.serving import metadata
from kbert.tasks.text_classification.features import classification_dataset
from kbert.tokenizers import words_graph
from kbert.tokenizers.alignment import Word, align_texts
from tests.helpers import TINY
from tests.pipelines import reference
from tests.pipelines.test_export import _answer, _calls
from tests.tasks.question_answering.test_features import CONTEXTS, sentence_piece_tokenizer
from tests.tokenizers.test_alignment import TRICKY_TEXT, tiny_tokenizer

# Accents (composed and decomposed), CJK, emoji, runs of every kind of whitespace,
# zero-width and NUL characters inside words; texts and pairs longer than the model's 64
# tokens (truncated: the exports fix truncation=True).
TEXTS = [TRICKY_TEXT, *CONTEXTS[1:], "the new york city is big", "x\x00y \x00 café\u200b!", "a"]
LONG = " ".join(CONTEXTS)
PAIRS = [{"text": a, "text_pair": b} for a, b in zip(
    TEXTS, ["Where is Paris?", "東京", "e\u0301", "the city", "b", TRICKY_TEXT])]
PAIRS += [{"text": "where?", "text_pair": LONG}, {"text": LONG, "text_pair": TRICKY_TEXT}]


def utf8(texts):
    return np.array([t.encode() for t in texts], dtype=object)


def strings(values):
    return [v.decode("utf-8") for v in np.ravel(values)]


def tiny_backbone(family, tokenizer):
    config = kbert.models.FAMILIES[family].config(
        **{**TINY, "vocabulary_size": tokenizer.vocabulary_size, "max_sequence_length": 64})
    return kbert.models.build(family, config, head=None)


def tiny_classifier(family, tokenizer, seed, **kwargs):
    """A tiny text classifier with random weights fixed by `seed` (std 0.3: scores far
    apart, no near ties for float32 noise to reorder), its output bias centred on TEXTS
    (the [CLS] vectors of a random model differ little: without it every text ranks the
    labels alike)."""
    model = tasks.TextClassifier(tiny_backbone(family, tokenizer), **kwargs)
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(weight.dtype))
    features = next(iter(classification_dataset(TEXTS, tokenizer, 32, 64)))
    bias = next(w for w in model.classifier.weights  # the output layer's
                if w.path.endswith("bias") and w.shape == (model.num_classes,))
    bias.assign(bias - np.mean(np.asarray(model(features)), axis=0))
    return model


@pytest.mark.slow
@pytest.mark.parametrize("family, kwargs", [
    ("bert", dict(num_classes=4, problem_type="multi_label",
                  label_names=["sports", "politics", "technology", "business"])),
    ("electra", dict(problem_type="regression")),
], ids=["multi_label", "regression"])
def test_a_kbert_built_classifier_exports_as_its_pipeline(tmp_path, family, kwargs):
    """Sigmoid scores of every label, ranked (multi-label), or the raw value (regression),
    as the pipeline gives them; truncation fixed in the graph; `serving_ids` the logits."""
    tokenizer = tiny_tokenizer()
    model = tiny_classifier(family, tokenizer, seed=len(family), **kwargs)
    options = {"top_k": None, "truncation": True}
    path = model.export(tmp_path / "export", tokenizer=tokenizer, **options)
    pipe = kbert.pipeline("text-classification", model=model, tokenizer=tokenizer)
    loaded = tf.saved_model.load(str(path))

    inputs = TEXTS + [LONG] + PAIRS
    assert len(tokenizer.tokenize(LONG)) > 64
    calls, placement = _calls("text-classification", inputs, options)
    assert [name for name, _ in calls] == ["serving_default", "serving_pairs"]
    results = [{k: v.numpy() for k, v in loaded.signatures[name](
        **{k: tf.constant(v) for k, v in args.items()}).items()} for name, args in calls]
    expected = pipe(inputs, **options)
    reference.assert_same(_answer("text-classification", inputs, options, results, placement),
                          expected, family, tolerance=1e-5)
    if model.problem_type == "multi_label":  # the ranking varies: the test can fail
        assert len({answer[0]["label"] for answer in expected}) > 1
        assert all(0 < item["score"] < 1 for answer in expected for item in answer)
    else:
        assert [[item["label"] for item in answer] for answer in expected] == \
            [["LABEL_0"]] * len(inputs)
        assert any(not 0 <= answer[0]["score"] <= 1 for answer in expected)  # no sigmoid

    meta = metadata.read(path)
    assert (meta["task"], meta["model"], meta["problem_type"], meta["options"]) == (
        "text-classification", "text_classifier", model.problem_type, options)
    assert meta["label_names"] == kwargs.get("label_names", ["LABEL_0"])
    features = next(iter(classification_dataset(TEXTS, tokenizer, 32, 64)))
    raw = loaded.signatures["serving_ids"](
        **{k: tf.cast(features[k], tf.int32) for k in model.input})
    np.testing.assert_allclose(raw["logits"].numpy(), np.asarray(model(features)), atol=1e-5,
                               rtol=0)


def test_graph_words_and_pieces_match_text_spans():
    """The in-graph word split, wordpieces and piece spans equal kbert.tokenizers.alignment'
    (uncased, cased and SentencePiece tokenizers; offsets in code points)."""
    rng = np.random.default_rng(0)
    alphabet = [*"ab É\u0301é,.東京😀\u200b\x00\t\u3000ΣİﬁIJ-", "\u00a0", "\U0001F3FB"]
    texts = TEXTS + ["", "   ", "\u200b", "ΑΣ Σ İstanbul ﬁne ™"] + [
        "".join(rng.choice(alphabet, 12)) for _ in range(20)]
    # A new SentencePiece tokenizer: the cached one's TensorFlow resource may belong to a
    # context that an earlier test reset.
    for tokenizer in (tiny_tokenizer(True), tiny_tokenizer(False),
                      sentence_piece_tokenizer.__wrapped__()):
        aligned = tf.function(lambda x: words_graph.align(
            words_graph.valid_utf8(x), tokenizer))(tf.constant(utf8(texts)))
        words, pieces = aligned["words"], aligned["pieces"]
        splits, piece_splits = words["row_splits"].numpy(), pieces.row_splits.numpy()
        spans = np.stack([aligned["piece_starts"].numpy(), aligned["piece_ends"].numpy()], 1)
        for row, expected in enumerate(align_texts(texts, tokenizer)):
            lo, hi = splits[row], splits[row + 1]
            got = [Word(t, s, e) for t, s, e in zip(
                strings(words["text"][lo:hi]), words["start"][lo:hi].numpy().tolist(),
                words["end"][lo:hi].numpy().tolist())]
            assert got == expected.words, texts[row]
            first, last = piece_splits[lo], piece_splits[hi]
            assert pieces.flat_values[first:last].numpy().tolist() == expected.piece_ids.tolist()
            np.testing.assert_array_equal(spans[first:last], expected.piece_spans,
                                          err_msg=repr(texts[row]))
