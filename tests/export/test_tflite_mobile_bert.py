"""MobileBERT in TFLite beyond text classification (that one is in test_tflite_tasks.py):
the token classifier, the question answerer and the zero-shot classifier of the tiny
transformers-made fixtures, exported as their pipelines (`kbert.export(model, path,
format="tflite", tokenizer=...)`, `pipe.export_tflite`), run in ai-edge-litert's interpreter
with tensorflow-text's kernels and compared with the pipeline's call on the same strings,
hostile ones included, and (`serving_ids`, the raw outputs) with the Keras model; no Flex
op."""

import numpy as np
import pytest

import kbert
from kbert.pipelines.tflite_entities import answer, char_offset, entities
from tests.export.test_tflite_pipelines import (
    LABELS,
    assert_only_allowed_ops,
    keras_outputs,
    run,
    strings,
)
from tests.export.test_tflite_tasks import (
    CONTEXTS,
    DECOMPOSED,
    QUESTIONS,
    STRATEGIES,
    TEXTS,
    assert_answerer_logits_from_ids,
    assert_logits_from_ids,
    same_entities,
)
from tests.pipelines.conftest import ids_of, load_pipeline


def export_model(pipe, path):
    """The pipeline's model exported as its pipeline (`kbert.export` of the task model),
    float TFLite."""
    return kbert.export(pipe.source.runner.model, str(path), format="tflite",
                        tokenizer=pipe.tokenizer)


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """The MobileBERT token-classification fixture's TokenClassifier as a float TFLite model
    (its pipeline's export), and its outputs on TEXTS."""
    tmp = tmp_path_factory.mktemp("mobile_bert_tagger")
    pipe = load_pipeline("token-classification", "hf_tasks/mobile_bert_token")
    export_model(pipe, tmp / "model.tflite")
    return pipe, tmp, run(tmp / "model.tflite", text=strings(TEXTS))


def expected_ids(pipe, text, length):
    ids = ids_of(pipe)(text)
    return ids if len(ids) <= length else ids[:length - 1] + ids[-1:]


@pytest.mark.slow
def test_mobile_bert_token_pipeline_gives_the_pipelines_entities(tagger):
    """Every entity (tag, word, index, character offsets, score within 1e-4), grouped on
    the host by `entities`, equals the pipeline's call for every aggregation strategy."""
    pipe, tmp, outputs = tagger
    names = pipe.source.label_names
    count = 0
    for strategy in STRATEGIES:
        called = pipe(TEXTS, aggregation_strategy=strategy)
        for row, text in enumerate(TEXTS):
            ours = entities(text, outputs, row, names, aggregation_strategy=strategy)
            same_entities(ours, called[row], offsets=text != DECOMPOSED)
            count += len(ours)
    assert count > 100, count  # the fixture's random tags: many entities compared
    for row, text in enumerate(TEXTS):
        mask = outputs["padding_mask"][row].astype(bool)
        assert outputs["token_ids"][row][mask].tolist() == \
            expected_ids(pipe, text, pipe.max_length)
    assert outputs["padding_mask"].sum(-1).max() == pipe.max_length  # the long texts cut
    assert_only_allowed_ops(tmp / "model.tflite")


@pytest.mark.slow
def test_mobile_bert_token_classifier_equals_the_keras_model(tagger):
    """The logits are the Keras model's on the export's ids and `serving_ids`' (1e-4); each
    token's tag is the argmax, named by the model's label names."""
    pipe, tmp, outputs = tagger
    assert_logits_from_ids(tmp / "model.tflite", pipe.source.runner.model, outputs)
    np.testing.assert_array_equal(outputs["label_id"], np.argmax(outputs["logits"], -1))
    names = np.array(pipe.source.label_names, dtype=object)
    assert [[t.decode() for t in row] for row in outputs["label"]] == \
        names[outputs["label_id"]].tolist()
    assert len(set(outputs["label_id"][outputs["starts"] >= 0].tolist())) > 1  # tags vary


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The MobileBERT question-answering fixture's QuestionAnswerer as a float TFLite model
    (its pipeline's export), and its outputs on every question with every context."""
    tmp = tmp_path_factory.mktemp("mobile_bert_reader")
    pipe = load_pipeline("question-answering", "hf_tasks/mobile_bert_qa")
    export_model(pipe, tmp / "model.tflite")
    pairs = [(q, c) for q in QUESTIONS for c in CONTEXTS] + [("where?", ""), ("", "a b c")]
    outputs = run(tmp / "model.tflite", question=strings([q for q, _ in pairs]),
                  context=strings([c for _, c in pairs]))
    return pipe, tmp, pairs, outputs


@pytest.mark.slow
def test_mobile_bert_question_answerer_best_span_equals_the_pipeline(reader):
    """The span chosen in the graph is the pipeline's (top_k=1, align_to_words=False) in
    bytes and characters, score within 1e-4; `answer` on the host gives the pipeline's
    answers for its other options; an empty context gives no span."""
    pipe, tmp, pairs, outputs = reader
    compared = 0
    for row, (question, context) in enumerate(pairs):
        if not question or not context:  # the pipeline refuses them
            continue
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
        compared += 1
    assert compared == len(QUESTIONS) * len(CONTEXTS)
    assert len({(s, e) for s, e in zip(outputs["answer_start"], outputs["answer_end"])}) > 3
    empty = pairs.index(("where?", ""))
    assert (outputs["answer_start"][empty], outputs["answer_end"][empty]) == (-1, -1)
    assert outputs["score"][empty] == 0.0
    assert_only_allowed_ops(tmp / "model.tflite")


@pytest.mark.slow
def test_mobile_bert_question_answerer_ids_give_its_logits(reader):
    """`serving_ids` on the ids of each window (empty question and context included) gives
    `serving_default`'s start and end logits and the Keras model's (1e-4)."""
    pipe, tmp, _, outputs = reader
    assert_answerer_logits_from_ids(tmp / "model.tflite", pipe, outputs)


ZERO_SHOT_TEXTS = TEXTS + ["A great game of football.", "We flew to Tokyo 東京 😀"]


@pytest.fixture(scope="module")
def zero_shot(tmp_path_factory):
    """The MobileBERT NLI fixture's zero-shot pipeline as float TFLite models (softmax over
    the labels, and multi_label with a template), and their outputs on ZERO_SHOT_TEXTS."""
    tmp = tmp_path_factory.mktemp("mobile_bert_zero_shot")
    pipe = load_pipeline("zero-shot-classification", "hf_tasks/mobile_bert_nli")
    cases = {"softmax": dict(candidate_labels=LABELS),
             "multi": dict(candidate_labels=LABELS, multi_label=True,
                           hypothesis_template="This text is about {}.")}
    outputs = {}
    for name, options in cases.items():
        pipe.export_tflite(str(tmp / f"{name}.tflite"), **options)
        outputs[name] = run(tmp / f"{name}.tflite", text=strings(ZERO_SHOT_TEXTS))
    return pipe, tmp, cases, outputs


@pytest.mark.slow
@pytest.mark.parametrize("case", ["softmax", "multi"])
def test_mobile_bert_zero_shot_equals_the_pipeline(zero_shot, case):
    """Labels best first as the pipeline orders them, scores and `label_scores` within 1e-4
    on every text the pipeline takes; the empty text (the pipeline refuses it) scores as
    whitespace alone (no piece either way)."""
    pipe, tmp, cases, everything = zero_shot
    outputs = everything[case]
    labels = cases[case]["candidate_labels"]
    rows = [i for i, t in enumerate(ZERO_SHOT_TEXTS) if t]
    called = pipe([ZERO_SHOT_TEXTS[i] for i in rows], **cases[case])
    for row, theirs in zip(rows, called):
        assert [label.decode() for label in outputs["labels"][row]] == theirs["labels"]
        np.testing.assert_allclose(outputs["scores"][row], theirs["scores"], atol=1e-4)
        by_label = dict(zip(theirs["labels"], theirs["scores"]))
        np.testing.assert_allclose(outputs["label_scores"][row],
                                   [by_label[label] for label in labels], atol=1e-4)
    empty, blank = ZERO_SHOT_TEXTS.index(""), ZERO_SHOT_TEXTS.index("   \t\n ")
    np.testing.assert_allclose(outputs["label_scores"][empty], outputs["label_scores"][blank],
                               atol=1e-6)
    if case == "softmax":
        np.testing.assert_allclose(outputs["scores"].sum(-1), 1.0, atol=1e-5)
    # The texts get different scores: the comparison is not of one constant row.
    assert np.ptp(outputs["label_scores"], axis=0).max() > 1e-3
    assert_only_allowed_ops(tmp / f"{case}.tflite")


@pytest.mark.slow
@pytest.mark.parametrize("quantize", ["dynamic", "float16"])
def test_mobile_bert_quantized_zero_shot(zero_shot, tmp_path, quantize, capsys):
    """Quantized MobileBERT zero-shot models hold no Flex op, give float32's top label on
    every text, and each text's scores stay within half the gap between float32's best score
    and its runner-up (the tiny random fixture's scores are near ties: all within 0.007 of
    each other, so a fixed bound such as 0.05 would let the labels reorder); float16 also
    within 1e-3."""
    pipe, _, cases, everything = zero_shot
    path = tmp_path / f"{quantize}.tflite"
    pipe.export_tflite(str(path), quantize=quantize, **cases["softmax"])
    assert_only_allowed_ops(path)
    ours = run(path, text=strings(ZERO_SHOT_TEXTS))["label_scores"]
    floats = everything["softmax"]["label_scores"]
    best, runner_up = np.sort(floats, axis=-1)[:, ::-1][:, :2].T
    gaps = best - runner_up
    differences = np.abs(ours - floats).max(-1)
    with capsys.disabled():
        print(f"\nMobileBERT zero-shot, {quantize}: largest score difference to float32 "
              f"{differences.max():.4g} on {len(ZERO_SHOT_TEXTS)} texts; the smallest gap "
              f"between float32's best score and its runner-up {gaps.min():.4g}, the largest "
              f"ratio of difference to gap {(differences / gaps).max():.3f}")
    np.testing.assert_array_equal(ours.argmax(-1), floats.argmax(-1))
    assert np.all(differences < gaps / 2), (differences, gaps)
    if quantize == "float16":
        assert differences.max() < 1e-3


@pytest.mark.slow
def test_mobile_bert_padding_is_ignored_with_a_nonzero_pad_row(tmp_path):
    """MobileBERT's trigram window reads the next token's vector: a TFLite model pads every
    text to its fixed length, so a pad row that is not zero (a model trained with kbert
    may have one; transformers' checkpoints keep it zero) must not reach the last token.
    Each text's logits (text in, and `serving_ids` on the padded ids) equal the Keras
    model's on its ids alone, unpadded (1e-4)."""
    pipe = load_pipeline("token-classification", "hf_tasks/mobile_bert_token")
    model, tokenizer = pipe.source.runner.model, pipe.tokenizer
    table = model.backbone.embeddings.token_embedding.embeddings
    kept = np.asarray(table).copy()
    changed = kept.copy()
    changed[tokenizer.pad_id] = np.random.default_rng(0).normal(0.0, 1.0, kept.shape[1])
    table.assign(changed)
    try:
        kbert.export(model, str(tmp_path / "model.tflite"), format="tflite",
                     tokenizer=tokenizer)
        texts = ["John Smith lives in New York.", "東京都 日本", "😀 🚀 emoji 👍🏽!", "a"]
        outputs = run(tmp_path / "model.tflite", text=strings(texts))
        raw = run(tmp_path / "model.tflite", "serving_ids", token_ids=outputs["token_ids"],
                  segment_ids=np.zeros_like(outputs["token_ids"]),
                  padding_mask=outputs["padding_mask"])["logits"]
        for row, text in enumerate(texts):
            ids = np.array([expected_ids(pipe, text, pipe.max_length)], dtype="int32")
            assert outputs["padding_mask"][row].sum() == ids.shape[1] < pipe.max_length
            alone = keras_outputs(model, {"token_ids": ids, "padding_mask": np.ones_like(ids),
                                          "segment_ids": np.zeros_like(ids)})[0]
            np.testing.assert_allclose(outputs["logits"][row, :ids.shape[1]], alone,
                                       atol=1e-4)
            np.testing.assert_allclose(raw[row, :ids.shape[1]], alone, atol=1e-4)
    finally:
        table.assign(kept)
