"""kbert.pipeline("text-classification") gives transformers' outputs on the fixtures'
checkpoints: labels, scores (1e-4), top_k, function_to_apply, pairs, truncation."""

import json
import math
import shutil

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

TASK = "text_classification"


@pytest.mark.parametrize("index", reference.cases(TASK, fast={"hf_tasks/bert_seq_single",
                                                                  "hf_tasks/roberta_seq_single"}))
def test_matches_transformers(pipelines, index):
    pipe = pipelines("text-classification", reference.model_of(TASK, index))
    reference.check(TASK, index, lambda inputs, options: pipe(inputs, **options), ids_of(pipe))


REGRESSION = "hf_tasks/bert_seq_regression"  # one output, no problem_type: a cross-encoder


def _unstated_reference():
    """A text and transformers' score of it on REGRESSION: a sigmoid of the output."""
    for case in reference.load(TASK)["cases"]:
        if case["model"] == REGRESSION and isinstance(case["inputs"], str) \
                and not case["options"]:
            return case["inputs"], case["output"][0]["score"]
    raise AssertionError(f"no single-text case of {REGRESSION}")


def test_one_output_without_a_problem_type_is_scored_by_a_sigmoid_from_any_source(
        pipelines, tmp_path):
    """As transformers' pipeline: the checkpoint directory, the model object and kbert's own
    directory of it all score the unstated one-output model with a sigmoid."""
    import kbert

    text, expected = _unstated_reference()
    model = pipelines("text-classification", REGRESSION).source.runner.model
    tokenizer = kbert.convert.load_tokenizer(str(reference.FIXTURES / REGRESSION))
    kbert.convert.save_kbert(model, tmp_path / "k", vocabulary=tokenizer)
    for pipe in (pipelines("text-classification", REGRESSION),
                 kbert.pipeline("text-classification", model=model, tokenizer=tokenizer),
                 kbert.pipeline("text-classification", model=str(tmp_path / "k"))):
        assert abs(pipe(text)[0]["score"] - expected) < reference.TOLERANCE, pipe


def test_a_declared_regression_gives_the_raw_value(tmp_path):
    """problem_type "regression" stated: no function, as transformers' pipeline; also from a
    model object and kbert's own directory."""
    import kbert

    text, squashed = _unstated_reference()
    folder = tmp_path / "declared"
    shutil.copytree(reference.FIXTURES / REGRESSION, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "problem_type": "regression"}))
    pipe = kbert.pipeline("text-classification", model=str(folder))
    value = pipe(text)[0]["score"]
    assert abs(1 / (1 + math.exp(-value)) - squashed) < reference.TOLERANCE
    assert abs(value - squashed) > 1e-3  # the raw output, not its sigmoid
    model, tokenizer = pipe.source.runner.model, pipe.tokenizer
    kbert.convert.save_kbert(model, tmp_path / "k", vocabulary=tokenizer)
    for other in (kbert.pipeline("text-classification", model=model, tokenizer=tokenizer),
                  kbert.pipeline("text-classification", model=str(tmp_path / "k"))):
        assert abs(other(text)[0]["score"] - value) < 1e-6


@pytest.mark.slow
def test_a_saved_model_scores_as_its_checkpoint_with_or_without_a_stated_problem_type(
        pipelines, tmp_path):
    """An exported SavedModel of the one-output model (`model.export`): its export.json states
    no problem type where its checkpoint states none, and it (its own `serving_default`, and
    the pipeline on it) scores with a sigmoid (transformers' pipeline); the raw value where it
    states "regression"."""
    import tensorflow as tf

    import kbert

    def served(path):  # what TF Serving answers
        outputs = tf.saved_model.load(path).signatures["serving_default"](
            text=tf.constant([text]))
        return float(outputs["score"][0, 0])

    text, squashed = _unstated_reference()
    unstated = pipelines("text-classification", REGRESSION)
    model, tokenizer = unstated.source.runner.model, unstated.tokenizer
    model.export(str(tmp_path / "unstated"), tokenizer=tokenizer)
    pipe = kbert.pipeline("text-classification", model=str(tmp_path / "unstated"))
    assert pipe.source.problem_type is None
    assert abs(pipe(text)[0]["score"] - squashed) < reference.TOLERANCE
    assert abs(served(str(tmp_path / "unstated")) - squashed) < reference.TOLERANCE

    folder = tmp_path / "checkpoint"
    shutil.copytree(reference.FIXTURES / REGRESSION, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "problem_type": "regression"}))
    declared = kbert.pipeline("text-classification", model=str(folder)).source.runner.model
    declared.export(str(tmp_path / "declared"), tokenizer=tokenizer)
    pipe = kbert.pipeline("text-classification", model=str(tmp_path / "declared"))
    assert pipe.source.problem_type == "regression"
    value = pipe(text)[0]["score"]
    assert abs(1 / (1 + math.exp(-value)) - squashed) < reference.TOLERANCE
    assert abs(value - squashed) > 1e-3  # the raw output, not its sigmoid
    assert abs(served(str(tmp_path / "declared")) - value) < 1e-5


@pytest.mark.parametrize("model", ["hf_tasks/bert_seq_single", "hf_tasks/roberta_seq_single"])
def test_truncation_and_max_length_through_the_call_give_transformers_answer(pipelines,
                                                                            model):
    """`clf(text, truncation=True, max_length=N)` as transformers takes it: a text longer
    than N tokens is cut to N (not to the model's length) and scored as transformers does."""
    cases = [(i, c) for i, c in enumerate(reference.load(TASK)["cases"])
             if c["model"] == model and c["options"] == {"truncation": True, "max_length": 16}
             and c["inputs"] == "@long"]
    assert len(cases) == 1
    index, case = cases[0]
    pipe = pipelines("text-classification", model)
    text = reference.expand(TASK, case["inputs"])
    assert len(ids_of(pipe)(text)) > 16
    reference.check(TASK, index, lambda inputs, options: pipe(inputs, **options), ids_of(pipe))
    # Cut to 16 tokens, not to the model's 128: another answer than truncation alone.
    assert pipe(text, truncation=True)[0]["score"] != pytest.approx(
        case["output"][0]["score"], abs=1e-6)


@pytest.mark.parametrize("options, message", [
    ({"truncation": "sometimes"}, "Unknown truncation 'sometimes'. Allowed: True, False"),
    ({"padding": "everywhere"}, "Unknown padding 'everywhere'. Allowed: True, False"),
    ({"max_length": 2, "truncation": True}, "max_length=2 leaves no room"),
    ({"max_length": "16"}, "max_length"),
])
def test_tokenizer_options_that_kbert_does_not_run_are_named(pipelines, options, message):
    pipe = pipelines("text-classification", "hf_tasks/bert_seq_single")
    with pytest.raises(ValueError, match=message):
        pipe("A text of some tokens, longer than two.", **options)
    with pytest.raises(TypeError, match="takes no option 'stride'"):
        pipe("A text.", stride=2)


def test_tokenize_kwargs_refuse_an_option_kbert_does_not_run(pipelines):
    pipe = pipelines("feature-extraction", "hf_tasks/bert_qa")
    with pytest.raises(ValueError, match="no tokenizer option 'stride'.*truncation, "
                                         "max_length, padding"):
        pipe("A text.", tokenize_kwargs={"stride": 2})
