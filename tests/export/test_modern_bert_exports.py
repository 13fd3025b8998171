"""ModernBERT task models as string-in SavedModels and TFLite models: the mean-pooling,
biases-on classifier of hf_tasks/modern_bert_seq_multi (sliding-window layers computed in
chunks inside the graph) exports as its pipeline (`model.export`: tokenization in the graph)
and answers as kbert's pipeline; its TFLite model runs on built-in ops and tensorflow-text's
kernels alone (no Flex op: rotary positions, the chunked window, exact GELU and LayerNorm
without a bias all convert) with the SavedModel's scores and logits."""

import numpy as np
import pytest

from kbert.serving import export_tflite
from tests.export.test_tflite import (HOSTILE, assert_only_allowed_ops, class_scores, raw, run,
                                      saved, strings)
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
    export_tflite(model, str(tmp / "model.tflite"), tokenizer, sequence_length=SEQUENCE_LENGTH)
    calls, placement = _calls("text-classification", TEXTS, OPTIONS)
    results = [saved(tmp / "saved", signature, **inputs) for signature, inputs in calls]
    return pipe, tmp, results[0], _answer("text-classification", TEXTS, OPTIONS, results,
                                          placement)


def test_the_saved_model_answers_strings_as_the_pipeline(exported):
    pipe, _, _, answers = exported
    reference.assert_same(answers, pipe(TEXTS, **OPTIONS), tolerance=1e-5)


def test_the_tflite_model_equals_the_saved_model_on_built_in_ops(exported):
    pipe, tmp, theirs, _ = exported
    texts = strings(TEXTS)
    ours = run(tmp / "model.tflite", text=texts)
    names = pipe.source.label_names
    probabilities = class_scores(theirs, names)
    np.testing.assert_allclose(ours["probabilities"], probabilities, atol=1e-5)
    # The raw logits: the SavedModel's serving_ids on kbert's ids, cut as TFLite cuts them.
    logits = raw(tmp / "saved", pipe.tokenizer, texts, sequence_length=SEQUENCE_LENGTH)
    np.testing.assert_allclose(ours["logits"], logits["logits"], atol=1e-4)
    # TFLite lists every class name, the chosen ones (above 0.5) first, in class order.
    chosen = [[names[i].encode() for i in np.flatnonzero(row > 0.5)] for row in probabilities]
    assert ours["num_labels"].tolist() == [len(row) for row in chosen]
    assert [row[:len(c)] for row, c in zip(ours["labels"].tolist(), chosen)] == chosen
    assert 0 < ours["num_labels"].sum() < len(names) * len(TEXTS)  # some chosen, not all
    assert_only_allowed_ops(tmp / "model.tflite")
