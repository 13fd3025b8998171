"""tools/create_pretraining_data.py on Apache Beam (kbert.batch.pretraining_beam): the
examples of the single-process tool, whatever the number of workers, each once also when a
bundle fails."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("apache_beam")

import tensorflow as tf  # noqa: E402

from kbert.batch import pretraining_beam  # noqa: E402
from kbert.data import static_masking  # noqa: E402
from kbert.tokenizers import WordPieceTokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORDS = "the value of a an attribute return list name file is in to for with".split()
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS
         + [str(i) for i in range(10)] + ["##s", "##ed"])
ARGS = dict(sequence_length=24, max_predictions=4, seed=7, block_size=6)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two files of BERT-format text (33 documents of 1 to 7 sentences; one gzip file)."""
    import gzip

    folder = tmp_path_factory.mktemp("corpus")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")

    def document(i):
        return "\n".join(" ".join(WORDS[(i * 7 + j * 3 + k) % len(WORDS)] for k in range(3 + j % 5))
                         + f" {i % 10}." for j in range(1 + i % 7))

    (folder / "a.txt").write_text("\n\n".join(document(i) for i in range(20)))
    with gzip.open(folder / "b.txt.gz", "wt") as f:
        f.write("\n\n\n".join(document(i) for i in range(20, 33)))
    return str(folder / "*.txt*"), str(vocab)


def single_process(corpus, tmp_path, num_shards=2, **args):
    spec, vocab = corpus
    maker = static_masking.BlockMaker(WordPieceTokenizer(vocab), **{**ARGS, **args})
    files, count = static_masking.write(spec, maker, str(tmp_path / "single" / "t.tfrecord"),
                                        num_shards=num_shards, dupe_factor=2)
    return files, count


def beam_run(corpus, output, pipeline_args, num_shards=2, **args):
    spec, vocab = corpus
    return pretraining_beam.run(spec, vocab, True, str(output), num_shards, 2,
                                {**ARGS, **args}, pipeline_args)


def records(files):
    return [r.numpy() for f in files for r in tf.data.TFRecordDataset(f)]


@pytest.mark.parametrize("sentence_task,masking", [("nsp", "token"), ("sop", "word"),
                                                   ("none", "ngram")])
def test_same_examples_as_the_single_process_tool(corpus, tmp_path, sentence_task, masking):
    one, count = single_process(corpus, tmp_path, sentence_task=sentence_task, masking=masking)
    files, beam_count = beam_run(corpus, tmp_path / "beam" / "t.tfrecord",
                                 ["--runner=DirectRunner"], sentence_task=sentence_task,
                                 masking=masking)
    assert [Path(f).name for f in files] == [Path(f).name for f in one]
    assert beam_count == count > 40
    # The same examples (NSP's random segments included); only the order and shard differ.
    assert sorted(records(files)) == sorted(records(one))
    assert len(set(records(one))) > 0.9 * count  # the two passes mask anew


@pytest.mark.slow  # two worker processes, each starting TensorFlow: 20-50 s on 2 shared cores
def test_output_does_not_depend_on_the_number_of_workers(corpus, tmp_path):
    one_worker, _ = beam_run(corpus, tmp_path / "one" / "t.tfrecord", ["--runner=DirectRunner"],
                             num_shards=3)
    two_workers, _ = beam_run(corpus, tmp_path / "two" / "t.tfrecord",
                              ["--runner=DirectRunner", "--direct_num_workers=2",
                               "--direct_running_mode=multi_processing"], num_shards=3)
    for a, b in zip(one_worker, two_workers, strict=True):
        assert Path(a).read_bytes() == Path(b).read_bytes()  # every shard, byte for byte
    assert not [p for p in os.listdir(tmp_path / "two") if "partial" in p]


MARKER = "KBERT_TEST_FAIL_ONCE"


class FailingOnce(pretraining_beam.MakeBlock):
    """Raises in the middle of block 2 once (a marker file says it did), after some of the
    block's examples went out."""

    def process(self, element):
        for i, out in enumerate(super().process(element)):
            yield out
            marker = os.environ[MARKER]
            if element[0] == 2 and i == 3 and not os.path.exists(marker):
                Path(marker).touch()
                raise RuntimeError("a worker failure in the middle of a bundle")


@pytest.mark.parametrize("runner", ["DirectRunner", "BundleBasedDirectRunner"])
def test_a_failed_bundle_leaves_each_example_once(corpus, tmp_path, monkeypatch, runner):
    """What the local runners do: Beam's DirectRunner retries a failed bundle (up to 4
    times) and keeps only the outputs of the attempt that succeeded; the FnApiRunner (which
    --runner=DirectRunner runs here) fails the job instead, and nothing is written. Dataflow,
    Flink and Spark retry as the DirectRunner does."""
    monkeypatch.setenv(MARKER, str(tmp_path / "failed_once"))
    monkeypatch.setattr(pretraining_beam, "MakeBlock", FailingOnce)
    one, count = single_process(corpus, tmp_path)
    output = tmp_path / "beam" / "t.tfrecord"
    if runner == "DirectRunner":
        with pytest.raises(Exception, match="a worker failure in the middle of a bundle"):
            beam_run(corpus, output, [f"--runner={runner}"])
        assert os.listdir(output.parent) == []  # not one file, whole or partial
    files, beam_count = beam_run(corpus, output, [f"--runner={runner}"])
    assert (tmp_path / "failed_once").exists()
    assert beam_count == count
    assert sorted(records(files)) == sorted(records(one))
    assert sorted(os.listdir(output.parent)) == sorted(Path(f).name for f in files)


def test_the_tool_without_beam(corpus, tmp_path):
    """kbert and the tool import nothing of Beam; --runner without Beam says what to
    install; a flag the tool does not define is an error without --runner."""
    spec, vocab = corpus
    script = (
        "import sys\n"
        "import kbert, kbert.data, kbert.batch\n"
        "from kbert.programs import create_pretraining_data\n"
        "assert not [m for m in sys.modules if m.startswith('apache_beam')], 'Beam imported'\n"
        "sys.modules['apache_beam'] = None  # as if it were not installed\n"
        "def tool(*args):\n"
        f"    sys.argv = ['create_pretraining_data.py', '--input={spec}',"
        f" '--vocab_file={vocab}', '--output={tmp_path}/t.tfrecord', *args]\n"
        "    try:\n"
        "        create_pretraining_data.app.run(create_pretraining_data.main,"
        " flags_parser=create_pretraining_data.parse_flags)\n"
        "    except SystemExit as e:\n"
        "        print('EXIT', e.code, flush=True)\n"
        "tool('--project=p')\n"
        "tool('--runner=DataflowRunner', '--project=p')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["EXIT", "1", "EXIT", "1"], result.stdout
    assert "Unknown flags --project=p (flags go to Beam only with --runner)" in result.stderr
    assert ('--runner=DataflowRunner (an Apache Beam pipeline) needs apache_beam, which is '
            'not installed: pip install "kbert-keras[beam]".') in result.stderr, \
        result.stderr[-3000:]
    assert not (tmp_path / "t.tfrecord").exists()
