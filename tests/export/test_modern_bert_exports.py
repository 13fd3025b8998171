"""ModernBERT task models as string-in SavedModels and TFLite models: the mean-pooling,
biases-on classifier of hf_tasks/modern_bert_seq_multi (sliding-window layers computed in
chunks inside the graph) exports as its pipeline (`model.export`: tokenization in the graph)
and answers as kbert's pipeline; its TFLite export (`model.export(format="tflite")`) runs on
built-in ops and tensorflow-text's kernels alone (no Flex op: rotary positions, the chunked
window, exact GELU and LayerNorm without a bias all convert) with the SavedModel's answers
(`serving_default`) and raw logits (`serving_ids`)."""

import numpy as np
import pytest

from kbert.serving import metadata
from tests.export.test_tflite_pipelines import (HOSTILE, assert_only_allowed_ops, packed,
                                                run, saved, strings)
from tests.export.test_tflite_tasks import class_scores
from tests.pipelines import reference
from tests.pipelines.conftest import load_pipeline
from tests.pipelines.test_export import _answer, _calls

SEQUENCE_LENGTH = 24  # several windows of 6 (3 tokens each side)
TEXTS = HOSTILE + ["John Smith works for Google in London.", "Paris is the capital of France.",
                   "I loved this movie, it was really great! " * 3]
# Every class's score (multi-label: sigmoids), texts cut as the TFLite model cuts them.
OPTIONS = dict(top_k=None, truncation=True, max_length=SEQUENCE_LENGTH)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("modern_bert")
    pipe = load_pipeline("text-classification", "hf_tasks/modern_bert_seq_multi")
    model, tokenizer = pipe.source.runner.model, pipe.tokenizer
    model.export(str(tmp / "saved"), tokenizer=tokenizer, **OPTIONS)
    model.export(str(tmp / "model.tflite"), format="tflite", tokenizer=tokenizer, **OPTIONS)
    calls, placement = _calls("text-classification", TEXTS, OPTIONS)
    results = [saved(tmp / "saved", signature, **inputs) for signature, inputs in calls]
    return pipe, tmp, results[0], _answer("text-classification", TEXTS, OPTIONS, results,
                                          placement)


def test_the_saved_model_answers_strings_as_the_pipeline(exported):
    pipe, _, _, answers = exported
    reference.assert_same(answers, pipe(TEXTS, **OPTIONS), tolerance=1e-5)


def test_the_tflite_model_equals_the_saved_model_on_built_in_ops(exported):
    """The answers (every class's sigmoid, best first) are the SavedModel's (the best label;
    every class's score within 1e-5); the raw logits (`serving_ids`, on ids as long as the
    export packs its texts) the SavedModel's `serving_ids` (1e-4), and their sigmoids the
    answers' scores."""
    pipe, tmp, theirs, _ = exported
    ours = run(tmp / "model.tflite", text=strings(TEXTS))
    names = pipe.source.label_names
    assert ours["label"][:, 0].tolist() == theirs["label"][:, 0].tolist()
    np.testing.assert_allclose(class_scores(ours, names), class_scores(theirs, names),
                               atol=1e-5)
    assert metadata.read(tmp / "model.tflite")["ids_length"] == SEQUENCE_LENGTH
    ids = packed(pipe.tokenizer, TEXTS, SEQUENCE_LENGTH)
    logits = run(tmp / "model.tflite", "serving_ids", **ids)["logits"]
    np.testing.assert_allclose(logits, saved(tmp / "saved", "serving_ids", **ids)["logits"],
                               atol=1e-4)
    np.testing.assert_allclose(class_scores(ours, names), 1 / (1 + np.exp(-logits)),
                               atol=1e-4)
    chosen = (class_scores(ours, names) > 0.5).sum()
    assert 0 < chosen < len(names) * len(TEXTS)  # some chosen, not all
    assert_only_allowed_ops(tmp / "model.tflite")
