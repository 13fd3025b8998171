"""tools/predict.py and kbert.batch.prediction: every input format gives what the
pipeline gives, bad records are named before a model loads, an interrupted run resumes to
the same output, and a call that never returns is given up on (its worker killed)."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from kbert.batch import prediction as batch_prediction
from kbert.batch.prediction import (
    PredictionConfig, PredictionStopped, run_prediction,
)
from kbert.batch.input_files import InputFileError
from kbert.training.config_fields import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PREDICT = str(ROOT / "tools" / "predict.py")
FIXTURES = ROOT / "tests" / "fixtures" / "hf_tasks"
CLASSIFIER, TAGGER, READER = (str(FIXTURES / n) for n in ("bert_seq_single", "bert_token",
                                                           "bert_qa"))
WORDS = ("the cat sat on a mat while he was at home with her and they had one of "
         "this from what all were").split()
_PIPELINES = {}


def texts(count=11):
    """Texts from 1 to ~60 words, in no order of length (so batches regroup them)."""
    lengths = [1, 40, 3, 60, 7, 2, 25, 12, 5, 33, 9, 17, 4][:count]
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(n)).capitalize() + "."
            for i, n in enumerate(lengths)]


def pipeline(task, model):
    import kbert

    if (task, model) not in _PIPELINES:
        _PIPELINES[task, model] = kbert.pipeline(task, model=model)
    return _PIPELINES[task, model]


def assert_close(got, expected, where):
    if isinstance(expected, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(expected), where
        for key in expected:
            assert_close(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(got, list) and len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(got, expected)):
            assert_close(a, b, f"{where}[{i}]")
    elif isinstance(expected, str) or expected is None:
        assert got == expected, where
    else:
        assert got == pytest.approx(float(expected), abs=1e-5), where


def read_output(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def write_rows(path, file_format, rows):
    """rows: dicts of columns (text: their "text")."""
    if file_format == "text":
        path.write_text("".join(r["text"] + "\n" for r in rows))
    elif file_format == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        with open(path, "w", newline="") as f:
            tsv = file_format == "tsv"
            writer = csv.DictWriter(f, list(rows[0]), delimiter="\t" if tsv else ",",
                                    quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL)
            writer.writeheader()
            writer.writerows(rows)
    return str(path)


def config(tmp_path, **settings):
    values = dict(task="text-classification", model=CLASSIFIER, output=str(tmp_path /
                  "out.jsonl"), rows_per_call=3, batch_size=2, batch_timeout=0)
    values.update(settings)
    return PredictionConfig(**values)


# format -> (task, model, the rows' columns, pipeline options, flags of the columns)
CASES = {
    "text": ("text-classification", CLASSIFIER, lambda t, i: {"text": t}, {"top_k": 2}, {}),
    "csv": ("text-classification", CLASSIFIER,
            lambda t, i: {"id": str(i), "review": t, "other": t[::-1] + ', "quoted"'},
            {"truncation": True},
            {"text_column": "review", "text_pair_column": "other"}),
    "tsv": ("token-classification", TAGGER, lambda t, i: {"sentence": t},
            {"aggregation_strategy": "simple"}, {"text_column": "sentence"}),
    "jsonl": ("question-answering", READER,
              lambda t, i: {"q": f"who was at {WORDS[i]}", "context": t, "n": i},
              {"top_k": 2}, {"question_column": "q"}),
}


@pytest.mark.parametrize("file_format", list(CASES))
def test_each_format_gives_what_the_pipeline_gives_in_input_order(tmp_path, file_format):
    task, model, columns, options, flags = CASES[file_format]
    rows = [columns(t, i) for i, t in enumerate(texts())]
    path = write_rows(tmp_path / f"in.{ {'text': 'txt'}.get(file_format, file_format)}",
                      file_format, rows)
    result = run_prediction(config(tmp_path, task=task, model=model, input=path,
                                   pipeline_options=options, **flags))
    assert result == {"rows": len(rows), "written": len(rows), "skipped": 0}

    if task == "question-answering":
        inputs = [{"question": r["q"], "context": r["context"]} for r in rows]
    elif "text_pair_column" in flags:
        inputs = [{"text": r["review"], "text_pair": r["other"]} for r in rows]
    else:
        inputs = [r.get("text", r.get("sentence")) for r in rows]
    expected = pipeline(task, model)(inputs, **options)
    got = read_output(tmp_path / "out.jsonl")
    assert [r["row"] for r in got] == list(range(1, len(rows) + 1))
    first_line = 1 if file_format in ("text", "jsonl") else 2  # a CSV/TSV header is line 1
    assert [r["line"] for r in got] == list(range(first_line, first_line + len(rows)))
    assert [r["input"] for r in got] == inputs
    for record, want in zip(got, expected):
        assert_close(record["output"], want, f"row {record['row']}")


def test_onnxruntime_gives_what_the_tensorflow_pipeline_gives(tmp_path):
    rows = [{"text": t} for t in texts()]
    path = write_rows(tmp_path / "in.txt", "text", rows)
    result = run_prediction(config(tmp_path, input=path, runtime="onnxruntime",
                                   pipeline_options={"top_k": 2}))
    assert result == {"rows": len(rows), "written": len(rows), "skipped": 0}
    expected = pipeline("text-classification", CLASSIFIER)([r["text"] for r in rows], top_k=2)
    got = read_output(tmp_path / "out.jsonl")
    for record, want in zip(got, expected):
        for a, b in zip(record["output"], want):  # ONNX Runtime's floats: within 1e-4
            assert a["label"] == b["label"] and abs(a["score"] - b["score"]) <= 1e-4, (a, b)
    with pytest.raises(ConfigError, match="--quantize=int8 quantizes an ONNX model: it needs "
                                          "--runtime=onnxruntime"):
        config(tmp_path, input=path, quantize="int8", runtime="tensorflow").validate()


@pytest.mark.parametrize("name, content, message", [
    ("bad.csv", "text,label\na,1\nb\n", "bad.csv: line 3 has 1 field; the header (line 1) "
                                        "has 2: text, label."),
    ("bad.csv", 'text\n"a\nb",x\n"c"d\n', "bad.csv: line 2 has 2 fields"),
    ("bad.tsv", "sentence\tlabel\nfine\t1\n", "bad.tsv: line 2 (row 1) has no 'text' (text); "
                                             "it has 'sentence', 'label'."),
    ("bad.jsonl", '{"text": "a"}\n\n{"text": "b"\n', "bad.jsonl: line 3 is not JSON"),
    ("bad.jsonl", '{"text": "a"}\n["b"]\n', "bad.jsonl: line 2 is a JSON list, not an object"),
    ("bad.jsonl", '{"text": "a"}\n{"text": 7}\n', "bad.jsonl: line 2 (row 2): 'text' (text) "
                                                 "must be a string, got 7."),
    ("bad.txt", b"fine\n\xff\xfe\n", "bad.txt: line 2 is not UTF-8"),
    ("empty.txt", "\n  \n", "empty.txt: no records."),
])
def test_a_bad_record_names_the_file_and_line_before_any_model_loads(tmp_path, name, content,
                                                                     message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputFileError) as error:
        run_prediction(config(tmp_path, input=str(path), model="/no/model/loads"))
    assert message in str(error.value) and str(path) in str(error.value)
    assert not (tmp_path / "out.jsonl").exists()


def test_flags_map_to_the_config_and_bad_ones_are_refused(tmp_path):
    from absl import flags

    from kbert.training import config_fields

    flag_values = flags.FlagValues()
    config_fields.define_flags(PredictionConfig, flag_values)
    flag_values(["predict.py", "--task=zero-shot-classification", "--model=m",
                 "--input=in.csv", "--output=out.jsonl", "--candidate_labels=sports,art",
                 "--pipeline_option=multi_label=true", "--batch_timeout=5",
                 "--on_timeout=skip", "--trusted"])
    parsed = config_fields.config_from_flags(PredictionConfig, flag_values)
    assert parsed.candidate_labels == ["sports", "art"] and parsed.trusted
    assert parsed.pipeline_options == {"multi_label": True} and parsed.batch_timeout == 5
    parsed.validate()
    assert parsed.call_options()["candidate_labels"] == ["sports", "art"]

    text = str(tmp_path / "in.txt")
    for settings, message in [
        (dict(task="zero-shot-classification"), "needs --candidate_labels"),
        (dict(candidate_labels=["a"]), "--candidate_labels is for zero-shot"),
        (dict(task="ner", text_pair_column="b"), "--text_pair_column is for text-class"),
        (dict(pipeline_options={"top_k": 1, "aggregation_strategy": "x"}),
         "--pipeline_option=aggregation_strategy: text-classification takes"),
        (dict(pipeline_options={"batch_size": 4}), "use --batch_size"),
        (dict(input="in.parquet"), "cannot tell the format from the extension '.parquet'"),
        (dict(batch_timeout=-1), "--batch_timeout must be a number >= 0"),
        (dict(output=text), "is the input file"),
    ]:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            config(tmp_path, **{"input": text, **settings}).validate()
    (tmp_path / "in.txt").write_text("a text\n")
    with pytest.raises(InputFileError, match="question-answering with question and context "
                                             "needs columns"):
        run_prediction(config(tmp_path, input=text, task="question-answering"))


def test_resume_cuts_a_torn_line_and_appends_the_rest(tmp_path, capsys, monkeypatch):
    rows = [{"text": t} for t in texts(13)]
    path = write_rows(tmp_path / "in.jsonl", "jsonl", rows)
    whole = config(tmp_path, input=path, output=str(tmp_path / "whole.jsonl"))
    run_prediction(whole)
    complete = Path(whole.output).read_text().splitlines(keepends=True)
    assert len(complete) == 13

    # A run killed while writing its third call: two calls' lines and a torn one.
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(complete[:6]) + complete[6][:17])
    shutil.copy(f"{whole.output}.run.json", f"{broken}.run.json")  # written as a run starts
    result = run_prediction(config(tmp_path, input=path, output=str(broken)))
    assert result["written"] == 7
    assert "Resuming" in capsys.readouterr().out
    assert broken.read_text() == "".join(complete)

    # Finished: nothing loads, nothing changes.
    def no_model(*args):
        raise AssertionError("a model was loaded for a finished output")

    monkeypatch.setattr(batch_prediction, "_runner", no_model)
    finished = run_prediction(config(tmp_path, input=path, output=str(broken)))
    assert finished["written"] == 0 and "already holds all 13 rows" in capsys.readouterr().out
    assert broken.read_text() == "".join(complete)

    # Another model's or option's output is not resumed, nor one whose run is not recorded.
    with pytest.raises(PredictionStopped, match=r"written by another run \(model was '.*', "
                                                r"now '/another/model'.*Pass --overwrite"):
        run_prediction(config(tmp_path, input=path, output=str(broken), model="/another/model"))
    with pytest.raises(PredictionStopped, match=r"pipeline_options was \{\}, now \{'top_k': 2\}"):
        run_prediction(config(tmp_path, input=path, output=str(broken),
                              pipeline_options={"top_k": 2}))
    os.rename(f"{broken}.run.json", tmp_path / "kept.json")
    with pytest.raises(PredictionStopped, match=r"broken.jsonl.run.json, the record of the run "
                                                r"that wrote them, is missing"):
        run_prediction(config(tmp_path, input=path, output=str(broken)))
    os.rename(tmp_path / "kept.json", f"{broken}.run.json")
    monkeypatch.undo()

    # Another input's output is not resumed; --overwrite starts again.
    other = write_rows(tmp_path / "other.jsonl", "jsonl", [{"text": "x"}] * 3 + rows)
    with pytest.raises(PredictionStopped, match=r"line 1 is not the record of this input's "
                                                r"row 1 \(input line 1\)"):
        run_prediction(config(tmp_path, input=other, output=str(broken)))
    short = write_rows(tmp_path / "short.jsonl", "jsonl", rows[:5])
    with pytest.raises(PredictionStopped, match=r"line 6 is past the end of this input \(5 "
                                                r"rows\)\. .*Pass --overwrite"):
        run_prediction(config(tmp_path, input=short, output=str(broken)))
    again = run_prediction(config(tmp_path, input=path, output=str(broken), overwrite=True))
    assert again["written"] == 13 and broken.read_text() == "".join(complete)


def tool(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, PREDICT, *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env or tool_env(), **kwargs)


def tool_env(marker=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    if marker:
        env["KBERT_PREDICT_TEST"] = marker
    return env


def processes_with(marker):
    """Live processes started with `marker` in their environment: the tool and its
    workers (a worker left behind would show here)."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("KBERT_PREDICT_TEST") == marker and \
                    process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


def assert_none_left(marker, within=10):
    deadline = time.time() + within
    while processes_with(marker) and time.time() < deadline:
        time.sleep(0.2)
    assert not processes_with(marker), "a worker process was left behind"


def test_the_tool_names_a_bad_record_without_a_traceback(tmp_path):
    path = write_rows(tmp_path / "in.csv", "csv", [{"text": "a", "label": "1"}])
    Path(path).write_text(Path(path).read_text() + "b,2,3\n")
    result = tool("--task=text-classification", "--model=/no/model/loads",
                  f"--input={path}", f"--output={tmp_path}/out.jsonl")
    assert result.returncode == 1
    assert f"Error: {path}: line 3 has 3 fields" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_kill_and_rerun_gives_an_uninterrupted_runs_output(tmp_path, capsys):
    """kill -9 once the output has its first lines: at most the call in flight is lost, the
    worker goes with the tool, and the same settings finish the same output (run here: the
    killed process is the tool, the rerun reads what it left)."""
    rows = [{"text": texts(13)[i % 13]} for i in range(60)]
    path = write_rows(tmp_path / "in.jsonl", "jsonl", rows)
    run_prediction(config(tmp_path, input=path, output=str(tmp_path / "whole.jsonl"),
                          rows_per_call=1))
    output = tmp_path / "broken.jsonl"
    args = ["--task=sentiment-analysis", f"--model={CLASSIFIER}", f"--input={path}",
            f"--output={output}", "--rows_per_call=1", "--batch_size=2"]
    marker = uuid.uuid4().hex
    process = subprocess.Popen([sys.executable, PREDICT, *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=ROOT, env=tool_env(marker))
    deadline = time.time() + 120
    while not (output.exists() and output.stat().st_size > 0):
        assert process.poll() is None and time.time() < deadline, "no output appeared"
        time.sleep(0.05)
    assert len(processes_with(marker)) >= 2  # the tool and its worker
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(output.read_text().splitlines()) < 60
    assert_none_left(marker)

    capsys.readouterr()
    resumed = run_prediction(config(tmp_path, task="sentiment-analysis", input=path,
                                    output=str(output), rows_per_call=1))
    printed = capsys.readouterr().out
    assert "Resuming" in printed and "Predicted 60/60 rows" in printed
    assert resumed["rows"] == 60, resumed
    got, whole = read_output(output), read_output(tmp_path / "whole.jsonl")
    assert [(r["row"], r["input"]) for r in got] == [(r["row"], r["input"]) for r in whole]
    for a, b in zip(got, whole):
        assert_close(a["output"], b["output"], f"row {a['row']}")


def never_returning_saved_model(path):
    """A SavedModel whose serving_ids looks like a kbert text-classifier export's but loops
    forever, with a vocab.txt and the export.json of a classifier beside it."""
    import tensorflow as tf

    from kbert.serving import metadata

    ids = [tf.TensorSpec([None, None], tf.int32, name=n)
           for n in ("token_ids", "segment_ids", "padding_mask")]

    class Forever(tf.Module):
        @tf.function(input_signature=ids)
        def serving_ids(self, token_ids, segment_ids, padding_mask):
            count = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1,
                                  [tf.constant(0)])[0]
            logits = tf.zeros([tf.shape(token_ids)[0], 2]) + tf.cast(count, tf.float32)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits)}

    module = Forever()
    tf.saved_model.save(module, str(path), signatures={"serving_ids": module.serving_ids})
    shutil.copy(Path(CLASSIFIER, "vocab.txt"), path / "vocab.txt")
    metadata.write(path, metadata.describe(
        runtime="saved_model", task="text-classification", model="text_classifier",
        label_names=["NEGATIVE", "POSITIVE"], max_length=64))
    return str(path)


@pytest.mark.slow
def test_a_call_that_never_returns_is_given_up_on(tmp_path):
    model = never_returning_saved_model(tmp_path / "forever")
    path = write_rows(tmp_path / "in.txt", "text", [{"text": t} for t in texts(3)])
    output = tmp_path / "out.jsonl"

    # Refused by kbert's check before it loads.
    with pytest.raises(PredictionStopped, match="While") as refused:
        run_prediction(config(tmp_path, model=model, input=path, output=str(output)))
    assert "UnsafeSavedModelError" in str(refused.value)

    # --trusted: loaded (said loudly), the call given up on after 2 s, the tool stops. (The
    # model's call never returns, so any limit proves it; the load has its own, load_timeout.)
    marker = uuid.uuid4().hex
    started = time.time()
    stopped = tool("--task=text-classification", f"--model={model}", f"--input={path}",
                   f"--output={output}", "--trusted", "--batch_timeout=2",
                   "--overwrite", env=tool_env(marker))
    assert stopped.returncode == 1, stopped.stderr[-3000:]
    assert "WITHOUT kbert's SavedModel check" in stopped.stderr
    assert "gave up on rows 1-3 (input lines 1-3)" in stopped.stderr
    assert "took over 2 s" in stopped.stderr and "Traceback" not in stopped.stderr
    assert output.read_text() == "" and time.time() - started < 120
    assert_none_left(marker)

    # on_timeout=skip: an error record per row, and done.
    result = run_prediction(config(tmp_path, model=model, input=path, output=str(output),
                                   trusted=True, batch_timeout=1, on_timeout="skip"))
    assert result == {"rows": 3, "written": 3, "skipped": 3}
    records = read_output(output)
    assert [r["row"] for r in records] == [1, 2, 3]
    assert all("output" not in r and "took over 1 s" in r["error"] for r in records)
    assert [r["input"] for r in records] == texts(3)

    # A worker that dies in a call (here killed from outside) is reported with its exit code.
    from kbert.batch.worker import CallFailed, WorkerRunner

    runner = WorkerRunner("text-classification", model, True, {}, {"progress": False},
                          load_timeout=120)
    threading.Timer(1.0, runner.process.kill).start()
    with pytest.raises(CallFailed, match=r"died while running a call of 1 rows \(exit code "
                                         r"-9, killed by signal 9\)"):
        runner(["a text"], timeout=60)
    assert not runner.process.is_alive()
