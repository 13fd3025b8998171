"""Distillation takes a teacher with any kbert tokenizer: a RoBERTa teacher (byte-level BPE,
vocab.json + merges.txt) distils into a RoBERTa student that speaks its vocabulary; the run
records it, a resume and fine-tuning read it back, and the student's SavedModel fills masks."""

import os
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

ROBERTA = str(Path(__file__).parents[1] / "fixtures" / "hf_tiny" / "roberta")
# The fixture's sizes (its RobertaConfig), one layer: the student starts from its layers.
STUDENT = {"num_layers": 1, "hidden_size": 16, "num_heads": 2, "intermediate_size": 32,
           "max_sequence_length": 24}
RUN = dict(preset="roberta_base", objective="distill", teacher=ROBERTA,
           config_overrides=STUDENT, sequence_length=24, max_predictions=4,
           global_batch_size=4, learning_rate=1e-3, warmup_steps=0, seed=1, verbose=0,
           steps_per_loop=2, jit_compile=False)  # XLA's compile: longer than these steps


def test_a_teacher_of_each_kind_resolves_the_run_tokenizer_type(tmp_path):
    """--tokenizer_type=auto follows the teacher (its checkpoint's files, its preset); a
    --tokenizer_type that is not the teacher's is refused, naming both."""
    from kbert.training import PretrainingConfig
    from kbert.training.config_fields import ConfigError

    def config(**kw):
        return PretrainingConfig(model_dir=str(tmp_path), train_steps=2,
                                 **{**RUN, **kw})

    assert config().resolved_tokenizer_type == "bpe"
    assert config(teacher="albert_base", preset="albert_base",
                  config_overrides={}).resolved_tokenizer_type == "sentencepiece"
    assert config(teacher="bert_tiny", preset="bert_tiny",
                  config_overrides={}).resolved_tokenizer_type == "wordpiece"
    with pytest.raises(ConfigError, match="--teacher with a wordpiece vocabulary .*speaks its "
                                          "teacher's bpe vocabulary"):
        config(tokenizer_type="wordpiece").validate()


@pytest.mark.slow
def test_a_roberta_teacher_distils_into_a_roberta_student(tmp_path):
    """A few steps from the tiny RoBERTa checkpoint: the student's model_dir holds vocab.json
    + merges.txt (the teacher's), a resume and `runs.read_run` read them back as bpe, and the
    exported SavedModel fills a mask with the teacher's tokens."""
    from kbert import convert
    from kbert.loading import runs
    from kbert.training import PretrainingConfig, run_pretraining

    model_dir, export_dir = tmp_path / "student", tmp_path / "export"
    logs = run_pretraining(PretrainingConfig(model_dir=str(model_dir), train_steps=2,
                                             export_dir=str(export_dir), **RUN))
    assert np.isfinite(logs["loss"]) and np.isfinite(logs["kl_loss"])
    assert {"vocab.json", "merges.txt"} <= set(os.listdir(model_dir))
    assert not os.path.exists(model_dir / "vocab.txt")
    teacher = convert.read(ROBERTA).tokenizer()
    run = runs.read_run(str(model_dir))
    assert run.tokenizer_type == "bpe"
    assert run.tokenizer().vocabulary == teacher.vocabulary
    assert [tuple(m) for m in run.tokenizer().merges] == [tuple(m) for m in teacher.merges]
    # A resume reads the files it wrote and trains on.
    run_pretraining(PretrainingConfig(model_dir=str(model_dir), train_steps=4, **RUN))
    assert tf.train.latest_checkpoint(str(model_dir / "checkpoints")).endswith("-4")
    # The export speaks the teacher's vocabulary too.
    assert {"vocab.json", "merges.txt"} <= set(
        p.name for p in export_dir.rglob("*") if p.is_file())
    served = tf.saved_model.load(str(export_dir))
    out = served.signatures["serving_default"](text=tf.constant(["the <mask> is here"]))
    assert out["num_masks"].numpy().tolist() == [1]
    ids = out["token"].numpy()[0, 0].tolist()
    sequences = [t.decode() for t in out["sequence"].numpy()[0, 0]]
    assert all(0 <= i < len(teacher.vocabulary) for i in ids), out
    assert all(s.endswith(" is here") for s in sequences), sequences
