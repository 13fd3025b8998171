"""A kbert-made MobileBERT goes to Hugging Face with a zero [PAD] row (issue 20):
transformers' MobileBertEmbeddings reads the pad id's token row at padded positions (the
3-token window), kbert's reads zeros there, so the written row must be zero for transformers'
outputs on a padded batch to be kbert's. Every other weight is written as it is."""

import json

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file

import kbert.convert
from kbert import models

TABLE = "mobilebert.embeddings.word_embeddings.weight"
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]


def _model(head):
    keras.utils.set_random_seed(3)
    config = models.MobileBertConfig(
        vocabulary_size=len(VOCABULARY), num_layers=2, hidden_size=16, num_heads=2,
        intermediate_size=32, max_sequence_length=16, embedding_size=8,
        intra_bottleneck_size=8, num_feedforward_networks=2)
    model = models.build("mobile_bert", config, head=head)
    table = model.backbone.embeddings.token_embedding.embeddings if head else \
        model.embeddings.token_embedding.embeddings
    assert np.abs(np.asarray(table)[0]).min() > 0  # a random [PAD] row: the test can fail
    return model, table


@pytest.mark.parametrize("head", [None, "pretrainer"])
def test_the_saved_pad_row_is_zero_and_the_rest_unchanged(tmp_path, head):
    model, table = _model(head)
    before = {w.path: np.array(w) for w in model.weights}
    kbert.convert.save_hugging_face(model, tmp_path / "out", vocabulary=VOCABULARY)
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    pad = config["pad_token_id"]
    assert pad == VOCABULARY.index("[PAD]")
    written = load_file(str(tmp_path / "out" / "model.safetensors"))
    name = TABLE if head else TABLE.removeprefix("mobilebert.")
    np.testing.assert_array_equal(written[name][pad], 0)
    expected = np.asarray(table).copy()
    np.testing.assert_array_equal(written[name][pad + 1:], expected[pad + 1:])
    # The model itself is untouched: kbert keeps its own row.
    assert all(np.array_equal(np.array(w), before[w.path]) for w in model.weights)
    # Every other tensor is the model's (read back by kbert, the same outputs).
    again = kbert.convert.load(tmp_path / "out")
    ids = np.array([[2, 7, 9, 11, 3, 0, 0], [2, 5, 3, 0, 0, 0, 0]], np.int32)
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": (ids != 0).astype(np.int32)}
    ours = model(x) if head is None else model.backbone(x)
    theirs = again(x) if head is None else again.backbone(x)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(theirs["sequence_output"]),
                               keras.ops.convert_to_numpy(ours["sequence_output"]), atol=1e-6)
