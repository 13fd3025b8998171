"""Long sequences in blocks of queries (`kbert.layers.query_blocks`), and BERT's feed-forward
network in the same blocks of positions: the same outputs and gradients as the whole score
matrix and activations (within 1e-5) with padding, a last block cut short,
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


@pytest.fixture
def spied(monkeypatch):
    """The query shapes `query_blocks.in_blocks` was called with (traced or eager)."""
    seen, real = [], query_blocks.in_blocks

    def spy(attend, query, *args, **kwargs):
        seen.append(tuple(query.shape))
        return real(attend, query, *args, **kwargs)

    monkeypatch.setattr(query_blocks, "in_blocks", spy)
    return seen


def _inputs(length=19, width=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, length, width)).astype("float32")
    mask = np.ones((2, length), "int32")
    mask[1, 13:] = 0
    return x, mask


def test_an_encoder_block_gives_the_whole_matrix_outputs_and_gradients(blocked, spied):
    """Gradients through the blocks too (a model called outside training); a training step
    keeps the whole matrix."""
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
    # The blocked call ran the blocks: of queries, then of positions (the feed-forward).
    assert spied == [(2, 19, 2, 8), (2, 19, 16)]
    real = mask.astype(bool)
    np.testing.assert_allclose(results[True][0][real], results[False][0][real], atol=1e-5,
                               rtol=0)
    for got, want in zip(results[True][1], results[False][1]):
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-5)
    block(x, padding_mask=mask, training=True)
    assert len(spied) == 2


def _loops(function):
    """The loop ops of a traced tf.function's graph and of the functions it calls."""
    graph = function.get_concrete_function().graph.as_graph_def()
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return [n.name for n in nodes if n.op in ("While", "StatelessWhile")]


def test_in_a_graph_of_open_shapes_the_caller_chooses_by_the_batch(blocked):
    """A tf.function of open batch and length traced inside `traced_for(True)` runs the
    blocks alone (a loop per layer for the attention and one for the feed-forward), inside
    `traced_for(False)` or outside it (an export's graph) the whole matrix alone: no loop,
    no `cond`. Each equals the whole matrix eagerly on a long and a short batch (LONG 8:
    2 x 19 x 19 and 2 x 5 x 5 pairs a head, long and short by `is_long`)."""
    blocked(True)
    assert query_blocks.is_long(2, 19) and not query_blocks.is_long(2, 5)
    assert query_blocks.is_long(1, 8) and not query_blocks.is_long(1, 7)
    backbone = models.BertBackbone(vocabulary_size=50, num_layers=2, hidden_size=16,
                                   num_heads=2, intermediate_size=24, max_sequence_length=32)
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in backbone.input}

    def graph(long):
        def run(x):
            with query_blocks.traced_for(long):
                return backbone(x)["sequence_output"]
        return tf.function(run, input_signature=[spec])

    graphs = {"long": graph(True), "short": graph(False), "exported": tf.function(
        lambda x: backbone(x)["sequence_output"], input_signature=[spec])}
    assert [len(_loops(graphs[name])) for name in graphs] == [4, 0, 0]
    for name, function in graphs.items():
        definition = function.get_concrete_function().graph.as_graph_def()
        ops = {n.op for n in definition.node} | {
            n.op for f in definition.library.function for n in f.node_def}
        assert not ops & {"If", "StatelessIf"}, name
    for length in (19, 5):
        rng = np.random.default_rng(length)
        ids = rng.integers(3, 50, (2, length)).astype("int32")
        inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                  "padding_mask": np.ones_like(ids)}
        blocked(False)
        whole = np.asarray(backbone(inputs)["sequence_output"])
        blocked(True)
        for function in graphs.values():
            np.testing.assert_allclose(np.asarray(function(inputs)), whole, atol=1e-5, rtol=0)


def _one_layer_backbone_and_long_ids():
    """A one-layer BERT backbone and its inputs for 2 rows of 19 tokens (blocked: LONG 8)."""
    backbone = models.BertBackbone(vocabulary_size=50, num_layers=1, hidden_size=16,
                                   num_heads=2, intermediate_size=24, max_sequence_length=32)
    ids = np.random.default_rng(0).integers(3, 50, (2, 19)).astype("int32")
    return backbone, {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                      "padding_mask": np.ones_like(ids)}


def test_the_pipelines_runner_runs_long_batches_in_blocks(blocked, spied):
    """`KerasRunner` traces a graph of open shapes for long batches, in blocks, when one
    first comes, and another for short ones, whole; each batch runs the one its shape asks
    for, and a second batch of either kind traces nothing."""
    from kbert.pipelines.model_source import KerasRunner

    blocked(True)
    backbone, inputs = _one_layer_backbone_and_long_ids()
    short = {name: value[:, :5] for name, value in inputs.items()}
    runner = KerasRunner(backbone)
    got = runner(inputs)["sequence_output"]
    assert spied == [(None, None, 2, 8), (None, None, 16)]  # traced once, shapes open
    got_short = runner(short)["sequence_output"]
    assert len(spied) == 2 and sorted(runner._graphs) == [False, True]
    runner({name: value[:, :17] for name, value in inputs.items()})
    runner({name: value[:, :4] for name, value in inputs.items()})
    assert [f.experimental_get_tracing_count() for f in runner._graphs.values()] == [1, 1]
    blocked(False)
    np.testing.assert_allclose(got, np.asarray(backbone(inputs)["sequence_output"]),
                               atol=1e-5, rtol=0)
    np.testing.assert_allclose(got_short, np.asarray(backbone(short)["sequence_output"]),
                               atol=1e-5, rtol=0)


def test_each_step_sees_one_block_of_queries_and_of_what_is_cut_with_them():
    shapes = []

    def attend(query, runs):
        shapes.append((tuple(query.shape), tuple(runs.shape)))
        return query * 2.0

    query = keras.ops.reshape(keras.ops.arange(2 * 1000 * 3, dtype="float32"), (2, 1000, 3))
    runs = keras.ops.ones((2, 1000), "int32")
    out = query_blocks.in_blocks(attend, query, (runs,), block=256)
    np.testing.assert_array_equal(np.asarray(out), 2 * np.asarray(query))
    assert set(shapes) == {((2, 256, 3), (2, 256))}  # 4 blocks, the last padded, never [S, S]


def test_modern_bert_global_and_window_layers_with_packed_documents(blocked, spied):
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
    assert len(spied) == 2  # the global layer, with and without documents


def test_float16_packed_documents_give_finite_gradients(blocked):
    """Under mixed_float16 the rows that pad the last block see keys (not all -inf: a NaN
    row would reach the gradient); a full row of three documents, 23 tokens in blocks of 4."""
    keras.config.set_dtype_policy("mixed_float16")  # tests/conftest.py sets float32 back
    backbone = models.ModernBertBackbone(vocabulary_size=60, num_layers=1, hidden_size=16,
                                         num_heads=2, intermediate_size=24,
                                         max_sequence_length=64)
    blocked(True)
    x = tf.constant(_inputs(length=23)[0], tf.float16)
    documents = np.repeat([[1, 2, 3]], 2, axis=0).repeat([9, 6, 8], axis=1).astype("int32")
    layer = backbone.transformer_layers[0]
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x, padding_mask=np.ones((2, 23), "int32"), document_ids=documents)
        loss = tf.reduce_sum(tf.cast(out, tf.float32))
    grads = tape.gradient(loss, [x, *layer.trainable_variables])
    assert all(np.isfinite(np.asarray(g, np.float32)).all() for g in grads)


def test_a_task_models_inference_graphs_hold_the_blocks_for_long_batches(blocked):
    """`predict` on texts (`kbert.tasks.length_groups`): a graph of open shapes for long
    batches, in blocks, and one for short batches, whole."""
    from kbert.tasks import length_groups

    blocked(True)
    backbone, inputs = _one_layer_backbone_and_long_ids()
    short = {name: value[:, :5] for name, value in inputs.items()}
    infer = length_groups._inference(backbone)
    got, got_short = (infer(x)["sequence_output"] for x in (inputs, short))
    graphs = {long: graph for (_, long), graph in length_groups._GRAPHS[backbone].items()}
    # The long graph: the attention's loop and the feed-forward's; the short one: none.
    assert {long: len(_loops(graph)) for long, graph in graphs.items()} == {True: 2, False: 0}
    blocked(False)
    np.testing.assert_allclose(got, np.asarray(backbone(inputs)["sequence_output"]),
                               atol=1e-5, rtol=0)
    np.testing.assert_allclose(got_short, np.asarray(backbone(short)["sequence_output"]),
                               atol=1e-5, rtol=0)


def test_a_batch_of_shorter_sequences_as_large_runs_in_smaller_blocks(monkeypatch):
    """The whole matrix's size chooses, B x S x S, not the length alone: 2 rows of 7 tokens
    (98 pairs a head, over LONG x LONG = 64) run in blocks, of 2 queries where 2 rows of 4
    would pass BATCH_ROWS = 4, eagerly (equal to the whole matrix) and in the runner's graph
    of open shapes for long batches, whose blocks (marked by +100 there) ran for that batch,
    not for one row of 7 (49 pairs: the short batches' graph)."""
    from kbert.pipelines.model_source import KerasRunner

    monkeypatch.setattr(query_blocks, "LONG", LONG)
    monkeypatch.setattr(query_blocks, "BLOCK", BLOCK)
    monkeypatch.setattr(query_blocks, "BATCH_ROWS", 4)
    assert [query_blocks.rows_per_block(b) for b in (1, 2, 3, 8)] == [4, 2, 1, 1]
    assert [int(query_blocks.rows_per_block(tf.constant(b))) for b in (1, 2, 3, 8)] == [
        4, 2, 1, 1]
    steps, real, mark = [], query_blocks.in_blocks, [0.0]

    def spy(attend, query, per_query=(), block=None):
        steps.append((tuple(query.shape), block if isinstance(block, int) else "traced"))
        return real(attend, query, per_query, block) + mark[0]

    monkeypatch.setattr(query_blocks, "in_blocks", spy)
    backbone = models.BertBackbone(vocabulary_size=50, num_layers=1, hidden_size=16,
                                   num_heads=2, intermediate_size=24, max_sequence_length=32)
    ids = np.random.default_rng(1).integers(3, 50, (2, 7)).astype("int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
              "padding_mask": np.ones_like(ids)}
    one_row = {k: v[:1] for k, v in inputs.items()}
    blocked = np.asarray(backbone(inputs)["sequence_output"])
    assert steps == [((2, 7, 2, 8), 2), ((2, 7, 16), 2)]
    backbone(one_row)  # 49 pairs: whole
    assert len(steps) == 2
    mark[0] = 100.0
    runner = KerasRunner(backbone)
    marked = {"two": runner(inputs)["sequence_output"], "one": runner(one_row)["sequence_output"]}
    assert steps[2:] == [((None, None, 2, 8), "traced"),
                         ((None, None, 16), "traced")]  # the long graph; one row's: whole
    monkeypatch.setattr(query_blocks, "LONG", 10**9)
    whole = np.asarray(backbone(inputs)["sequence_output"])
    np.testing.assert_allclose(blocked, whole, atol=1e-5, rtol=0)
    assert np.abs(marked["two"] - whole).max() > 1.0  # the blocks ran for 2 rows of 7
    np.testing.assert_allclose(marked["one"], whole[:1], atol=1e-5, rtol=0)  # not for one


def test_a_known_long_length_with_an_open_batch_runs_in_blocks(blocked, spied):
    """A graph traced for [None, 19] (Keras' predict relaxes the batch of its last, smaller
    batch): the known length alone chooses the blocks, outside `traced_for` too."""
    blocked(True)
    block = layers.TransformerEncoder(num_heads=2, intermediate_size=24)
    x, mask = _inputs()
    graph = tf.function(lambda a, m: block(a, padding_mask=m), input_signature=[
        tf.TensorSpec([None, 19, 16]), tf.TensorSpec([None, 19], tf.int32)])
    got = np.asarray(graph(x, mask))
    assert set(spied) == {(None, 19, 2, 8), (None, 19, 16)}  # traced (the layer builds on a first trace)
    blocked(False)
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], np.asarray(block(x, padding_mask=mask))[real],
                               atol=1e-5, rtol=0)
