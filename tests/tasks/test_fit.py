"""`fit` on a tf.data pipeline in graph mode (tf.function), as fine-tuning runs: features,
labels and label weights in the structures the task docstrings name."""

import numpy as np
import pytest

from kbert.tasks import QuestionAnswerer, TokenClassifier
from tests.tasks._checks import inputs_for, tiny_backbone


@pytest.mark.slow
def test_fit_on_datasets_in_graph_mode():
    import tensorflow as tf

    tagger = TokenClassifier(tiny_backbone("distil_bert"), num_classes=3)
    x = inputs_for(tagger)
    rng = np.random.default_rng(0)
    tags = rng.integers(0, 3, (4, 16)).astype("int32")
    weights = (rng.random((4, 16)) < 0.5) * x["padding_mask"]
    data = tf.data.Dataset.from_tensor_slices((x, tags, weights.astype("float32"))).batch(2)
    tagger.compile()
    history = tagger.fit(data, epochs=2, verbose=0).history
    assert sorted(history) == ["accuracy", "loss"] and np.isfinite(history["loss"]).all()

    qa = QuestionAnswerer(tiny_backbone("bert"))
    x = inputs_for(qa)
    spans = {"start_positions": np.array([1, 2, 0, 3]), "end_positions": np.array([2, 2, 0, 5])}
    data = tf.data.Dataset.from_tensor_slices((x, spans)).batch(2)
    qa.compile()
    history = qa.fit(data, epochs=2, verbose=0).history
    assert np.isfinite(history["loss"]).all()
    assert "start_logits_accuracy" in history and "end_logits_loss" in history
