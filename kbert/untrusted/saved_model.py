"""SavedModels from elsewhere are checked before anything in them runs.

A SavedModel is a program: `tf.saved_model.load` runs its resource initializers and restore
functions, and its signatures run whatever ops its graph holds: reading and writing files,
Python callbacks, allocations of any size, loops that never end. `check_saved_model` reads
`saved_model.pb` as a protocol buffer, runs nothing, and refuses what kbert's own exports never
contain (`kbert.untrusted.ops`). `load_saved_model` copies the directory, checks the
copy and loads it: every kbert path that loads a SavedModel goes through it.

Two things kbert's own exports hold need more than an op list (RoBERTa's byte-level BPE,
`kbert.tokenizers.BytePairTokenizer`; the extractive summarizer's `StatelessWhile` loops, a
step per sentence, are checked as its `While`):

  - a `While` loop (merge pairs until none applies). A loop passes when `tf.while_loop`'s
    counter against `maximum_iterations` bounds it, and that bound is either a constant up
    to `max_loop_constant` (1024), or a sum of at most `MAX_BOUND_TERMS` (4) sizes of
    tensors the loop is given (`Size` of a tensor, or one dimension of its `Shape`), plus
    constants adding up to at most `max_loop_constant`. Any tensor's size counts, the
    request's bytes (`Size` of `tf.strings.bytes_split(text)`) included: the tensor is
    already in memory, so the loop's steps are linear in what was allocated before it (a
    linear bound in the input's size). kbert's loop says `maximum_iterations=size(ids) + 1`
    (each step but the last merges a pair, one id fewer). A bound computed any other way (a
    string's length as a number, a product of sizes, a size added to itself more than 4
    times, a big constant) or none is refused. A loop that runs inside another loop (in its
    condition or body, or in a function they call) is refused however it is bounded: the
    steps would multiply (size**depth); kbert's exports nest no loops. The condition and the
    body are functions of the library and pass the same check as every function (a file op
    in a body is refused); the ops that would accumulate a tensor per step (TensorList,
    TensorArray) are not allowed. Per step a body allocates what the ops outside a loop may:
    sizes computed from the request are not bounded, in a loop or not (below);
  - a hash table filled at load (the merge table: `HashTableV2` made by the resource's
    `_create_resource`, `LookupTableImportV2` in its `_initialize`). It passes when its keys
    and values are constants of the SavedModel (a `Const`, or a captured constant of the object
    graph that names a `Const`): data the check has read and capped (all the tables' fills
    together: `max_elements` elements and `max_elements` bytes of strings, each string
    constant counted as it expands, its last value repeated up to its shape), no file,
    nothing of the
    request. Filling a table while serving, from the request, and mutable tables (which grow
    with the requests) are refused. The bound inputs of the object graph are trusted only for
    a function no function of the library calls; a call into a load-time function from a
    function that runs later (a serving function calling the table's initializer with the
    request's strings) is refused, and the main graph's init call may pass it only constants
    and the resources it makes.

What it cannot see (a check of ops is not a sandbox): sizes computed at call time (from the
request, a huge batch or a long text, or in the graph from it) and bugs in TensorFlow's
kernels or its protobuf parser. Load only what you could also run as code.
"""

import logging
import os
import shutil
import tempfile
import weakref

from kbert.untrusted.checker import (
    DEFAULT_MAX_ELEMENTS, DEFAULT_MAX_LOOP_CONSTANT, MAX_BOUND_TERMS, Checker,
)
from kbert.untrusted.files import UnsafeSavedModelError, copy_saved_model, read_saved_model
from kbert.untrusted.library import MAX_EXPANDED_NODES

logger = logging.getLogger(__name__)
__all__ = ["DEFAULT_MAX_ELEMENTS", "DEFAULT_MAX_LOOP_CONSTANT", "MAX_BOUND_TERMS",
           "MAX_EXPANDED_NODES", "UnsafeSavedModelError", "check_saved_model",
           "load_saved_model"]


def load_saved_model(path, *, trusted=False, max_elements=DEFAULT_MAX_ELEMENTS,
                     max_loop_constant=DEFAULT_MAX_LOOP_CONSTANT):
    """`check_saved_model` then `tf.saved_model.load`, on a private copy of `path`.

    The directory is first copied into a new temporary directory of its own (readable by this
    user only), so that what is checked is what is loaded even if `path` changes meanwhile;
    the copy is removed when the returned object is garbage-collected. It takes as much disk
    as the SavedModel (variables/ included), under `tempfile.gettempdir()` (`TMPDIR`). Links
    and anything but regular files are refused while copying, never followed.

    Args:
        path: the SavedModel directory.
        trusted: skip the check (logged as a warning) and the copy: only for SavedModels you
            could also run as code, e.g. your own.
        max_elements: the largest tensor a constant shape may allocate.
        max_loop_constant: the largest constant part of a loop's iteration bound.
    """
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops kbert's exports use)

    directory = os.path.realpath(os.fspath(path))
    if trusted:
        logger.warning("NOT CHECKING the SavedModel %s (trusted=True): whatever its graph "
                       "holds runs, file and Python ops included.", directory)
        return tf.saved_model.load(directory)
    private = os.path.realpath(tempfile.mkdtemp(prefix="kbert-saved-model-"))
    try:
        copy = os.path.join(private, "saved_model")
        try:
            copy_saved_model(directory, copy)
            check_saved_model(copy, max_elements=max_elements,
                              max_loop_constant=max_loop_constant)
        except UnsafeSavedModelError as e:  # named as the caller knows it
            raise UnsafeSavedModelError(str(e).replace(copy, directory)) from None
        loaded = tf.saved_model.load(copy)
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    # Assets are read from the copy: it lives as long as the loaded object.
    weakref.finalize(loaded, shutil.rmtree, private, ignore_errors=True)
    return loaded


def check_saved_model(path, *, max_elements=DEFAULT_MAX_ELEMENTS,
                      max_loop_constant=DEFAULT_MAX_LOOP_CONSTANT):
    """Refuses a SavedModel holding anything kbert's own exports do not, before it runs.

    Reads the directory's files and `saved_model.pb` (or `.pbtxt`) as a protocol buffer and
    walks every graph and every function of its library (signatures, resource initializers,
    the checkpoint functions, and the functions that `While`, `If` and calls name). Refused:

      - an op outside `kbert.untrusted.ops.ALLOWED_OPS`: file reads and writes,
        Python callbacks, summary and record writers, anything else kbert never exports;
        checkpoint ops (`SaveV2`, `RestoreV2`, ...) are allowed only in the functions the
        SavedModel's `saver_def` names and nothing else calls (the object graph revives
        none of them), on the path the loader passes them;
      - files that are links or not regular files, assets outside `assets/`, lookup tables
        read from a file (kbert's exports read none; the message says whether the name is
        an asset, a path written in the graph or one from the request);
      - constants, constant shapes and variables of more than `max_elements` elements;
        string constants that expand to more than `max_elements` bytes (TensorFlow repeats
        a TensorProto's last value up to its shape: the values' lengths times their
        repetitions are counted); tables filled at load with more than `max_elements`
        elements, or bytes of strings, in all;
      - in the functions that run during `tf.saved_model.load` itself (resources'
        `_create_resource`, `_initialize` and `_destroy_resource`, the save and restore
        functions of saveable objects, and all they call): any op outside
        `kbert.untrusted.ops.LOAD_TIME_OPS`, and any allocation whose shape does not fold to
        constants under the cap;
      - loops whose `maximum_iterations` is neither a constant up to `max_loop_constant`
        nor a sum of at most `MAX_BOUND_TERMS` sizes of tensors they are given plus
        constants up to `max_loop_constant` (kbert's BPE loop: `size(ids) + 1`), loops
        inside another loop's condition or body (at any depth of calls), and functions that
        call themselves;
      - lookup tables filled (`LookupTableImportV2`) anywhere but inside
        `tf.saved_model.load`, or from anything but constants of the SavedModel; calls into
        the functions that run inside `tf.saved_model.load` from any other function (the
        main graph's init call only with constants and resources);
      - functions whose nodes, with their calls expanded (a function called from two
        places counts twice), exceed `MAX_EXPANDED_NODES`: calls that repeat at each of
        many levels multiply;
      - a function library holding two functions of one name;
      - TF1 SavedModels (no object graph) and chunked ones (`saved_model.cpb`).

    It reads the directory as it is now: to load what was checked, use `load_saved_model`,
    which checks and loads a private copy.

    Raises:
        UnsafeSavedModelError: naming the op, its node and the function it sits in, or the
            file, and why.
        FileNotFoundError: `path` holds no SavedModel.
    """
    directory = os.path.realpath(os.fspath(path))
    saved = read_saved_model(directory)
    Checker(saved, directory, max_elements, max_loop_constant).run()
