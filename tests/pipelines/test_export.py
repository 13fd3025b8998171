"""`pipeline.export`: the SavedModels, run in a fresh process with only TensorFlow and
tensorflow-text, give the pipeline's answers (same labels, tokens, words, offsets and texts;
scores within 1e-5) on the reference cases, and fail the call where the pipeline refuses an
input."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import load_pipeline

# (task, model, options): one export each; the cases of the reference with that model and
# those options run on it. FAST: the fast tier's. Each export takes about 20 s: the list has
# one per distinct piece of graph code (the pipelines' own tests run every reference case).
# Options that only change a constant of code another export runs are not exported again: a
# hypothesis template of another wording is the same prefix and suffix constants around the
# labels as the default one's.
FAST = [
    ("text-classification", "hf_tasks/bert_seq_single", {}),
    ("zero-shot-classification", "hf_tasks/bert_nli",
     {"candidate_labels": ["sports", "politics", "travel"]}),
    ("feature-extraction", "hf_tasks/distil_bert_seq_single", {}),
    ("sentence-embeddings", "hf_tasks/st_bert_mean_normalize", {}),
    ("fill-mask", "hf_tiny/distil_bert", {}),
    ("token-classification", "hf_tasks/bert_token", {"aggregation_strategy": "first"}),
    ("question-answering", "hf_tasks/bert_qa", {}),
    ("token-classification", "hf_tasks/albert_token", {"aggregation_strategy": "first"}),
    ("question-answering", "hf_tasks/albert_qa", {}),
]
WINDOWS = {"max_seq_len": 32, "doc_stride": 8, "max_answer_len": 4, "top_k": 2}
SLOW = [
    ("text-classification", "hf_tasks/bert_seq_single", {"top_k": None}),
    ("text-classification", "hf_tasks/bert_seq_single", {"top_k": 2}),
    ("text-classification", "hf_tasks/bert_seq_single",
     {"function_to_apply": "none", "top_k": None}),
    ("text-classification", "hf_tasks/bert_seq_single", {"truncation": True}),
    ("text-classification", "hf_tasks/bert_seq_single", {"truncation": True, "max_length": 16}),
    ("text-classification", "hf_tasks/albert_seq_single", {}),
    ("text-classification", "hf_tasks/distil_bert_seq_multi", {}),
    ("text-classification", "hf_tasks/electra_seq_regression", {"top_k": None}),
    ("zero-shot-classification", "hf_tasks/bert_nli",
     {"candidate_labels": ["sports", "politics", "travel"], "multi_label": True}),
    ("zero-shot-classification", "hf_tasks/bert_nli", {"candidate_labels": ["weather"]}),
    ("zero-shot-classification", "hf_tasks/bert_nli", {"candidate_labels": []}),
    ("zero-shot-classification", "hf_tasks/bert_nli",
     {"candidate_labels": ["sports", "politics", "travel"],
      "hypothesis_template": "No placeholder."}),
    ("feature-extraction", "hf_tasks/albert_token", {"truncation": True}),
    ("sentence-embeddings", "hf_tasks/st_bert_cls", {}),
    ("fill-mask", "hf_tiny/albert", {}),
    ("fill-mask", "hf_tiny/electra/generator", {"top_k": 3}),
    ("fill-mask", "hf_tiny/distil_bert", {"targets": ["Said", "zzz"], "top_k": 1}),
    ("token-classification", "hf_tasks/bert_token", {"aggregation_strategy": "none"}),
    ("token-classification", "hf_tasks/bert_token", {"aggregation_strategy": "simple"}),
    ("token-classification", "hf_tasks/distil_bert_token", {"aggregation_strategy": "average"}),
    ("token-classification", "hf_tasks/electra_token", {"aggregation_strategy": "max"}),
    ("token-classification", "hf_tasks/bert_token", {"ignore_labels": []}),
    ("token-classification", "hf_tasks/electra_token",
     {"aggregation_strategy": "simple", "ignore_labels": ["O", "B-PER"]}),
    ("question-answering", "hf_tasks/bert_qa", {"top_k": 2, "handle_impossible_answer": True}),
    ("question-answering", "hf_tasks/bert_qa", WINDOWS),
    ("question-answering", "hf_tasks/bert_qa", {"align_to_words": False}),
    ("question-answering", "hf_tasks/bert_qa", {"doc_stride": 200, "max_seq_len": 64}),
    ("question-answering", "hf_tasks/distil_bert_qa", {}),
    # ALBERT: the options' graph code is the BERT exports' above; what is ALBERT's own (its
    # SentencePiece words, offsets and windows) is in these and the FAST ones.
    ("question-answering", "hf_tasks/albert_qa", WINDOWS),
    ("token-classification", "hf_tasks/albert_token", {"aggregation_strategy": "none"}),
    ("token-classification", "hf_tasks/albert_token",
     {"aggregation_strategy": "simple", "ignore_labels": ["O", "B-PER"]}),
]
EXPORTS = FAST + SLOW

# Inputs beyond the reference's, run on an export as its cases and compared with the
# pipeline: an empty batch; a batch of questions with different numbers of windows (the
# 20,000-character context among them; answers differing only in case, a NUL inside one),
# and a question that leaves a window less room than doc_stride.
_QUESTION = "where is the capital of the country that is called france in europe today and when"
EXTRA = {
    ("question-answering", "hf_tasks/bert_qa", json.dumps({})): [
        {"question": [], "context": []}],
    ("question-answering", "hf_tasks/bert_qa", json.dumps(WINDOWS, sort_keys=True)): [
        {"question": ["Where does John work?", "Who founded Apple?", "What?"],
         "context": ["@long", "Apple was founded by Steve Jobs in California.",
                     "LONDON london London. tab\x00null TAB\x00NULL"]},
        {"question": [_QUESTION, _QUESTION + " did it move there from"],
         "context": ["Paris is the capital of France.", "@long"]},
    ],
    # Special-token literals typed in a context: ALBERT's pipeline makes them its tokens, of
    # no word.
    ("question-answering", "hf_tasks/albert_qa", json.dumps(WINDOWS, sort_keys=True)): [
        {"question": ["Where does John work?", "Who founded Apple?", "Where is John?"],
         "context": ["@long", "Apple [SEP] was founded by [MASK]ed Steve[CLS]Jobs.",
                     "<unk> <pad> [UNK] [sep] John works at Google [MASK]"]},
    ],
}

FRESH = """
import pickle, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer's ops
calls = pickle.load(open(sys.argv[1], "rb"))
results = []
loaded = {}
for path, signature, inputs in calls:
    if path not in loaded:
        loaded[path] = tf.saved_model.load(path)
    try:
        outputs = loaded[path].signatures[signature](
            **{k: tf.constant(v, tf.string) for k, v in inputs.items()})
        results.append({k: v.numpy() for k, v in outputs.items()})
    except tf.errors.InvalidArgumentError as error:
        results.append(str(error.message))
pickle.dump(results, open(sys.argv[2], "wb"))
# (TensorFlow imports keras itself where it is installed.)
assert not any(m.split(".")[0] in ("kbert", "keras_hub") for m in sys.modules)
"""


def _key(task, model, options):
    return task, model, json.dumps(options, sort_keys=True)


def _cases(task, model, options):
    name = task.replace("-", "_")
    return [i for i, case in enumerate(reference.load(name)["cases"])
            if case["model"] == model and case["options"] == options]


def _strings(texts):
    return [t.encode("utf-8", "surrogatepass") for t in texts]


def _calls(task, inputs, options):
    """(signature, inputs) calls for a pipeline input, and how to put their rows back in
    the input's order: [(call, row)] per item."""
    if task == "zero-shot-classification":
        from kbert.tasks.text_classification.decode import parse_labels

        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        labels = parse_labels(options.get("candidate_labels") or [])
        return [("serving_default", {"sequences": _strings(texts),
                                     "candidate_labels": _strings(labels)})], \
            [(0, i) for i in range(len(texts))]
    if task == "question-answering":
        questions = inputs["question"] if isinstance(inputs["question"], list) else \
            [inputs["question"]]
        contexts = inputs["context"] if isinstance(inputs["context"], list) else \
            [inputs["context"]] * len(questions)
        return [("serving_default", {"question": _strings(questions),
                                     "context": _strings(contexts)})], \
            [(0, i) for i in range(len(questions))]
    items = [inputs] if isinstance(inputs, (str, dict)) else list(inputs)
    singles = [i for i, item in enumerate(items) if isinstance(item, str)]
    pairs = [i for i, item in enumerate(items) if isinstance(item, dict)]
    calls, where = [], {}
    if singles:
        calls.append(("serving_default", {"text": _strings([items[i] for i in singles])}))
        where.update({i: (len(calls) - 1, row) for row, i in enumerate(singles)})
    if pairs:
        calls.append(("serving_pairs", {
            "text": _strings([items[i]["text"] for i in pairs]),
            "text_pair": _strings([items[i].get("text_pair", "") for i in pairs])}))
        where.update({i: (len(calls) - 1, row) for row, i in enumerate(pairs)})
    return calls, [where[i] for i in range(len(items))]


def _text(value):
    return value.decode("utf-8")


def _row(task, outputs, row, options):
    """One row of a SavedModel's outputs in the pipeline's form: what a client of TF
    Serving does with the response (docs/serving.md: "Serving a pipeline")."""
    if task == "text-classification":
        out = [{"label": _text(label), "score": float(score)}
               for label, score in zip(outputs["label"][row], outputs["score"][row])]
        legacy = "top_k" not in options and options.get("return_all_scores") is None
        return out[0] if legacy else out
    if task == "zero-shot-classification":
        return {"sequence": _text(outputs["sequence"][row]),
                "labels": [_text(label) for label in outputs["labels"][row]],
                "scores": [float(s) for s in outputs["scores"][row]]}
    if task == "feature-extraction":
        return outputs["features"][row][None, :outputs["num_tokens"][row]].tolist()
    if task == "sentence-embeddings":
        return outputs["embedding"][row].tolist()
    if task == "fill-mask":
        masks = [[{"score": float(outputs["score"][row, m, k]),
                   "token": int(outputs["token"][row, m, k]),
                   "token_str": _text(outputs["token_str"][row, m, k]),
                   "sequence": _text(outputs["sequence"][row, m, k])}
                  for k in range(outputs["score"].shape[2])]
                 for m in range(outputs["num_masks"][row])]
        return masks[0] if len(masks) == 1 else masks
    if task == "token-classification":
        keys = [k for k in ("entity", "entity_group", "score", "index", "word", "start", "end")
                if k in outputs]
        return [{k: _item(outputs[k][row, e]) for k in keys}
                for e in range(outputs["num_entities"][row])]
    if task == "question-answering":
        answers = [{k: _item(outputs[k][row, a]) for k in ("score", "start", "end", "answer")}
                   for a in range(outputs["num_answers"][row])]
        return answers[0] if len(answers) == 1 else answers
    raise AssertionError(task)


def _item(value):
    if isinstance(value, bytes):
        return _text(value)
    return float(value) if isinstance(value, np.floating) else int(value)


def _answer(task, inputs, options, results, placement):
    rows = [_row(task, results[call], row, options) for call, row in placement]
    single = isinstance(inputs, (str, dict))
    if task == "text-classification":
        legacy = "top_k" not in options and options.get("return_all_scores") is None
        if isinstance(inputs, str):
            return [rows[0]] if legacy else rows[0]
        return rows[0] if isinstance(inputs, dict) else rows
    if task == "question-answering":  # a dict of lists: one result for one question
        return rows[0] if len(rows) == 1 else rows
    if task == "fill-mask":
        return rows[0] if single or len(rows) == 1 else rows
    return rows[0] if single else rows


@pytest.fixture(scope="module")
def served(tmp_path_factory, request, pipeline_export):
    """Every export the run's selected tests need (`pipeline_export`'s: made once per run),
    the calls of its cases, and the fresh process's results: {export key: [((label, inputs,
    options), results, placement)], or the error that refused the export}."""
    tmp = tmp_path_factory.mktemp("pipeline_exports")
    wanted = {_key(*item.callspec.params.values()) for item in request.session.items
              if item.originalname == "test_the_export_answers_as_the_pipeline"
              and item.module is request.module}  # other files have a test of that name
    calls, plan = [], {}
    for task, model, options in EXPORTS:
        if _key(task, model, options) not in wanted:
            continue
        try:
            path = pipeline_export(task, model, options)
        except ValueError as error:  # refused at export: the test checks the message
            plan[_key(task, model, options)] = error
            continue
        entries = []
        name = task.replace("-", "_")
        cases = [(f"case {index}", case["inputs"], case["options"])
                 for index, case in enumerate(reference.load(name)["cases"])
                 if index in _cases(task, model, options)]
        cases += [(f"extra input {n}", inputs, options)
                  for n, inputs in enumerate(EXTRA.get(_key(task, model, options), []))]
        for label, inputs, case_options in cases:
            inputs = reference.expand(name, inputs)
            case_calls, placement = _calls(task, inputs, options)
            first = len(calls)
            calls.extend((path, signature, args) for signature, args in case_calls)
            entries.append(((label, inputs, case_options), range(first, len(calls)),
                            placement))
        plan[_key(task, model, options)] = entries
    with open(tmp / "calls.pkl", "wb") as f:
        pickle.dump(calls, f)
    script = tmp / "fresh.py"
    script.write_text(FRESH)
    subprocess.run([sys.executable, str(script), str(tmp / "calls.pkl"),
                    str(tmp / "results.pkl")], check=True, timeout=1500)
    with open(tmp / "results.pkl", "rb") as f:
        results = pickle.load(f)
    return {key: entries if isinstance(entries, Exception) else
            [(case, [results[c] for c in span], placement)
             for case, span, placement in entries]
            for key, entries in plan.items()}


def _params():
    out = []
    for task, model, options in EXPORTS:
        marks = () if (task, model, options) in FAST else (pytest.mark.slow,)
        cases = _cases(task, model, options)
        assert cases, f"no reference case has {task} on {model} with {options}"
        out.append(pytest.param(task, model, options, marks=marks,
                                id=f"{task}-{model.split('/')[-1]}-"
                                   f"{json.dumps(options)[:40]}"))
    return out


@pytest.mark.parametrize("task, model, options", _params())
def test_the_export_answers_as_the_pipeline(served, task, model, options):
    entries = served[_key(task, model, options)]
    pipe = load_pipeline(task, model)
    if isinstance(entries, Exception):  # the pipeline refuses these options on any input
        case = reference.load(task.replace("-", "_"))["cases"][_cases(task, model, options)[0]]
        _, phrase = reference.expected_error(case["error"])
        assert phrase in str(entries)
        return
    for (label, inputs, case_options), results, placement in entries:
        try:
            expected = pipe(**inputs, **case_options) if task == "question-answering" else \
                pipe(inputs, **case_options)
        except ValueError as error:
            failed = [r for r in results if isinstance(r, str)]
            assert failed, f"{label}: the pipeline refuses it ({error}), the export not"
            if type(error).__name__ == "InputTooLongError":
                assert "InputTooLongError" in failed[0], failed[0]
            else:
                assert str(error).split(":")[0][:40] in failed[0], (str(error), failed[0])
            continue
        assert not any(isinstance(r, str) for r in results), (label, results)
        ours = _answer(task, inputs, case_options, results, placement)
        reference.assert_same(ours, expected, label, tolerance=1e-5)


def test_an_export_keeps_its_options_apart_from_the_pipeline(tmp_path):
    pipe = load_pipeline("text-classification", "hf_tasks/bert_seq_single")
    with pytest.raises(TypeError, match="takes no option 'aggregation_strategy'"):
        pipe.export(str(tmp_path / "x"), aggregation_strategy="simple")
    assert not (tmp_path / "x").exists()


def test_question_answering_export_refuses_what_it_cannot_serve(tmp_path):
    pipe = load_pipeline("question-answering", "hf_tasks/bert_qa")
    with pytest.raises(ValueError, match="`top_k` must be an integer >= 1, got 0"):
        pipe.export(str(tmp_path / "x"), top_k=0)
    with pytest.raises(ValueError, match="max_seq_len=512 is longer than the model's "
                                         "max_sequence_length=128"):
        pipe.export(str(tmp_path / "x"), max_seq_len=512)
    assert not (tmp_path / "x").exists()


# Special-token literals typed in a text: the pipeline's own tokens (no entities, counted in
# the model's length), in the export as in the pipeline.
LITERALS = ["John [SEP] Smith [MASK]ed in [CLS]London.", "[SEP]", "Paris[MASK]London",
            "<unk> <UNK> [UNK] [sep] John", "Smith [PAD] [SEP][SEP] works in Paris"]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["hf_tasks/albert_token", "hf_tasks/bert_token"])
def test_token_classification_keeps_special_literals_as_the_pipeline(tmp_path, model):
    import tensorflow as tf

    pipe = load_pipeline("token-classification", model)
    options = {"aggregation_strategy": "none", "ignore_labels": []}
    pipe.export(str(tmp_path / "export"), **options)
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    outputs = {k: v.numpy() for k, v in served(text=tf.constant(_strings(LITERALS))).items()}
    expected = pipe(LITERALS, **options)
    assert any(len(e) < len(pipe.encoder.encode([t], pipe.specials)[0].ids)
               for t, e in zip(LITERALS, expected))  # some literal is a token, no entity
    for row, text in enumerate(LITERALS):
        reference.assert_same(_row("token-classification", outputs, row, options),
                              expected[row], text, tolerance=1e-5)
