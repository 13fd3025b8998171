"""TFLite models beyond text classification on BERT: MobileBERT, token classification,
question answering. Each is its pipeline's export (`kbert.export(model, path,
format="tflite", tokenizer=...)`, `pipe.export_tflite`), run in ai-edge-litert's interpreter
with tensorflow-text's kernels: its `serving_default` (the pipeline's answers) compared with
the SavedModel / pipeline on the same strings, hostile ones included; its `serving_ids` (the
model's raw outputs) with the Keras model / the SavedModel's `serving_ids` on kbert's ids."""

import numpy as np
import pytest

import kbert
from kbert.serving.runtimes import interpreter, model_ops
from kbert.pipelines.tflite_entities import answer, char_offset, entities
from tests.export.test_tflite_pipelines import (
    HOSTILE,
    assert_only_allowed_ops,
    keras_outputs,
    packed,
    run,
    saved,
    strings,
)
from tests.pipelines.conftest import ids_of, load_pipeline

SEQUENCE_LENGTH = 24
TEXTS = HOSTILE + ["A great movie!", "Awful.", "It was fine, I guess.",
                   "John Smith lives in New York and works at Google."]


def class_scores(outputs, names):
    """A text-classification export's answers with top_k=None (`label`, `score` [B, classes],
    best first) as scores [B, classes] in `names`' order."""
    index = {name.encode(): i for i, name in enumerate(names)}
    scores = np.zeros((len(outputs["score"]), len(names)), np.float32)
    for row, (labels, values) in enumerate(zip(outputs["label"], outputs["score"])):
        assert sorted(labels.tolist()) == sorted(index), labels  # every class, once
        scores[row, [index[label] for label in labels]] = values
    return scores


def softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def mobile_bert(tmp_path_factory):
    """The MobileBERT fixture's TextClassifier exported as its pipeline (every class's score,
    texts cut to the model) to TFLite (`model.export(format="tflite")`) and to a SavedModel
    (the pipeline's `export`)."""
    tmp = tmp_path_factory.mktemp("mobile_bert")
    pipe = load_pipeline("text-classification", "hf_tasks/mobile_bert_seq_single")
    options = dict(top_k=None, truncation=True)
    pipe.source.runner.model.export(str(tmp / "model.tflite"), format="tflite",
                                    tokenizer=pipe.tokenizer, **options)
    pipe.export(str(tmp / "saved"), **options)
    return pipe, tmp, options


@pytest.mark.slow
def test_mobile_bert_classifier_equals_its_saved_model(mobile_bert):
    """`serving_ids` (the raw logits) on kbert's ids of the strings: the SavedModel's
    `serving_ids` and the Keras model's (1e-4); their softmax is every class's score that
    `serving_default` gives the strings."""
    pipe, tmp, _ = mobile_bert
    ids = packed(pipe.tokenizer, TEXTS, pipe.max_length)
    logits = run(tmp / "model.tflite", "serving_ids", **ids)["logits"]
    np.testing.assert_allclose(logits, saved(tmp / "saved", "serving_ids", **ids)["logits"],
                               atol=1e-4)
    np.testing.assert_allclose(logits, keras_outputs(pipe.source.runner.model, ids),
                               atol=1e-4)
    answers = run(tmp / "model.tflite", text=strings(TEXTS))
    probabilities = class_scores(answers, pipe.source.label_names)
    np.testing.assert_allclose(probabilities, softmax(logits), atol=1e-4)
    assert np.ptp(probabilities, axis=0).max() > 1e-3  # not one row for every text
    assert_only_allowed_ops(tmp / "model.tflite")


@pytest.mark.slow
def test_mobile_bert_pipeline_equals_its_saved_model_and_call(mobile_bert):
    pipe, tmp, options = mobile_bert
    ours = run(tmp / "model.tflite", text=strings(TEXTS))
    theirs = saved(tmp / "saved", text=strings(TEXTS))
    assert ours["label"].tolist() == theirs["label"].tolist()
    np.testing.assert_allclose(ours["score"], theirs["score"], atol=1e-4)
    called = pipe(TEXTS, **options)
    assert [[d["label"].encode() for d in row] for row in called] == ours["label"].tolist()
    np.testing.assert_allclose([[d["score"] for d in row] for row in called], ours["score"],
                               atol=1e-4)


# The one documented offset difference: an accent written as a combining character and
# stripped by the uncased normaliser is inside the span of the piece before it in TFLite
# (FastBertNormalize), outside it in the pipeline (transformers' offsets).
DECOMPOSED = "e\u0301te\u0301 \u00e9t\u00e9"
STRATEGIES = ("none", "simple", "first", "average", "max")


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """The BERT token-classification fixture's pipeline as a float TFLite model."""
    tmp = tmp_path_factory.mktemp("tagger")
    pipe = load_pipeline("token-classification", "hf_tasks/bert_token")
    pipe.export_tflite(str(tmp / "float.tflite"))
    return pipe, tmp


def same_entities(ours, theirs, offsets=True):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        skip = {"score"} | (set() if offsets else {"start", "end"})
        assert {k: v for k, v in a.items() if k not in skip} == \
            {k: v for k, v in b.items() if k not in skip}
        assert abs(a["score"] - b["score"]) < 1e-4


@pytest.mark.slow
def test_token_classifier_gives_the_pipelines_entities(tagger):
    """Every token's tag, score and byte span from TFLite, grouped on the host by
    `entities`, equal the pipeline's call for every aggregation strategy."""
    pipe, tmp = tagger
    names = pipe.source.label_names
    outputs = run(tmp / "float.tflite", text=strings(TEXTS))
    count = 0
    for strategy in STRATEGIES:
        called = pipe(TEXTS, aggregation_strategy=strategy)
        for row, text in enumerate(TEXTS):
            ours = entities(text, outputs, row, names, aggregation_strategy=strategy)
            same_entities(ours, called[row], offsets=text != DECOMPOSED)
            count += len(ours)
    assert count > 300  # the fixture's random tags: many entities compared
    row = TEXTS.index(DECOMPOSED)
    ours = entities(DECOMPOSED, outputs, row, names)
    theirs = pipe(DECOMPOSED)
    assert (ours[0]["start"], ours[0]["end"]) == (0, 2)  # "e\u0301"
    assert (theirs[0]["start"], theirs[0]["end"]) == (0, 1)  # "e"
    assert_only_allowed_ops(tmp / "float.tflite")


@pytest.mark.slow
def test_token_classifier_ids_bytes_and_logits(tagger):
    """The TFLite ids are kbert's; `starts` / `ends` are UTF-8 byte offsets; the logits
    are the Keras model's on those ids (1e-4); tokens past the model are cut."""
    pipe, tmp = tagger
    outputs = run(tmp / "float.tflite", text=strings(TEXTS))
    ids = ids_of(pipe)
    for row, text in enumerate(TEXTS):
        expected = ids(text)
        if len(expected) > pipe.max_length:
            expected = expected[:pipe.max_length - 1] + expected[-1:]
        mask = outputs["padding_mask"][row].astype(bool)
        assert outputs["token_ids"][row][mask].tolist() == expected
        data = text.encode("utf-8")
        for token, start, end in zip(outputs["tokens"][row], outputs["starts"][row],
                                     outputs["ends"][row]):
            if start >= 0 and token != b"[UNK]" and text != DECOMPOSED:
                piece = data[start:end].decode("utf-8").lower()
                assert token.decode("utf-8").removeprefix("##") in (piece, strip(piece))
    assert_logits_from_ids(tmp / "float.tflite", pipe.source.runner.model, outputs)
    np.testing.assert_array_equal(outputs["label_id"], np.argmax(outputs["logits"], -1))


def assert_logits_from_ids(path, model, outputs):
    """A token classifier's export: the logits of `serving_default` (`outputs`) are the Keras
    model's on its ids, and `serving_ids`' on them (1e-4)."""
    ids = {"token_ids": outputs["token_ids"], "padding_mask": outputs["padding_mask"],
           "segment_ids": np.zeros_like(outputs["token_ids"])}
    np.testing.assert_allclose(outputs["logits"], keras_outputs(model, ids), atol=1e-4)
    np.testing.assert_allclose(run(path, "serving_ids", **ids)["logits"], outputs["logits"],
                               atol=1e-4)


def strip(text):
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def test_token_classification_refusals(tmp_path):
    pipe = load_pipeline("token-classification", "hf_tasks/bert_token")
    with pytest.raises(ValueError, match="aggregation_strategy='simple'.*on the host"):
        pipe.export_tflite(str(tmp_path / "p.tflite"), aggregation_strategy="simple")
    with pytest.raises(ValueError, match="Unknown aggregation_strategy 'best'"):
        entities("a", {}, 0, ["O"], aggregation_strategy="best")
    assert not (tmp_path / "p.tflite").exists()


QUESTIONS = ["Where does John live?", "東京都?", "what 😀?", "Who is Müller?", "city?",
             "the new york city is big " * 3]
CONTEXTS = ["John Smith lives in New York and works at Google.", "東京都 日本",
            "😀 🚀 emoji 👍🏽!", "Héllo naïve café École Ωmega Müller",
            "Paris!!! (the city)... new-york's 1990s", "Ünïcödé ÀÉÎÕÜ ąčęėįšųūž"]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The BERT question-answering fixture's pipeline as a float TFLite model, and its
    outputs on every question with every context."""
    tmp = tmp_path_factory.mktemp("reader")
    pipe = load_pipeline("question-answering", "hf_tasks/bert_qa")
    pipe.export_tflite(str(tmp / "float.tflite"))
    pairs = [(q, c) for q in QUESTIONS for c in CONTEXTS]
    outputs = interpreter(tmp / "float.tflite").get_signature_runner("serving_default")(
        question=strings([q for q, _ in pairs]), context=strings([c for _, c in pairs]))
    return pipe, tmp, pairs, outputs


@pytest.mark.slow
def test_question_answerer_best_span_equals_the_pipeline(reader):
    """The span chosen in the graph (UTF-8 bytes of the context) is the pipeline's with
    top_k=1, align_to_words=False, score within 1e-4; the host-side `answer` gives the
    pipeline's answers for its other options."""
    pipe, tmp, pairs, outputs = reader
    for row, (question, context) in enumerate(pairs):
        theirs = pipe(question=question, context=context, align_to_words=False)
        data = context.encode("utf-8")
        start, end = outputs["answer_start"][row], outputs["answer_end"][row]
        assert data[start:end].decode("utf-8") == theirs["answer"]
        assert (char_offset(context, start), char_offset(context, end)) == \
            (theirs["start"], theirs["end"])
        assert abs(outputs["score"][row] - theirs["score"]) < 1e-4
        for options in ({}, dict(top_k=3, handle_impossible_answer=True)):
            ours = answer(context, outputs, row, **options)
            theirs = pipe(question=question, context=context, **options)
            ours, theirs = [x if isinstance(x, list) else [x] for x in (ours, theirs)]
            assert len(ours) == len(theirs)
            for a, b in zip(ours, theirs):
                assert {k: v for k, v in a.items() if k != "score"} == \
                    {k: v for k, v in b.items() if k != "score"}
                assert abs(a["score"] - b["score"]) < 1e-4
    assert len({a.decode() for a in outputs["tokens"][:, 1]}) > 1
    assert_answerer_logits_from_ids(tmp / "float.tflite", pipe, outputs)
    assert_only_allowed_ops(tmp / "float.tflite")


def assert_answerer_logits_from_ids(path, pipe, outputs):
    """A question answerer's export: `serving_ids` on the ids of `serving_default`'s window
    ([CLS] question [SEP] context [SEP]: segment 0, then 1) gives its start and end logits
    (1e-4), the Keras model's."""
    token_ids = outputs["token_ids"]
    assert token_ids.shape[1] == pipe.max_length  # one window of the model's length
    sep = token_ids == pipe.tokenizer.sep_id
    before = np.cumsum(sep, -1) - sep  # the [SEP]s before each position
    mask = before < 2
    np.testing.assert_array_equal(mask, token_ids != pipe.tokenizer.pad_id)
    ids = {"token_ids": token_ids, "segment_ids": (mask & (before == 1)).astype(np.int32),
           "padding_mask": mask.astype(np.int32)}
    raw = run(path, "serving_ids", **ids)
    keras = keras_outputs(pipe.source.runner.model, ids)
    assert set(raw) == {"start_logits", "end_logits"}
    for name in raw:
        np.testing.assert_allclose(raw[name], outputs[name], atol=1e-4)
        np.testing.assert_allclose(raw[name], keras[name], atol=1e-4)


@pytest.mark.slow
def test_question_answerer_reads_one_window(reader):
    """A context longer than the window is cut (the pipeline reads it in windows): the
    answer lies in the first window; an empty context gives no span (-1)."""
    pipe, tmp, _, _ = reader
    contexts = [("the new york city is big " * 400)[:10000], "", "   \t\n "]
    outputs = interpreter(tmp / "float.tflite").get_signature_runner("serving_default")(
        question=strings(["where?"] * 3), context=strings(contexts))
    window = outputs["ends"][0].max()
    assert 0 < window < len(contexts[0]) // 10  # 128 tokens of 10,000 characters
    assert 0 <= outputs["answer_start"][0] < outputs["answer_end"][0] <= window
    assert outputs["answer_start"][1:].tolist() == [-1, -1]
    assert outputs["score"][1:].tolist() == [0.0, 0.0]


def test_question_answering_refusals(tmp_path):
    pipe = load_pipeline("question-answering", "hf_tasks/bert_qa")
    with pytest.raises(ValueError, match="top_k=3: a TFLite question answerer reads one "):
        pipe.export_tflite(str(tmp_path / "p.tflite"), top_k=3)
    assert not (tmp_path / "p.tflite").exists()


def test_deberta_v3_sentence_piece_ids_equal_kberts():
    """DeBERTa-v3's SentencePiece model (its nmt_nfkc normalisation inside) in
    tensorflow-text's FastSentencepieceTokenizer gives kbert's ids."""
    import tensorflow as tf

    from kbert.serving.tflite import tokenization_differences
    from kbert.serving.runtimes import tflite_tokenizer as text_tokenizer

    tokenizer = load_pipeline("text-classification",
                              "hf_tasks/deberta_v3_seq_single").tokenizer
    texts = HOSTILE + ["A great movie!", "It's 1,000 dollars.", "\ufb01 \uff21\uff22 \u00df",
                       "tab\tnull\x00 x", "ab\u200bcd soft\u00adhyphen", "[MASK] literal"]
    ours = text_tokenizer(tokenizer, split_literals=True).tokenize(tf.constant(texts))
    assert ours.to_list() == tokenizer.tokenize(tf.constant(texts)).to_list()
    assert tokenization_differences(tokenizer, sorted(set("".join(texts)))) == []


@pytest.mark.slow
def test_deberta_v3_pipeline_equals_its_saved_model_and_call(tmp_path):
    pipe = load_pipeline("text-classification", "hf_tasks/deberta_v3_seq_single")
    options = dict(top_k=None, truncation=True)
    pipe.export_tflite(str(tmp_path / "p.tflite"), **options)
    pipe.export(str(tmp_path / "saved"), **options)
    ours = run(tmp_path / "p.tflite", text=strings(TEXTS))
    theirs = saved(tmp_path / "saved", text=strings(TEXTS))
    assert ours["label"].tolist() == theirs["label"].tolist()
    np.testing.assert_allclose(ours["score"], theirs["score"], atol=1e-4)
    called = pipe([t for t in TEXTS if len(t) < 1000], **options)
    short = [i for i, t in enumerate(TEXTS) if len(t) < 1000]
    np.testing.assert_allclose([[d["score"] for d in row] for row in called],
                               ours["score"][short], atol=1e-4)
    # serving_ids: the raw logits on kbert's ids, the SavedModel's; their softmax the scores.
    ids = packed(pipe.tokenizer, TEXTS, pipe.max_length)
    logits = run(tmp_path / "p.tflite", "serving_ids", **ids)["logits"]
    np.testing.assert_allclose(logits, saved(tmp_path / "saved", "serving_ids", **ids)["logits"],
                               atol=1e-4)
    np.testing.assert_allclose(class_scores(ours, pipe.source.label_names), softmax(logits),
                               atol=1e-4)
    assert_only_allowed_ops(tmp_path / "p.tflite")
    assert "TFText>FastSentencepieceTokenize" in model_ops((tmp_path / "p.tflite").read_bytes())


def test_sentence_piece_span_tasks_are_refused(tmp_path):
    pipe = load_pipeline("token-classification", "hf_tasks/deberta_v3_token")
    with pytest.raises(ValueError, match="Only a WordPiece token classifier"):
        pipe.export_tflite(str(tmp_path / "p.tflite"))
    with pytest.raises(ValueError, match="Only a WordPiece token classifier"):
        kbert.export(pipe.source.runner.model, str(tmp_path / "p.tflite"), format="tflite",
                     tokenizer=pipe.tokenizer)
    assert not (tmp_path / "p.tflite").exists()


def test_byte_pair_tokenizer_is_refused(tmp_path):
    pipe = load_pipeline("text-classification", "hf_tasks/roberta_seq_single")
    with pytest.raises(ValueError, match="BytePairTokenizer .RoBERTa. cannot go inside"):
        pipe.export_tflite(str(tmp_path / "p.tflite"), truncation=True)
    assert not (tmp_path / "p.tflite").exists()
