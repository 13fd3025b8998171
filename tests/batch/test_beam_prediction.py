"""tools/predict.py --runner and kbert.batch.beam_inference on Beam's DirectRunner: the same
answers as the single-machine tool, every record either predicted once or a dead letter
naming its file and line (counted), a hostile SavedModel refused inside the worker, a
worker that fails mid-bundle losing nothing, and no Beam import without --runner."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbert.batch.output import PredictionStopped
from kbert.batch.prediction import PredictionConfig, run_prediction
from kbert.training.config_fields import ConfigError
from tests.tools.test_predict import (
    CLASSIFIER, PREDICT, ROOT, assert_close, read_output, texts, tool_env,
)

beam = pytest.importorskip("apache_beam")

from apache_beam.ml.inference.base import KeyedModelHandler, RunInference  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from kbert.batch import beam_inference, beam_pipeline  # noqa: E402
from tests.batch import failing  # noqa: E402

TOO_LONG = " ".join(["word"] * 300)  # over the fixture's 128 positions: refused untruncated


def single_machine(tmp_path, inputs, **settings):
    """{input text: output} of the single-machine tool (in this process) on `inputs`."""
    path = tmp_path / "single.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in inputs))
    config = PredictionConfig(task="text-classification", model=CLASSIFIER, input=str(path),
                              output=str(tmp_path / "single-out.jsonl"), batch_timeout=0,
                              overwrite=True, **settings)
    run_prediction(config)
    return {r["input"]: r["output"] for r in read_output(config.output)}


def beam_config(tmp_path, input, **settings):
    values = dict(task="text-classification", model=CLASSIFIER, input=str(input),
                  output=str(tmp_path / "out" / "predictions.jsonl"), runner="DirectRunner",
                  rows_per_call=3, batch_size=2)
    values.update(settings)
    return PredictionConfig(**values)


def shard_records(result):
    """The records of every shard, each shard checked to be in input order."""
    records = []
    for shard in result["shards"]:
        lines = read_output(shard)
        order = [(r["file"], r["row"]) for r in lines]
        assert order == sorted(order), f"{shard} is not in input order"
        records += lines
    return records


def write_inputs(folder):
    """Four files of four formats, each with good records and bad ones (bad: {file: {line:
    a word of the error}})."""
    import tensorflow as tf

    folder.mkdir()
    t = texts(13)
    (folder / "a.jsonl").write_text("".join(json.dumps({"text": x}) + "\n" for x in t[:4])
                                    + "{not json\n\n" + json.dumps({"text": TOO_LONG}) + "\n")
    (folder / "b.tsv").write_text("text\tid\n" + "".join(f"{x}\t{i}\n" for i, x in
                                                         enumerate(t[4:8])) + "a\tb\tc\n")
    (folder / "c.txt").write_bytes(("\n".join(t[8:11]) + "\n").encode() + b"\xff\xfe\n")

    def example(value):
        feature = (tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
                   if isinstance(value, str) else
                   tf.train.Feature(int64_list=tf.train.Int64List(value=[value])))
        return tf.train.Example(features=tf.train.Features(feature={"text": feature}))

    with tf.io.TFRecordWriter(str(folder / "d.tfrecord")) as writer:
        for value in [t[11], 7, t[12]]:
            writer.write(example(value).SerializeToString())
    bad = {"a.jsonl": {5: "not JSON", 7: "InputTooLongError"},
           "b.tsv": {6: "has 3 fields"}, "c.txt": {4: "not UTF-8"},
           "d.tfrecord": {2: "must be a string, got 7"}}
    return t, bad


def test_the_tool_on_beam_equals_the_single_machine_tool(tmp_path):
    """Through tools/predict.py (Beam options passed through), on a glob of four formats."""
    good, bad = write_inputs(tmp_path / "in")
    output = tmp_path / "out" / "predictions.jsonl"
    run = subprocess.run(
        [sys.executable, PREDICT, "--task=sentiment-analysis", f"--model={CLASSIFIER}",
         f"--input={tmp_path}/in/*", f"--output={output}", "--runner=DirectRunner",
         "--rows_per_call=3", "--batch_size=2", "--num_shards=3",
         "--direct_running_mode=in_memory", "--direct_num_workers=1"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=tool_env())
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Read 18 records: 13 predictions in 3 shard(s), 5 dead letters" in run.stdout

    shards = sorted(output.parent.glob("predictions-*-of-00003.jsonl"))
    result = {"shards": [str(s) for s in shards]}
    assert len(shards) == 3 and all(s.stat().st_size for s in shards)
    records = shard_records(result)
    assert sorted(r["input"] for r in records) == sorted(good)
    assert len({(r["file"], r["row"]) for r in records}) == 13
    for r in records:  # a TSV's header is line 1; a TFRecord's "line" is its record number
        assert r["line"] == r["row"] + (Path(r["file"]).name == "b.tsv"), r
    expected = single_machine(tmp_path, good)
    for r in records:
        assert_close(r["output"], expected[r["input"]], f"{r['file']} row {r['row']}")

    dead = read_output(output.parent / "predictions.dead_letters.jsonl")
    assert [(Path(d["file"]).name, d["line"]) for d in dead] == [
        (name, line) for name in sorted(bad) for line in sorted(bad[name])]
    for d in dead:
        assert bad[Path(d["file"]).name][d["line"]] in d["error"], d
    assert dead[1]["input"] == TOO_LONG  # refused by the pipeline: read, so it is there
    assert json.loads((output.parent / "predictions.counts.json").read_text()) == {
        "records": 18, "predictions": 13, "dead_letters": 5}
    assert not (output.parent / "predictions.beam-temp").exists()

    with pytest.raises(PredictionStopped, match="5 file.* of an earlier run"):
        run_prediction(beam_config(tmp_path, tmp_path / "in" / "c.txt", output=str(output)))


KEPT = []  # what `keep` saw: the in-process runners' workers run it here


def keep(item, kind):
    KEPT.append((kind, item))


def test_handler_keyed_unkeyed_one_model_per_process(tmp_path):
    """Keyed and unkeyed inputs; two worker threads share the one model of the process; a
    call's options (inference_args) override the handler's; unknown ones are refused."""
    inputs = texts(7)
    handler = failing.CountingLoads("sentiment-analysis", CLASSIFIER, options={"top_k": 2},
                                    max_batch_size=3)
    failing.CountingLoads.LOADS.clear()
    KEPT.clear()
    options = PipelineOptions(["--direct_num_workers=2", "--direct_running_mode=multi_threading"])
    with beam.Pipeline(runner=beam_pipeline.local_runner("DirectRunner"), options=options) as p:
        (p | "Texts" >> beam.Create(inputs) | "Unkeyed" >> RunInference(handler)
         | "KeepUnkeyed" >> beam.Map(keep, "plain"))
        (p | "Keyed" >> beam.Create(list(enumerate(inputs)))
         | "Predict" >> RunInference(KeyedModelHandler(handler), inference_args={"top_k": 1})
         | "KeepKeyed" >> beam.Map(keep, "keyed"))
    assert failing.CountingLoads.LOADS == [CLASSIFIER, CLASSIFIER]  # one per transform

    import kbert

    pipe = kbert.pipeline("text-classification", model=CLASSIFIER)
    got = {(kind, item[0] if kind == "keyed" else item.example): item for kind, item in KEPT}
    assert len(got) == len(KEPT) == 2 * len(inputs)
    for i, text in enumerate(inputs):
        plain, (_, keyed) = got["plain", text], got["keyed", i]
        assert plain.model_id == CLASSIFIER and keyed.example == text
        assert_close(plain.inference, pipe([text], top_k=2)[0], f"unkeyed {i}")
        assert_close(keyed.inference, pipe([text], top_k=1)[0], f"keyed {i}")
    with pytest.raises(ValueError, match="takes no option 'bogus'; its options: .*top_k"):
        RunInference(handler, inference_args={"bogus": 1}).expand(None)
    with pytest.raises(ValueError, match="Unknown task 'translation'"):
        beam_inference.PipelineModelHandler("translation", CLASSIFIER)


def test_a_hostile_saved_model_is_refused_inside_the_worker(tmp_path, monkeypatch):
    import tensorflow as tf

    from tests.untrusted.test_saved_model_check import _hostile

    path, sentinel, op, _ = _hostile("write_at_load", tmp_path)
    handler = beam_inference.PipelineModelHandler("text-classification", path)  # no check here

    def reached(*args, **kwargs):
        raise AssertionError("tf.saved_model.load was reached")

    monkeypatch.setattr(tf.saved_model, "load", reached)
    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    with pytest.raises(PredictionStopped, match=f"UnsafeSavedModelError.*{op}"):
        beam_pipeline.run(beam_config(tmp_path, source, model=path), handler=handler)
    assert not list(tmp_path.glob("sentinel*"))


def test_a_worker_error_mid_bundle_loses_nothing(tmp_path):
    """The failed batch runs again a record at a time: each record predicted once."""
    inputs = texts(11)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in inputs))
    marker = tmp_path / "failed-once"
    handler = failing.RaisingOnce("text-classification", CLASSIFIER, marker=str(marker),
                                  options={"batch_size": 2}, max_batch_size=4)
    result = beam_pipeline.run(beam_config(tmp_path, source), handler=handler)
    assert marker.exists()  # it did fail once
    assert result["rows"] == result["written"] == 11 and result["dead_letters"] == 0
    records = shard_records(result)
    assert [r["row"] for r in records] == list(range(1, 12))
    expected = single_machine(tmp_path, inputs)
    for r in records:
        assert_close(r["output"], expected[r["input"]], f"row {r['row']}")


@pytest.mark.slow  # ~60-120 s: two worker processes, each loading TensorFlow, twice
# (the killed worker's gRPC stream ends with an exception in one of Beam's threads)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_two_worker_processes_and_one_killed_mid_bundle(tmp_path):
    """multi_processing with 2 workers: a worker killed in its first batch fails the run
    (the DirectRunner retries no bundle: nothing is reported done); the rerun writes every
    record once, as the single-machine tool answers it."""
    inputs = [texts(13)[i % 13] + f" {i}" for i in range(40)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in inputs))
    marker = tmp_path / "died-once"
    handler = failing.DyingOnce("text-classification", CLASSIFIER, marker=str(marker),
                                options={"batch_size": 4}, max_batch_size=8)
    config = beam_config(tmp_path, source, rows_per_call=8, num_shards=2, overwrite=True,
                         beam_args=["--direct_num_workers=2",
                                    "--direct_running_mode=multi_processing"])
    with pytest.raises(PredictionStopped, match="The Beam pipeline failed"):
        beam_pipeline.run(config, handler=handler)
    assert marker.exists()
    assert not list((tmp_path / "out").glob("predictions.counts.json"))

    result = beam_pipeline.run(config, handler=handler)
    assert result["rows"] == result["written"] == 40 and result["dead_letters"] == 0
    records = shard_records(result)
    assert sorted(r["row"] for r in records) == list(range(1, 41))
    assert all(len(read_output(s)) for s in result["shards"])  # both shards hold records
    expected = single_machine(tmp_path, inputs)
    for r in records:
        assert_close(r["output"], expected[r["input"]], f"row {r['row']}")


def test_a_retried_write_writes_the_same_file(tmp_path):
    """What a bundle retried by the runner does to a shard: the same whole file again."""
    paths = beam_pipeline.OutputPaths(str(tmp_path / "p.jsonl"), 1)
    writer = beam_pipeline.WriteSorted(paths.shards, paths.temp)
    group = (0, [((0, 2), {"row": 2}), None, ((0, 1), {"row": 1})])
    assert list(writer.process(group)) == [2]
    first = Path(paths.shards[0]).read_text()
    assert list(writer.process(group)) == [2]
    assert Path(paths.shards[0]).read_text() == first == '{"row": 1}\n{"row": 2}\n'
    assert paths.existing() == [paths.shards[0]]


def test_a_remote_model_is_copied_once_per_process(tmp_path):
    model = tmp_path / "model"
    (model / "assets").mkdir(parents=True)
    (model / "saved_model.pb").write_bytes(b"graph")
    (model / "assets" / "vocab.txt").write_text("[PAD]\n")
    copy = beam_inference.local_copy(str(model))
    assert Path(copy, "saved_model.pb").read_bytes() == b"graph"
    assert Path(copy, "assets", "vocab.txt").read_text() == "[PAD]\n"
    assert beam_inference.local_copy(str(model)) == copy
    assert beam_inference.is_remote("gs://bucket/model") and not beam_inference.is_remote(
        str(model))


def test_settings_that_cannot_run_are_refused(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    for settings, message in [
        (dict(runner="PrismRunner"), "--runner='PrismRunner' is not one of: DirectRunner"),
        (dict(runner=None, beam_args=["--project=p"]), "Unknown flags --project=p: Beam "
                                                       "pipeline options are taken with "
                                                       "--runner only"),
        (dict(runner=None, num_shards=2), "--num_shards is for --runner"),
    ]:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            beam_config(tmp_path, source, **settings).validate()
    with pytest.raises(beam_pipeline.input_files.InputFileError, match="matches no file"):
        run_prediction(beam_config(tmp_path, tmp_path / "none-*.txt"))
    with pytest.raises(beam_pipeline.input_files.InputFileError, match="needs columns"):
        run_prediction(beam_config(tmp_path, source, task="question-answering"))
    Path(tmp_path / "out").mkdir()
    (tmp_path / "out" / "predictions-00000-of-00004.jsonl").write_text("")
    with pytest.raises(PredictionStopped, match="1 file.* of an earlier run .*--overwrite"):
        run_prediction(beam_config(tmp_path, source))


BLOCKER = """
import runpy, sys
sys.argv = [{predict!r}, "--task=sentiment-analysis", "--model={model}", "--input={input}",
            "--output={output}", "--batch_timeout=0"]
try:
    runpy.run_path({predict!r}, run_name="__main__")
except SystemExit as e:
    assert not e.code, e.code
import kbert, kbert.batch
print("BEAM MODULES:", sorted(m for m in sys.modules if m.split(".")[0] == "apache_beam"))

class NoBeam:  # as if apache-beam were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "apache_beam":
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

sys.meta_path.insert(0, NoBeam())
from kbert.batch.prediction import PredictionConfig, PredictionStopped, run_prediction
try:
    run_prediction(PredictionConfig(task="sentiment-analysis", model="{model}",
                                    input="{input}", output="{output}", runner="DirectRunner"))
except PredictionStopped as e:
    print("REFUSED:", e)
"""


def test_without_runner_nothing_of_beam_is_imported(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a text\nanother one\n")
    script = BLOCKER.format(predict=PREDICT, model=CLASSIFIER, input=source,
                            output=tmp_path / "out.jsonl")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=dict(tool_env(), PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "BEAM MODULES: []" in run.stdout
    assert len(read_output(tmp_path / "out.jsonl")) == 2
    assert ('REFUSED: --runner=DirectRunner needs apache_beam, which is not installed: '
            'pip install "kbert-keras[beam]".') in run.stdout
    assert os.path.getsize(tmp_path / "out.jsonl")


def test_reading_goes_on_past_bad_records(tmp_path):
    """What the Beam reader takes from `input_files.read(errors="yield")`: each bad record
    as its error, numbered, and the records after it (one bad record stops the single-
    machine reader, as before)."""
    from kbert.batch import input_files

    path = tmp_path / "in.csv"
    path.write_bytes(b'text,id\na,1\n"b"x,2\nc,3\n\xff,4\nd\ne,5\n')
    columns = input_files.Columns("text-classification")
    got = [(row, line, value if isinstance(value, str) else str(value).split(": ", 1)[1])
           for row, line, value in input_files.read(path, "csv", columns, errors="yield")]
    assert got == [(1, 2, "a"), (2, 3, "line 3 is not CSV: ',' expected after '\"'."),
                   (3, 4, "c"), (4, 5, "line 5 is not UTF-8 (invalid start byte at byte 0 of "
                                       "the line)."),
                   (5, 6, "line 6 has 1 field; the header (line 1) has 2: text, id."),
                   (6, 7, "e")]
    with pytest.raises(input_files.InputFileError, match="line 3 is not CSV"):
        list(input_files.read(path, "csv", columns))


def test_the_handler_loads_on_the_runtime_it_was_given_and_keeps_it_in_smaller_batches(
        monkeypatch):
    built = []
    monkeypatch.setattr(beam_inference, "build", lambda *args: built.append(args) or "pipe")
    handler = beam_inference.PipelineModelHandler(
        "text-classification", CLASSIFIER, runtime="onnxruntime", quantize="int8",
        options={"top_k": 2})
    for each in (handler, handler.with_batch_size(3)):
        each.load_model()
    assert [args[3] for args in built] == [
        {"progress": False, "top_k": 2, "runtime": "onnxruntime", "quantize": "int8"}] * 2
