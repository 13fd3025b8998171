"""`jit_compile=True`: the pipelines' model call compiled by XLA, each batch padded up to a
multiple of 16 tokens, gives the answers of the default path (labels, tokens, words and
offsets equal; scores and vectors within 1e-5) on every task; and where it cannot apply it
says so."""

import numpy as np
import pytest

import kbert
from kbert.pipelines import model_source
from tests.pipelines.conftest import load_pipeline

# Mixed lengths: none a multiple of 16, several batches of 2.
TEXTS = ["Paris is the capital of France.", "hello",
         "John Smith works at Google in London and lives in Paris with his family.",
         "The quick brown fox jumps over the lazy dog again and again today."]
CASES = [
    ("text-classification", "hf_tasks/bert_seq_single", TEXTS, {"top_k": None}),
    ("token-classification", "hf_tasks/bert_token", TEXTS, {"aggregation_strategy": "simple"}),
    ("feature-extraction", "hf_tasks/distil_bert_seq_single", TEXTS, {}),
    ("sentence-embeddings", "hf_tasks/st_bert_mean_normalize", TEXTS, {}),
    ("fill-mask", "hf_tiny/distil_bert", ["Paris is the [MASK] of France.",
                                           "a [MASK] b [MASK] c d e f g h i j k l"], {}),
    ("question-answering", "hf_tasks/bert_qa",
     {"question": ["Where does John work?", "Who?"], "context": [TEXTS[2], TEXTS[0]]}, {}),
    ("zero-shot-classification", "hf_tasks/bert_nli", TEXTS[:2],
     {"candidate_labels": ["sports", "politics", "travel"]}),
]


def _same(got, want, where="answer"):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple, np.ndarray)) and not np.isscalar(want):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert abs(got - want) <= 1e-5, (where, got, want)
    else:
        assert got == want, (where, got, want)


@pytest.mark.parametrize("task, model, inputs, options", CASES,
                         ids=[f"{c[0]}-{c[1].split('/')[-1]}" for c in CASES])
def test_compiled_answers_are_the_default_ones(task, model, inputs, options):
    pipe = load_pipeline(task, model)
    if task == "question-answering":  # question= and context=, as transformers' pipeline
        options, inputs = {**options, **inputs}, ()
    else:
        inputs = (inputs,)
    want = pipe(*inputs, batch_size=2, **options)
    compiled = pipe.source.runner.compiled()
    seen = []
    real = compiled._padded

    def spy(inputs):
        padded = real(inputs)
        seen.append(padded["token_ids"].shape[1])
        return padded

    compiled._padded = spy
    try:
        got = pipe(*inputs, batch_size=2, jit_compile=True, **options)
    finally:
        compiled._padded = real
    _same(got, want)
    assert seen and all(length % model_source.LENGTH_STEP == 0 for length in seen), seen


def test_a_batch_is_padded_to_the_step_and_never_past_the_models_positions():
    runner = model_source.CompiledRunner.__new__(model_source.CompiledRunner)
    runner.max_length = 20
    features = {"token_ids": np.ones((2, 5), np.int32), "padding_mask": np.ones((2, 5), np.int32),
                "mask_positions": np.ones((2, 5), np.int32)}
    padded = runner._padded(features)
    assert {k: v.shape for k, v in padded.items()} == {
        "token_ids": (2, 16), "padding_mask": (2, 16), "mask_positions": (2, 5)}
    assert padded["padding_mask"][:, 5:].sum() == 0
    assert runner._padded({"token_ids": np.ones((1, 19), np.int32)})["token_ids"].shape == (1, 20)
    assert runner._padded({"token_ids": np.ones((1, 32), np.int32)})["token_ids"].shape == (1, 32)


def test_where_it_cannot_apply_it_says_so(pipeline_export):
    pipe = load_pipeline("text-classification", "hf_tasks/bert_seq_single")
    with pytest.raises(ValueError, match="`jit_compile` must be True or False, got 'yes'"):
        pipe("a text", jit_compile="yes")
    with pytest.raises(ValueError, match="`jit_compile` must be True or False, got 1"):
        kbert.pipeline("text-classification", model=pipe.source.runner.model,
                       tokenizer=pipe.tokenizer, jit_compile=1)
    features = load_pipeline("feature-extraction", "hf_tasks/distil_bert_seq_single")
    with pytest.raises(ValueError, match="jit_compile=True compiles the pipeline's Keras "
                                         "model with XLA, but output_hidden_states / "
                                         "output_attentions run the model with its internals"):
        features("a text", jit_compile=True, output_hidden_states=True)
    exported = kbert.pipeline("text-classification", model=pipeline_export(
        "text-classification", "hf_tasks/bert_seq_single", {}))
    with pytest.raises(ValueError, match="but the SavedModel .* runs its own graph"):
        exported("a text", jit_compile=True)


def test_an_export_leaves_it_out(tmp_path):
    """How the exporting process ran its model is no option of the export's answers."""
    pipe = load_pipeline("text-classification", "hf_tasks/bert_seq_single")
    compiled = kbert.pipeline("text-classification", model=pipe.source.runner.model,
                              tokenizer=pipe.tokenizer, jit_compile=True, top_k=2)
    path = compiled.export(str(tmp_path / "export"))
    exported = kbert.pipeline("text-classification", model=path)
    assert exported.options({})[1] == {"top_k": 2}
    _same(exported(TEXTS), pipe(TEXTS, top_k=2))


def test_a_new_shape_compiles_once_without_tensorflows_retracing_warning(caplog):
    """Six shapes, six functions each traced once: TensorFlow counts traces by a function's
    code object, and functions of one lambda warned of "excessive" retracing."""
    import logging

    pipe = load_pipeline("feature-extraction", "hf_tasks/distil_bert_seq_single")
    runner = model_source.CompiledRunner(pipe.source.runner.model, 64)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        for batch in range(1, 7):
            runner({"token_ids": np.ones((batch, 5), np.int32),
                    "padding_mask": np.ones((batch, 5), np.int32)})
    assert len(runner._functions) == 6
    assert not [r for r in caplog.records if "retracing" in r.getMessage()], caplog.text
