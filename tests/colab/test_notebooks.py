"""colab/*.ipynb run top to bottom on a CPU with tiny settings (nbclient), so they cannot rot."""

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def with_parameters(notebook, **values):
    """Replaces the assignments in the cell tagged "parameters" (papermill's convention)."""
    cells = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, "one cell must be tagged 'parameters'"
    lines = cells[0].source.splitlines()
    for name, value in values.items():
        matches = [i for i, line in enumerate(lines) if line.startswith(f"{name} =")]
        assert matches, f"{name} is not a parameter"
        lines[matches[0]] = f"{name} = {value!r}"
    cells[0].source = "\n".join(lines)
    return notebook


def run(notebook, cwd):
    env_before = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"  # the kernel inherits it
    try:
        NotebookClient(notebook, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        if env_before is None:
            del os.environ["TF_CPP_MIN_LOG_LEVEL"]
        else:
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = env_before
    return "\n".join(output.get("text", "") for cell in notebook.cells
                     for output in cell.get("outputs", []) if output.get("name") == "stdout")


@pytest.mark.slow
def test_pretrain_bert_tpu_notebook_runs_on_cpu(tmp_path, stdlib_vocab_file):
    vocab = stdlib_vocab_file  # tests/conftest.py: learned once per run
    notebook = nbformat.read(ROOT / "colab" / "pretrain_bert_tpu.ipynb", as_version=4)
    with_parameters(notebook, PRESET="bert_tiny", VOCAB=vocab, SEQUENCE_LENGTH=32,
                    MAX_PREDICTIONS=5, GLOBAL_BATCH_SIZE=8, TRAIN_STEPS=20, STEPS_PER_LOOP=10,
                    MODEL_DIR=str(tmp_path / "run"), EXPORT_DIR=str(tmp_path / "export"))
    stdout = run(notebook, tmp_path)
    assert "strategy: default" in stdout
    assert "Final (20 steps)" in stdout
    assert "['serving_default', 'serving_ids']" in stdout
    assert "'sequence_output': (1, 5, 128)" in stdout and "'pooled_output': (1, 128)" in stdout
    assert (tmp_path / "export" / "saved_model.pb").exists()
    assert (tmp_path / "run" / "checkpoints" / "ckpt-20.index").exists()


@pytest.mark.slow
def test_finetune_tpu_notebook_runs_on_cpu(tmp_path):
    """Both fine-tunings on tiny files from the tiny DistilBERT checkpoint, exported,
    reloaded in plain TensorFlow and asked: the notebook's own cells, with tiny settings."""
    import json

    words = ["the", "of", "to", "and", "in", "it", "that", "was", "for", "on", "with", "as"]
    rows = [(" ".join(words[i % 7: i % 7 + 4]) + (" she" if i % 2 else ""), ["no", "yes"][i % 2])
            for i in range(32)]
    (tmp_path / "train.csv").write_text("sentence,label\n" + "".join(f"{t},{l}\n"
                                                                     for t, l in rows))
    paragraphs = [{"context": f"{' '.join(words[i % 5:i % 5 + 6])} she was there .",
                   "qas": [{"id": f"q{i}", "question": "who was there",
                            "answers": [{"text": "she",
                                         "answer_start": len(" ".join(words[i % 5:i % 5 + 6]))
                                         + 1}]}]} for i in range(16)]
    (tmp_path / "squad.json").write_text(json.dumps(
        {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    checkpoint = str(ROOT / "tests" / "fixtures" / "hf_tiny" / "distil_bert")
    notebook = nbformat.read(ROOT / "colab" / "finetune_tpu.ipynb", as_version=4)
    with_parameters(notebook, CHECKPOINT=checkpoint,
                    CLASSIFIER_TRAIN=str(tmp_path / "train.csv"),
                    CLASSIFIER_VALIDATION=str(tmp_path / "train.csv"),
                    QA_TRAIN=str(tmp_path / "squad.json"),
                    QA_VALIDATION=str(tmp_path / "squad.json"), SEQUENCE_LENGTH=16,
                    QA_SEQUENCE_LENGTH=24, DOC_STRIDE=8, MAX_QUESTION_LENGTH=8, GLOBAL_BATCH_SIZE=8, EPOCHS=1,
                    LEARNING_RATE=1e-3, MODEL_DIR=str(tmp_path / "runs"))
    stdout = run(notebook, tmp_path)
    assert "strategy: default" in stdout
    assert "classifier best: {'epoch': 1, 'scores': {'accuracy'" in stdout
    assert "reader best: {'epoch': 1, 'scores': {'exact_match'" in stdout
    assert "labels: [" in stdout and "answer:" in stdout
    for name in ("classifier", "reader"):
        assert (tmp_path / "runs" / name / "export" / "saved_model.pb").exists()


def test_analyze_attention_notebook_runs_on_cpu(tmp_path):
    """kbert.analysis and tools/analyze.py's engine on the tiny TinyBERT checkpoint: the
    notebook's own cells, every picture and the HTML view written."""
    notebook = nbformat.read(ROOT / "colab" / "analyze_attention.ipynb", as_version=4)
    with_parameters(notebook, MODEL=str(ROOT / "tests" / "fixtures" / "hf_tiny" /
                                        "tiny_bert_general"),
                    OUTPUT_DIR=str(tmp_path / "analysis"), LAYER=1, HEAD=1, FORMATS=["png"],
                    PICTURES=1)
    stdout = run(notebook, tmp_path)
    assert "attention_text0_layer1_head1.png" in stdout and "head_statistics.png" in stdout
    assert "attentions (2, 2, " in stdout and "| majority class |" in stdout
    assert "share of heads with over half their attention on sep" in stdout
    assert re.search(r"'attentions': \(2, \(1, 2, (\d+), \1\)\)", stdout)
    for name in ("attention.html", "analysis.json", "attention_grid_text0.png",
                 "noun_or_verb.png"):
        assert (tmp_path / "analysis" / name).stat().st_size > 1000, name
