"""pipeline.export_tflite for zero-shot classification, feature extraction and sentence
embeddings (and fill-mask): the TFLite model, run in ai-edge-litert's interpreter with
tensorflow-text's kernels, equals the pipeline's call on the same strings (hostile ones
included) within 1e-4, its `serving_ids` (ids in, the model's raw outputs out) equals the
pipeline's model on kbert's ids within 1e-4, and it holds no op outside TFLite's built-ins
and tensorflow-text's. The helpers the TFLite task tests share are here."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from kbert.serving.runtimes import TEXT_OPS, custom_ops, interpreter, model_ops
from tests.pipelines.conftest import load_pipeline

# Empty, whitespace only, CJK, emoji (with a skin tone), accents composed and decomposed,
# punctuation glued to words, a text far longer than the model, 10,000 characters.
HOSTILE = [
    "", "   \t\n ", "東京都 日本", "😀 🚀 emoji 👍🏽!", "Héllo naïve café École Ωmega Müller",
    "e\u0301te\u0301 \u00e9t\u00e9", "Paris!!! (the city)... new-york's 1990s",
    "x" * 10000, ("the new york city is big " * 400)[:10000], "Ünïcödé ÀÉÎÕÜ ąčęėįšųūž",
]
WORDS = ["the", "new", "york", "is", "in", "city", "big", "muller", "cafe", "bar", "tokyo",
         "paris", "what", "where", "who", "1990", "東", "京", "日本", "café", "naïve", "😀",
         "Über", "!", ",", "...", "(", ")"]


def held_out(count, seed):
    """`count` texts of 1 to 30 words: vocabulary words, random lower-case words, accents,
    CJK, emoji and punctuation (none of the characters whose ids differ in TFLite)."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    return [" ".join(WORDS[rng.integers(len(WORDS))] if rng.random() < 0.6 else
                     "".join(rng.choice(letters, rng.integers(1, 9)))
                     for _ in range(rng.integers(1, 31))) for _ in range(count)]


def strings(texts):
    return np.array([t.encode("utf-8") for t in texts], dtype=object)


def run(path, signature="serving_default", **inputs):
    """The TFLite model's `signature` on `inputs` (numpy arrays); `serving_ids` takes the
    features it names (no `segment_ids` for DistilBERT)."""
    runner = interpreter(path).get_signature_runner(signature)
    if signature == "serving_ids":
        inputs = {k: inputs[k] for k in runner.get_input_details()}
    return runner(**inputs)


_LOADED = {}


def saved(path, signature="serving_default", **inputs):
    """A SavedModel's `signature` on `inputs` (loaded once per path); `serving_ids` takes
    the features it names."""
    if str(path) not in _LOADED:
        _LOADED[str(path)] = tf.saved_model.load(str(path))
    function = _LOADED[str(path)].signatures[signature]
    if signature == "serving_ids":
        inputs = {k: inputs[k] for k in function.structured_input_signature[1]}
    return {k: v.numpy() for k, v in function(
        **{k: tf.constant(v) for k, v in inputs.items()}).items()}


def packed(tokenizer, texts, length, cut=None):
    """kbert's ids of `texts` (numpy int32 [B, length]: `token_ids`, `segment_ids`,
    `padding_mask`), cut to `cut` tokens (default: `length`) as the pipeline cuts them and
    padded to `length`: the inputs of a TFLite export's `serving_ids`."""
    cut = length if cut is None else cut
    features = tokenizer.pack([tokenizer.tokenize(tf.constant(texts))], cut)
    return {k: np.pad(np.asarray(v, np.int32), [(0, 0), (0, length - cut)],
                      constant_values=tokenizer.pad_id if k == "token_ids" else 0)
            for k, v in features.items()}


def keras_outputs(model, features):
    """The Keras model's raw outputs on `features` (the inputs it takes), as numpy."""
    outputs = model({k: features[k] for k in model.input})
    return {k: np.asarray(v) for k, v in outputs.items()} if isinstance(outputs, dict) else \
        np.asarray(outputs)


def assert_only_allowed_ops(path):
    ops = model_ops(Path(path).read_bytes())
    assert not [op for op in ops if op.startswith("Flex")], ops
    assert set(custom_ops(Path(path).read_bytes())) <= TEXT_OPS, ops
    assert "FastWordpieceTokenizeWithOffsets" in ops or "FastWordpieceTokenize" in ops or \
        not any(op.startswith("Fast") for op in ops)


def signatures(path):
    return set(interpreter(path).get_signature_list())


TEXTS = HOSTILE + ["A great game of football.", "The election results are in.",
                   "We flew to Tokyo 東京 😀"]
LABELS = ["sports", "politics", "travel", "東京"]


@pytest.fixture(scope="module")
def zero_shot(tmp_path_factory):
    """The BERT NLI fixture's zero-shot pipeline as float TFLite models: softmax over the
    labels, multi_label, and one label alone."""
    tmp = tmp_path_factory.mktemp("zero_shot")
    pipe = load_pipeline("zero-shot-classification", "hf_tasks/bert_nli")
    cases = {"softmax": dict(candidate_labels=LABELS),
             "multi": dict(candidate_labels=LABELS, multi_label=True,
                           hypothesis_template="This text is about {}."),
             "one": dict(candidate_labels="weather")}
    for name, options in cases.items():
        pipe.export_tflite(str(tmp / f"{name}.tflite"), **options)
    return pipe, tmp, cases


@pytest.mark.parametrize("case", ["softmax", "multi", "one"])
def test_zero_shot_equals_the_pipeline(zero_shot, case):
    """Labels best first as the pipeline orders them, scores within 1e-4; `label_scores`
    in candidate-label order. (An empty text, which the pipeline refuses, is left out.)"""
    pipe, tmp, cases = zero_shot
    texts = [t for t in TEXTS if t]
    outputs = run(tmp / f"{case}.tflite", text=strings(texts))
    called = pipe(texts, **cases[case])
    labels = cases[case]["candidate_labels"]
    labels = [labels] if isinstance(labels, str) else labels
    assert outputs["labels"].shape == outputs["scores"].shape == (len(texts), len(labels))
    for row, theirs in enumerate(called):
        assert [label.decode() for label in outputs["labels"][row]] == theirs["labels"]
        np.testing.assert_allclose(outputs["scores"][row], theirs["scores"], atol=1e-4)
        by_label = dict(zip(theirs["labels"], theirs["scores"]))
        np.testing.assert_allclose(outputs["label_scores"][row],
                                   [by_label[label] for label in labels], atol=1e-4)
    if case == "softmax":
        np.testing.assert_allclose(outputs["scores"].sum(-1), 1.0, atol=1e-5)
        assert len({tuple(row) for row in outputs["labels"].tolist()}) > 1
    assert_only_allowed_ops(tmp / f"{case}.tflite")


def test_zero_shot_refusals(tmp_path):
    pipe = load_pipeline("zero-shot-classification", "hf_tasks/bert_nli")
    with pytest.raises(ValueError, match="candidate_labels=None: a TFLite zero-shot"):
        pipe.export_tflite(str(tmp_path / "z.tflite"))
    with pytest.raises(ValueError, match="hypothesis_template \"No placeholder.\""):
        pipe.export_tflite(str(tmp_path / "z.tflite"), candidate_labels=["a"],
                           hypothesis_template="No placeholder.")
    with pytest.raises(ValueError, match="no room for the text"):
        pipe.export_tflite(str(tmp_path / "z.tflite"), candidate_labels=["word " * 200])
    assert not (tmp_path / "z.tflite").exists()


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("features")
    pipe = load_pipeline("feature-extraction", "hf_tasks/distil_bert_seq_single")
    pipe.export_tflite(str(tmp / "features.tflite"), truncation=True)
    return pipe, tmp / "features.tflite"


def test_feature_extraction_equals_the_pipeline(features):
    """Every token's features (the pipeline's [1, tokens, hidden]) in the first
    `num_tokens` rows, zeros after (padding_mask 0); a text past the model is cut."""
    pipe, path = features
    outputs = run(path, text=strings(TEXTS))
    called = pipe(TEXTS, truncation=True, return_tensors=True)
    for row, theirs in enumerate(called):
        count = outputs["num_tokens"][row]
        assert count == theirs.shape[1] == outputs["padding_mask"][row].sum()
        np.testing.assert_allclose(outputs["features"][row, :count], theirs[0], atol=1e-4)
        assert not outputs["features"][row, count:].any()
    assert outputs["num_tokens"].max() == pipe.max_length
    # serving_ids: the backbone's raw outputs (DistilBERT: no segment_ids, no pooled_output)
    # on kbert's ids, which are the features' ids: the same vectors on the real tokens.
    ids = packed(pipe.tokenizer, TEXTS, pipe.max_length)
    raw = run(path, "serving_ids", **ids)
    assert set(raw) == {"sequence_output"}
    np.testing.assert_allclose(
        raw["sequence_output"],
        keras_outputs(pipe.source.runner.model, ids)["sequence_output"], atol=1e-4)
    np.testing.assert_array_equal(ids["padding_mask"], outputs["padding_mask"])
    real = outputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(raw["sequence_output"][real], outputs["features"][real],
                               atol=1e-4)
    assert_only_allowed_ops(path)


def test_feature_extraction_needs_truncation(tmp_path):
    pipe = load_pipeline("feature-extraction", "hf_tasks/distil_bert_seq_single")
    with pytest.raises(ValueError, match="truncation=False: a TFLite model cannot refuse"):
        pipe.export_tflite(str(tmp_path / "f.tflite"))
    assert not (tmp_path / "f.tflite").exists()


def test_sentence_embeddings_equal_the_pipeline(tmp_path):
    """The pooled, normalised embedding (sentence-transformers' mean pooling + normalize)."""
    pipe = load_pipeline("sentence-embeddings", "hf_tasks/st_bert_mean_normalize")
    pipe.export_tflite(str(tmp_path / "embed.tflite"))
    outputs = run(tmp_path / "embed.tflite", text=strings(TEXTS))
    theirs = pipe(TEXTS, return_tensors=True)
    np.testing.assert_allclose(outputs["embedding"], theirs, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(outputs["embedding"], axis=1), 1.0, atol=1e-5)
    assert np.abs(outputs["embedding"][0] - outputs["embedding"][-1]).max() > 1e-2
    # serving_ids: the TextEmbedder's embedding on kbert's ids, the pipeline's answer.
    ids = packed(pipe.tokenizer, TEXTS, pipe.max_length)
    raw = run(tmp_path / "embed.tflite", "serving_ids", **ids)
    assert set(raw) == {"embedding"}
    np.testing.assert_allclose(raw["embedding"],
                               keras_outputs(pipe.source.runner.model, ids), atol=1e-4)
    np.testing.assert_allclose(raw["embedding"], outputs["embedding"], atol=1e-4)
    assert_only_allowed_ops(tmp_path / "embed.tflite")


# Masks glued to words, at the start and end, twice, with CJK and emoji; a lower-case
# "[mask]" and a spaced "[ MASK ]" are text, as in the pipeline; a mask at the start of
# 10,000 characters (the text is cut after it).
MASKED = ["a [MASK] b", "x[MASK]y", "[MASK]", "the [MASK] of [MASK].",
          "[mask] and [MASK] [ MASK ] [MASK][MASK]", "東京 [MASK] 😀 🚀 👍🏽!",
          "Héllo naïve [MASK] École", "e\u0301te\u0301 [MASK]\u00e9t\u00e9",
          "[MASK] " + ("the new york city is big " * 400)[:10000]]


@pytest.fixture(scope="module")
def fill_mask(tmp_path_factory):
    """The DistilBERT fixture's fill-mask pipeline as float TFLite models: top 3 of the
    vocabulary at up to two masks, and the top target of two."""
    tmp = tmp_path_factory.mktemp("fill_mask")
    pipe = load_pipeline("fill-mask", "hf_tiny/distil_bert")
    cases = {"top": dict(top_k=3, truncation=True),
             "targets": dict(targets=["said", "zzz"], top_k=1, truncation=True)}
    pipe.export_tflite(str(tmp / "top.tflite"), max_masks=2, **cases["top"])
    pipe.export_tflite(str(tmp / "targets.tflite"), **cases["targets"])
    return pipe, tmp, cases


@pytest.mark.parametrize("case", ["top", "targets"])
def test_fill_mask_equals_the_pipeline(fill_mask, case):
    """The model's ids are the pipeline's (each literal "[MASK]" one [MASK] token); at each
    of the first `max_masks` masks the tokens, their strings and scores (1e-4) are the
    pipeline's; `num_masks` counts every mask."""
    from tests.pipelines.conftest import ids_of

    pipe, tmp, cases = fill_mask
    outputs = run(tmp / f"{case}.tflite", text=strings(MASKED))
    ids = ids_of(pipe)
    masks = outputs["mask_positions"].shape[1]
    for row, text in enumerate(MASKED):
        expected = ids(text)
        if len(expected) > pipe.max_length:
            expected = expected[:pipe.max_length - 1] + expected[-1:]
        mask = outputs["padding_mask"][row].astype(bool)
        assert outputs["token_ids"][row][mask].tolist() == expected
        theirs = pipe(text, **cases[case])
        theirs = theirs if isinstance(theirs[0], list) else [theirs]
        assert outputs["num_masks"][row] == len(theirs)
        for m, options in enumerate(theirs[:masks]):
            assert outputs["token"][row, m].tolist() == [o["token"] for o in options]
            assert [s.decode() for s in outputs["token_str"][row, m]] == \
                [o["token_str"] for o in options]
            np.testing.assert_allclose(outputs["score"][row, m],
                                       [o["score"] for o in options], atol=1e-4)
        for m in range(len(theirs), masks):
            assert outputs["token"][row, m].tolist() == [-1] * outputs["token"].shape[2]
            assert outputs["mask_positions"][row, m] == -1
    if case == "top":
        assert outputs["num_masks"].tolist() == [1, 1, 1, 2, 3, 1, 1, 1, 1]
    assert signatures(tmp / f"{case}.tflite") == {"serving_default"}  # a pretrainer: no ids
    assert_only_allowed_ops(tmp / f"{case}.tflite")


def test_fill_mask_without_a_mask(fill_mask):
    """A text without a mask (the pipeline refuses it): num_masks 0, no tokens."""
    _, tmp, _ = fill_mask
    outputs = run(tmp / "top.tflite", text=strings(["no mask here", "", "[mask]"]))
    assert outputs["num_masks"].tolist() == [0, 0, 0]
    assert (outputs["token"] == -1).all() and (outputs["token_str"] == b"").all()
    assert (outputs["score"] == 0).all()


def test_fill_mask_refusals(tmp_path):
    pipe = load_pipeline("fill-mask", "hf_tiny/distil_bert")
    with pytest.raises(ValueError, match="truncation=False: a TFLite model cannot refuse"):
        pipe.export_tflite(str(tmp_path / "m.tflite"))
    with pytest.raises(ValueError, match="max_masks must be a positive integer.*got 0"):
        pipe.export_tflite(str(tmp_path / "m.tflite"), truncation=True, max_masks=0)
    with pytest.raises(TypeError, match="takes no option 'max_masks'"):
        load_pipeline("text-classification", "hf_tasks/bert_seq_single").export_tflite(
            str(tmp_path / "m.tflite"), truncation=True, max_masks=2)
    albert = load_pipeline("fill-mask", "hf_tiny/albert")
    with pytest.raises(ValueError, match="Only a WordPiece fill-mask model"):
        albert.export_tflite(str(tmp_path / "m.tflite"), truncation=True)
    assert not (tmp_path / "m.tflite").exists()


def test_albert_stays_refused_fast_bert_normalizer_differs():
    """Why ALBERT's SentencePiece tokenizer is refused: tensorflow-text's FastBertNormalizer
    (the one normaliser with a TFLite kernel that lower-cases and strips accents) before
    FastSentencepieceTokenizer gives ALBERT's ids on the hostile texts but not on a Hindi
    vowel sign (ALBERT keeps marks of combining class 0, FastBertNormalize deletes every
    Mn), control and format characters, or "ß"."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    from kbert.serving.runtimes import tflite_tokenizer as text_tokenizer

    tokenizer = load_pipeline("text-classification", "hf_tasks/albert_seq_single").tokenizer
    normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=True)
    pieces = tf_text.FastSentencepieceTokenizer(tokenizer.model)

    def ids(texts):
        return (pieces.tokenize(normalizer.normalize(tf.constant(texts))).to_list(),
                tokenizer.tokenize(tf.constant(texts)).to_list())

    ours, theirs = ids(HOSTILE + ["A great movie!", "Héllo naïve café"])
    assert ours == theirs
    for text in ["a\u0941b", "a\x00b c", "ab\u200bcd", "stra\u00dfe"]:
        ours, theirs = ids([text])
        assert ours != theirs, text
    with pytest.raises(ValueError, match="ALBERT.*cannot go inside.*Indic and Thai"):
        text_tokenizer(tokenizer, split_literals=True)


def test_deberta_v3_zero_shot_equals_the_pipeline(tmp_path):
    """DeBERTa-v3's SentencePiece tokenizer in the zero-shot model (FastSentencepieceTokenizer)."""
    pipe = load_pipeline("zero-shot-classification", "hf_tasks/deberta_v3_nli")
    labels = ["sports", "politics"]
    pipe.export_tflite(str(tmp_path / "z.tflite"), candidate_labels=labels)
    texts = [t for t in TEXTS if t]
    outputs = run(tmp_path / "z.tflite", text=strings(texts))
    for row, theirs in enumerate(pipe(texts, candidate_labels=labels)):
        assert [label.decode() for label in outputs["labels"][row]] == theirs["labels"]
        np.testing.assert_allclose(outputs["scores"][row], theirs["scores"], atol=1e-4)
    assert_only_allowed_ops(tmp_path / "z.tflite")


def test_quantized_sentence_embeddings(tmp_path, capsys):
    """Dynamic int8 and float16 embeddings against float32 on 300 held-out texts."""
    pipe = load_pipeline("sentence-embeddings", "hf_tasks/st_bert_mean_normalize")
    texts = strings(held_out(300, seed=11))
    embeddings = {}
    for quantize in (None, "dynamic", "float16"):
        path = tmp_path / f"{quantize}.tflite"
        pipe.export_tflite(str(path), quantize=quantize)
        assert_only_allowed_ops(path)
        embeddings[quantize] = run(path, text=texts)["embedding"]
    for quantize, floor in (("dynamic", 0.999), ("float16", 0.99999)):
        cosine = float((embeddings[quantize] * embeddings[None]).sum(-1).min())
        with capsys.disabled():
            print(f"\nsentence embeddings, {quantize}: smallest cosine to float32 {cosine:.6f} "
                  f"on 300 held-out texts, largest difference "
                  f"{np.abs(embeddings[quantize] - embeddings[None]).max():.4g}")
        assert cosine > floor
