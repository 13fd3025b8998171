"""Long sequences in blocks of queries (`kbert.layers.query_blocks`): the same outputs and
gradients as the whole score matrix (within 1e-5) with padding, a last block cut short,
ModernBERT's windows and packed documents, eagerly and in a graph of open shapes; no step
sees more than a block of queries."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert import layers, models
from kbert.layers import query_blocks

LONG, BLOCK = 8, 4  # tiny, so that a 19-token sequence is blocked: 5 blocks, the last cut


@pytest.fixture
def blocked(monkeypatch):
    """Sets the blocking on (from LONG tokens, BLOCK queries a step) or off (`False`)."""
    def set_to(on):
        monkeypatch.setattr(query_blocks, "LONG", LONG if on else 10**9)
        monkeypatch.setattr(query_blocks, "BLOCK", BLOCK)
    return set_to


def _inputs(length=19, width=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, length, width)).astype("float32")
    mask = np.ones((2, length), "int32")
    mask[1, 13:] = 0
    return x, mask


def test_an_encoder_block_gives_the_whole_matrix_outputs_and_gradients(blocked):
    block = layers.TransformerEncoder(num_heads=2, intermediate_size=24)
    x, mask = _inputs()
    x = tf.constant(x)
    results = {}
    for on in (False, True):
        blocked(on)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = block(x, padding_mask=mask)
            loss = tf.reduce_sum(out * out)
        grads = tape.gradient(loss, [x, *block.trainable_variables])
        results[on] = (np.asarray(out), [np.asarray(g) for g in grads])
    real = mask.astype(bool)
    np.testing.assert_allclose(results[True][0][real], results[False][0][real], atol=1e-5,
                               rtol=0)
    for got, want in zip(results[True][1], results[False][1]):
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-5)


def test_in_a_graph_of_open_shapes_the_length_chooses_at_run_time(blocked):
    """A tf.function of open batch and length (the pipelines' runner): both ways are in the
    graph; a long call runs the blocks, a short one the whole matrix, each equal to eager."""
    blocked(True)
    backbone = models.BertBackbone(vocabulary_size=50, num_layers=2, hidden_size=16,
                                   num_heads=2, intermediate_size=24, max_sequence_length=32)
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in backbone.input}
    graph = tf.function(lambda x: backbone(x)["sequence_output"], input_signature=[spec])
    seen = []
    real_in_blocks = query_blocks.in_blocks

    def counting(attend, query, *args, **kwargs):
        seen.append(tuple(query.shape))
        return real_in_blocks(attend, query, *args, **kwargs)

    for length in (19, 5):
        rng = np.random.default_rng(length)
        ids = rng.integers(3, 50, (2, length)).astype("int32")
        inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                  "padding_mask": np.ones_like(ids)}
        blocked(False)
        whole = np.asarray(backbone(inputs)["sequence_output"])
        blocked(True)
        np.testing.assert_allclose(np.asarray(graph(inputs)), whole, atol=1e-5, rtol=0)
    query_blocks.in_blocks = counting
    try:  # a new trace: the blocks are in the graph of open shapes, once per layer
        tf.function(lambda x: backbone(x)["sequence_output"],
                    input_signature=[spec]).get_concrete_function()
    finally:
        query_blocks.in_blocks = real_in_blocks
    assert len(seen) == 2 and all(shape[1] is None for shape in seen), seen


def test_each_step_sees_one_block_of_queries_and_every_key():
    shapes = []

    def attend(query, runs):
        shapes.append((tuple(query.shape), tuple(runs.shape)))
        return query * 2.0

    query = keras.ops.reshape(keras.ops.arange(2 * 1000 * 3, dtype="float32"), (2, 1000, 3))
    runs = keras.ops.ones((2, 1000), "int32")
    out = query_blocks.in_blocks(attend, query, (runs,), block=256)
    np.testing.assert_array_equal(np.asarray(out), 2 * np.asarray(query))
    assert set(shapes) == {((2, 256, 3), (2, 256))}  # 4 blocks, the last padded, never [S, S]


def test_modern_bert_global_and_window_layers_with_packed_documents(blocked):
    """A global and a window layer, each on packed documents and on plain padded rows:
    blocked = the whole matrix (its `return_attention_probs` path: explicit, every row)."""
    backbone = models.ModernBertBackbone(vocabulary_size=60, num_layers=2, hidden_size=16,
                                         num_heads=2, intermediate_size=24,
                                         max_sequence_length=64, local_attention=6,
                                         global_attn_every_n_layers=2)
    x, mask = _inputs(length=23)
    documents = np.repeat([[1, 2, 3]], 2, axis=0).repeat([9, 6, 8], axis=1).astype("int32")
    blocked(True)
    for layer in backbone.transformer_layers:  # global, then window
        for kwargs in ({}, {"document_ids": documents}):
            got = np.asarray(layer(x, padding_mask=mask, **kwargs))
            whole, _ = layer(x, padding_mask=mask, return_attention_probs=True, **kwargs)
            real = mask.astype(bool)
            np.testing.assert_allclose(got[real], np.asarray(whole)[real], atol=1e-5, rtol=0)
