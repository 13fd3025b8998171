"""colab/*.ipynb run top to bottom on a CPU with tiny settings (nbclient), so they cannot rot."""

import os
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
def test_pretrain_bert_tpu_notebook_runs_on_cpu(tmp_path):
    from kbert.data import corpora
    from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary

    vocab = str(tmp_path / "vocab.txt")
    write_vocabulary(learn_vocabulary(corpora.stdlib_docstrings(), 2000, max_sentences=4000),
                     vocab)
    notebook = nbformat.read(ROOT / "colab" / "pretrain_bert_tpu.ipynb", as_version=4)
    with_parameters(notebook, PRESET="bert_tiny", VOCAB=vocab, SEQUENCE_LENGTH=32,
                    MAX_PREDICTIONS=5, GLOBAL_BATCH_SIZE=8, TRAIN_STEPS=20, STEPS_PER_LOOP=10,
                    MODEL_DIR=str(tmp_path / "run"), EXPORT_DIR=str(tmp_path / "export"))
    stdout = run(notebook, tmp_path)
    assert "strategy: default" in stdout
    assert "Final (20 steps)" in stdout
    assert "['fill_mask', 'serving_default', 'serving_ids', 'serving_pairs']" in stdout
    assert "'sequence_output': (1, 32, 128)" in stdout and "'pooled_output': (1, 128)" in stdout
    assert (tmp_path / "export" / "saved_model.pb").exists()
    assert (tmp_path / "run" / "checkpoints" / "ckpt-20.index").exists()
