"""ModernBERT task models as string-in SavedModels and TFLite models: the mean-pooling,
biases-on classifier of hf_tasks/modern_bert_seq_multi (sliding-window layers computed in
chunks inside the graph) tokenizes in the graph and scores as kbert's pipeline; its TFLite
model runs on built-in ops and tensorflow-text's kernels alone (no Flex op: rotary positions,
the chunked window, exact GELU and LayerNorm without a bias all convert) with the
SavedModel's outputs."""

import numpy as np
import pytest

from kbert.serving import export_saved_model, export_tflite
from tests.export.test_tflite import HOSTILE, assert_only_allowed_ops, run, saved, strings
from tests.pipelines.conftest import load_pipeline

SEQUENCE_LENGTH = 24  # several windows of 6 (3 tokens each side)
TEXTS = HOSTILE + ["John Smith works for Google in London.", "Paris is the capital of France.",
                   "I loved this movie, it was really great! " * 3]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("modern_bert")
    pipe = load_pipeline("text-classification", "hf_tasks/modern_bert_seq_multi")
    model, tokenizer = pipe.source.runner.model, pipe.tokenizer
    export_saved_model(model, str(tmp / "saved"), tokenizer, sequence_length=SEQUENCE_LENGTH)
    export_tflite(model, str(tmp / "model.tflite"), tokenizer, sequence_length=SEQUENCE_LENGTH)
    return pipe, tmp, saved(tmp / "saved", text=strings(TEXTS))  # loaded once


def test_the_saved_model_scores_strings_as_the_pipeline(exported):
    pipe, _, theirs = exported
    names = pipe.source.runner.model.label_names
    ours = pipe(TEXTS, top_k=None, truncation=True, max_length=SEQUENCE_LENGTH)
    expected = np.array([[{r["label"]: r["score"] for r in row}[n] for n in names]
                         for row in ours])
    np.testing.assert_allclose(theirs["probabilities"], expected, atol=1e-5)


def test_the_tflite_model_equals_the_saved_model_on_built_in_ops(exported):
    _, tmp, theirs = exported
    ours = run(tmp / "model.tflite", text=strings(TEXTS))
    np.testing.assert_allclose(ours["logits"], theirs["logits"], atol=1e-4)
    np.testing.assert_allclose(ours["probabilities"], theirs["probabilities"], atol=1e-5)
    # TFLite lists every class name, the chosen ones first: as many as the SavedModel's.
    chosen = [[name for name in row if name] for row in theirs["labels"].tolist()]
    assert ours["num_labels"].tolist() == [len(row) for row in chosen]
    assert [row[:len(c)] for row, c in zip(ours["labels"].tolist(), chosen)] == chosen
    assert_only_allowed_ops(tmp / "model.tflite")
