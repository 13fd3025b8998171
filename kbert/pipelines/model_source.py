"""A model as the pipelines see it: a runner from model inputs to numpy outputs, the
tokenizer, and the kind of model, which says the pipeline tasks it serves. `sources` and
`saved_model_source` make one from what `model=` names."""

import functools

import numpy as np

from kbert.layers import query_blocks
from kbert.tasks import registry

# Kind of model (a task record's name) -> the pipeline tasks it serves: its task's, and
# feature-extraction through its backbone (`TaskRecord.serves`).
SERVES = {record.name: record.serves for record in registry.RECORDS.values()}


class Source:
    """A model ready for a pipeline.

    Attributes:
        runner: features dict (`token_ids`, `segment_ids`, `padding_mask`, maybe
            `mask_positions`; int32 [B, S]) -> numpy outputs.
        tokenizer: the kbert tokenizer.
        kind: a key of `SERVES`.
        name: what the model is, for messages (its class, or "SavedModel ...").
        label_names: class / tag names (classifiers), else None.
        problem_type: a `TextClassifier`'s declared one ("single_label", "multi_label",
            "regression"); `None` where it is not stated, which transformers' pipeline
            scores by the number of outputs (one: a sigmoid).
        max_length: the longest sequence the model takes.
        serves: the pipeline tasks it serves (default: `SERVES[kind]`).
        windows: an extractive summarizer's `windows` setting ("first" or "all": what of a
            long document it scores), else None.
        segments: an extractive summarizer's `segments` setting ("sentence" or
            "paragraph": what its segment ids alternate by), else None.
        options: the pipeline options an export fixed in its graph, for the same pipeline:
            the pipeline's defaults on it (a call's own override them); else {}.
    """

    def __init__(self, runner, tokenizer, kind, name, max_length, label_names=None,
                 problem_type=None, serves=None, windows=None, segments=None, options=None):
        self.runner = runner
        self.tokenizer = tokenizer
        self.kind = kind
        self.name = name
        self.max_length = int(max_length)
        self.label_names = None if label_names is None else list(label_names)
        self.problem_type = problem_type
        self.serves = tuple(SERVES[kind] if serves is None else serves)
        self.windows = windows
        self.segments = segments
        self.options = dict(options or {})

    def check_serves(self, task):
        if task not in self.serves:
            raise ValueError(
                f"{task} cannot run on {self.name} (a {self.kind.replace('_', ' ')}): it "
                f"serves {', '.join(self.serves)}.")


def _numpy(x):
    import keras

    return np.asarray(keras.ops.convert_to_numpy(x)).astype(np.float32)


class KerasRunner:
    """Calls a Keras model on the inputs it takes (DistilBERT has no `segment_ids`).

    Under the TensorFlow backend the call is a `tf.function` whose batch and sequence
    dimensions are open (`input_signature`): the length-grouped batches, each of its own
    length, reuse one graph instead of running op by op (eagerly, a MiniLM classifier took
    twice as long over 30 batches of 8 to 40 tokens), and a row's numbers do not depend on
    which batches ran before it. Two such graphs, each traced when a batch first needs it:
    one for short batches (the whole attention matrix) and one for long ones, in blocks of
    queries (`kbert.layers.query_blocks.is_long`, `traced_for`). Other backends call the
    model."""

    def __init__(self, model, max_length=None):
        self.model = model
        self.input_names = list(model.input)
        self.max_length = max_length  # the model's positions: a compiled call pads up to it
        self._graphs = {}  # long batches? -> its graph
        self._compiled = None

    def compiled(self):
        """This model's runner with XLA (`CompiledRunner`), made once."""
        if self._compiled is None:
            self._compiled = CompiledRunner(self.model, self.max_length)
        return self._compiled

    def _call(self, inputs):
        import keras

        if keras.backend.backend() != "tensorflow":
            return self.forward(inputs)
        import tensorflow as tf

        # Large batches (batch x length x length) run attention in blocks of queries (bounded
        # memory), small ones the whole matrix: a graph of open shapes for each.
        long = query_blocks.is_long(*np.shape(inputs["token_ids"])[:2])
        if long not in self._graphs:
            spec = {name: tf.TensorSpec([None, None], tf.int32, name) for name in inputs}
            self._graphs[long] = tf.function(functools.partial(self._traced, long),
                                             input_signature=[spec])
        return self._graphs[long]({name: tf.convert_to_tensor(value, tf.int32)
                                   for name, value in inputs.items()})

    def _traced(self, long, inputs):
        with query_blocks.traced_for(long):
            return self.forward(inputs)

    def forward(self, inputs):
        """The model on one batch of its inputs (a subclass runs another forward)."""
        return self.model(inputs, training=False)

    def __call__(self, features):
        outputs = self._call({name: features[name] for name in self.input_names})
        if isinstance(outputs, dict):
            return {name: _numpy(value) for name, value in outputs.items()}
        return _numpy(outputs)


class ExitingRunner(KerasRunner):
    """An `EarlyExitClassifier`'s early-exit forward (`exit_early` with `setting`, e.g.
    {"entropy": 0.1}) as a pipeline's runner: the logits of each row's exit. Not compiled
    with XLA: the batch shrinks as rows exit, a shape per layer that only the run knows."""

    compiled = None
    not_compiled = "early exit's batch shrinks as its rows exit, shapes XLA cannot compile"

    def __init__(self, model, max_length, setting):
        super().__init__(model, max_length)
        self.setting = dict(setting)

    def forward(self, inputs):
        return self.model.exit_early(inputs, **self.setting)["logits"]


# A compiled runner pads each batch's length up to a multiple of this (never past the model's
# positions): XLA compiles a program per shape, and 16 keeps the shapes few (at most one per
# 16 tokens and batch size) while adding under 16 padded tokens to a batch.
LENGTH_STEP = 16
# The inputs of one position per token, padded with the batch's length (`mask_positions`, one
# per mask, is not).
_PER_TOKEN = ("token_ids", "segment_ids", "padding_mask", "document_ids")


def _inference(model, inputs):
    return model(inputs, training=False)


class CompiledRunner(KerasRunner):
    """A Keras model's call compiled by XLA (`tf.function(jit_compile=True)`), for the
    pipelines' `jit_compile=True` (TensorFlow only: the pipelines refuse it under another
    backend): each batch's length is padded up to a multiple of `LENGTH_STEP` (masked: a
    row's answers are those of its tokens alone, within float rounding), and each new shape
    [batch, length] compiles once, then runs from the compiled program, kept while the runner
    lives (at most one per 16 tokens of length and batch size). Per-token output rows keep
    the padded length (`batching.run`'s rows: the pipelines cut them to their sequence). Each
    shape is its own program, so a row's floats may differ in the last bits with the batch it
    ran in (unlike `KerasRunner`'s graphs of open shapes)."""

    def __init__(self, model, max_length=None):
        super().__init__(model, max_length)
        self._functions = {}  # input shapes -> a tf.function traced and compiled for them

    def compiled(self):
        return self

    def _padded(self, inputs):
        length = inputs["token_ids"].shape[1]
        target = -(-length // LENGTH_STEP) * LENGTH_STEP
        if self.max_length is not None:
            target = max(length, min(target, self.max_length))
        if target == length:
            return inputs
        return {name: np.pad(value, ((0, 0), (0, target - length))) if name in _PER_TOKEN
                else value for name, value in inputs.items()}

    def _call(self, inputs):
        import tensorflow as tf

        inputs = self._padded({name: np.asarray(value, np.int32)
                               for name, value in inputs.items()})
        # A function per shape, each traced once. TensorFlow counts traces by the Python
        # function's code object, so functions of one lambda would still warn of "excessive"
        # retracing from the sixth shape on; a partial has no code object of its own.
        key = tuple(sorted((name, value.shape) for name, value in inputs.items()))
        if key not in self._functions:
            self._functions[key] = tf.function(functools.partial(_inference, self.model),
                                               jit_compile=True)
        return self._functions[key]({name: tf.constant(value)
                                     for name, value in inputs.items()})
