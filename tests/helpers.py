"""Helpers shared by test modules (fixtures and hooks stay in conftest.py, which is not
imported: pytest loads it)."""

import numpy as np

# XLA_FLAGS for a process that compiles many small programs and runs each once or twice
# (JAX's eager ops while a tiny model is built, one train step): XLA's CPU backend without
# LLVM's optimizations, so compiling is cheaper. What such a test checks (shapes, finite
# losses, moved weights) does not depend on it; run time does (TensorFlow's learning tests,
# hundreds of steps, took 40% longer with it: not for them).
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def with_fast_compile(env):
    """`env` with FAST_COMPILE appended to its XLA_FLAGS (a copy)."""
    return dict(env, XLA_FLAGS=f"{env.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip())

TINY = dict(
    vocabulary_size=97,
    num_layers=2,
    hidden_size=32,
    num_heads=4,
    intermediate_size=64,
    max_sequence_length=24,
)


def random_batch(batch=4, seq=16, vocab=97, predictions=5, seed=0, padded=True):
    """Features and labels in kbert's names, with some padding and padded predictions."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(seq // 2, seq + 1, batch) if padded else np.full(batch, seq)
    padding_mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    token_ids = rng.integers(5, vocab, (batch, seq)).astype("int32") * padding_mask
    segment_ids = ((np.arange(seq)[None] >= lengths[:, None] // 2) * padding_mask).astype("int32")
    positions = np.stack([np.sort(rng.choice(l, predictions, replace=False)) for l in lengths])
    mask_weights = np.ones((batch, predictions), "float32")
    mask_weights[0, -2:] = 0.0  # padded predictions
    features = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
        "mask_positions": positions.astype("int32"),
    }
    labels = {
        "mask_ids": rng.integers(5, vocab, (batch, predictions)).astype("int32"),
        "mask_weights": mask_weights,
        "next_sentence_labels": rng.integers(0, 2, (batch,)).astype("int32"),
    }
    return features, labels


def shapes_only(build):
    """`build()`, with its variables' shapes but no values: built inside a
    `keras.StatelessScope(initialize_variables=False)`, where a variable keeps its shape and
    initializer and draws nothing. For `count_params()` of full-size presets: BERT-Large so
    takes under a second instead of tens (tests/test_helpers.py checks the count against a
    built model's). For counting and shapes only: its variables hold no values."""
    import keras
    from keras.src.backend.common import global_state  # the deferred variables' list

    waiting = list(global_state.get_global_attribute("uninitialized_variables", []))
    with keras.StatelessScope(initialize_variables=False):
        model = build()
    # Keras initializes every deferred variable when the next stateless scope closes (each
    # symbolic call opens one): forget this model's, so that no later test pays for them.
    global_state.set_global_attribute("uninitialized_variables", waiting)
    return model


def as_dataset(documents):
    """A tf.data.Dataset of documents, each a 1-D string tensor of sentences."""
    import tensorflow as tf  # here, not at the top: the JAX subprocess tests import this module

    return tf.data.Dataset.from_generator(
        lambda: iter(documents), output_signature=tf.TensorSpec([None], tf.string)
    )


def decayed_paths(optimizer, variables):
    """Paths of the `variables` that `optimizer`'s weight decay changes (no private API).

    It applies one update of zero gradients with the optimizer's per-weight state (AdamW's
    and LAMB's moments, gradient accumulators) set to zero, so that only the decay can move
    a weight; then it puts the variables and the optimizer's state back. The scalar state
    (the step, a constant learning rate) is kept: the learning rate must be > 0 at that step.
    Weights that are exactly 0 cannot show decay.
    """
    import keras

    if not optimizer.built:
        optimizer.build(variables)
    saved = [keras.ops.convert_to_numpy(v).copy() for v in variables]
    state = [keras.ops.convert_to_numpy(v).copy() for v in optimizer.variables]
    for v in optimizer.variables:
        if len(v.shape):
            v.assign(keras.ops.zeros_like(v))
    for _ in range(optimizer.gradient_accumulation_steps or 1):  # one real update
        optimizer.apply([keras.ops.zeros_like(v) for v in variables], variables)
    changed = {v.path for v, before in zip(variables, saved)
               if not np.array_equal(keras.ops.convert_to_numpy(v), before)}
    for v, value in zip(list(variables) + list(optimizer.variables), saved + state):
        v.assign(value)
    return changed


def run_program_here(config_class, run, tool, args):
    """A program's `main` (`config_fields.run_program` of `config_class` and `run` on its
    flags) in this process, as `python tools/<tool> ARGS` runs it, without the several seconds
    of a TensorFlow start-up: what the run printed. Where the tool would exit with a message,
    the `SystemExit` or absl `UsageError` that `app.run` prints propagates."""
    import contextlib
    import io
    import sys

    from absl import flags, logging

    from kbert.training import config_fields

    flag_values = flags.FlagValues()
    config_fields.define_program(config_class, flag_values)
    argv = [tool, *(str(arg) for arg in args)]
    flag_values(argv)
    verbosity, out = logging.get_verbosity(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            config_fields.run_program(config_class, run, argv[:1], flag_values=flag_values)
    finally:
        logging.set_verbosity(verbosity)
        sys.stdout.write(out.getvalue())  # shown with pytest -s, or on a failure
    return out.getvalue()
