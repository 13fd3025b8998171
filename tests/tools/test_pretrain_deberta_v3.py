"""tools/pretrain.py with a DeBERTa-v3 preset: the masked LM on a WordPiece vocabulary, and
the SavedModel of its backbone."""

import numpy as np
import pytest
import tensorflow as tf

from tests.tools.test_pretrain import run_tool, small_run_flags, vocab_file  # noqa: F401


@pytest.mark.slow
def test_deberta_v3_masked_lm_trains_and_exports(tmp_path, vocab_file):  # noqa: F811
    import keras

    from kbert import presets
    from kbert.models import DebertaV3Pretrainer

    model_dir, export_dir = tmp_path / "run", tmp_path / "export"
    overrides = ["--config_override=num_layers=2", "--config_override=hidden_size=32",
                 "--config_override=num_heads=2", "--config_override=intermediate_size=64",
                 "--config_override=position_buckets=8"]
    result = run_tool(small_run_flags(model_dir, vocab_file, steps=20,
                                      preset="deberta_v3_xsmall", objective="mlm",
                                      export_dir=export_dir) + overrides)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "mlm_accuracy" in result.stdout and "Exported the backbone" in result.stdout

    vocabulary_size = sum(1 for _ in open(vocab_file, encoding="utf-8"))
    model = presets.load("deberta_v3_xsmall", head="mlm", weights=None, num_layers=2,
                         hidden_size=32, num_heads=2, intermediate_size=64, position_buckets=8,
                         vocabulary_size=vocabulary_size)
    assert isinstance(model, DebertaV3Pretrainer)
    path = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
    tf.train.Checkpoint(model=list(model.variables)).restore(path).expect_partial()
    ids = np.array([[2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 3, 0]], "int32")
    inputs = {"token_ids": ids, "padding_mask": (ids > 0).astype("int32")}
    expected = keras.ops.convert_to_numpy(model.backbone(inputs)["sequence_output"])
    served = tf.saved_model.load(str(export_dir)).signatures["serving_ids"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    mask = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(served["sequence_output"].numpy()[mask], expected[mask],
                               atol=1e-5)
