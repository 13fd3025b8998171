"""Runs a pipeline's calls where a call that never returns cannot hang the caller.

`WorkerRunner` builds the pipeline in a child process ("spawn": a fresh interpreter, so no
TensorFlow state of the parent is copied) and serves calls over a pipe. The parent waits for
each answer at most its time limit; past it, or when the child dies (a segfault, an OOM
kill), the child is killed and `CallFailed` says what happened. Python cannot interrupt a
TensorFlow graph that loops forever in one thread, but it can kill a process.
`LocalRunner` runs the same calls in this process, without a time limit.
"""

import multiprocessing
import os
import signal
import threading
import time


class CallFailed(RuntimeError):
    """A call that timed out or whose worker died; `reason` is "timeout" or "died"."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


class PipelineError(RuntimeError):
    """The pipeline raised on a call (bad input, bad option): its type and message."""


def jsonable(value):
    """Pipeline outputs as JSON values: numpy scalars and arrays become numbers and lists."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    return value


# Tasks whose pipeline gives a lone result (not a list of one) for a list of one input.
_UNWRAPS_ONE = ("question-answering", "fill-mask")


def call(pipe, task, inputs, options):
    """`pipe` on a list of inputs -> one JSON-able result per input, in order."""
    results = pipe(list(inputs), **options)
    if len(inputs) == 1 and task in _UNWRAPS_ONE:
        results = [results]
    return jsonable(results)


def build(task, model, trusted, construction):
    import kbert

    return kbert.pipeline(task, model=model, trusted=trusted, **construction)


class LocalRunner:
    """The pipeline in this process: no time limit, nothing to kill."""

    def __init__(self, task, model, trusted, construction, call_options):
        self.task, self.options = task, call_options
        self.pipe = build(task, model, trusted, construction)

    def __call__(self, inputs, timeout=None):
        try:
            return call(self.pipe, self.task, inputs, self.options)
        except Exception as e:  # the caller names the row; KeyboardInterrupt goes through
            raise PipelineError(f"{type(e).__name__}: {e}") from e

    def close(self):
        pass


def _watch_parent(parent):
    """Ends this worker when its parent is gone (killed with -9, say), even while the main
    thread is stuck in a graph: an orphaned worker would spin forever."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(3)


def _serve(connection, parent, task, model, trusted, construction, call_options):
    """The worker's main: build the pipeline, answer ("ready", None); then for each list of
    inputs answer ("ok", results) or ("error", message) until the pipe closes."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    # Ctrl-C reaches the whole process group: the parent handles it and stops this worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pipe = build(task, model, trusted, construction)
    except Exception as e:
        connection.send(("error", f"{type(e).__name__}: {e}"))
        return
    connection.send(("ready", None))
    while True:
        try:
            inputs = connection.recv()
        except EOFError:
            return
        try:
            connection.send(("ok", call(pipe, task, inputs, call_options)))
        except Exception as e:  # the parent names the row; the worker serves on
            connection.send(("error", f"{type(e).__name__}: {e}"))


class WorkerRunner:
    """The pipeline in a child process; each call (and the load) under a time limit.

    Args:
        task, model, trusted, construction: `kbert.pipeline(task, model=model,
            trusted=trusted, **construction)`, built in the child.
        call_options: the options of every call.
        load_timeout: seconds the child may take to build the pipeline (None: no limit).
    Raises:
        CallFailed: the load timed out or the child died while loading.
        PipelineError: building the pipeline raised (its message).
    """

    def __init__(self, task, model, trusted, construction, call_options, load_timeout=None):
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self.process = context.Process(
            target=_serve, daemon=True, name="kbert-prediction-worker",
            args=(child, os.getpid(), task, model, trusted, construction, call_options))
        self.process.start()
        child.close()
        try:
            self._answer(load_timeout, "loading the model")
        except PipelineError:
            self.close()
            raise

    def _answer(self, timeout, what):
        from multiprocessing.connection import wait

        ready = wait([self._connection, self.process.sentinel], timeout)
        if self._connection in ready:
            try:
                kind, value = self._connection.recv()
            except EOFError:
                kind, value = None, None
            if kind == "error":
                raise PipelineError(value)
            if kind is not None:
                return value
        if not ready:
            self.process.kill()  # stuck: no point waiting for it to end
            self.close()
            raise CallFailed(f"{what} took over {timeout:g} s: gave up and stopped the "
                             "worker process.", "timeout")
        self.process.join(5)
        code = self.process.exitcode
        self.close()
        raise CallFailed(f"the worker process died while {what} (exit code {code}"
                         f"{', killed by signal ' + str(-code) if code and code < 0 else ''}"
                         ").", "died")

    def __call__(self, inputs, timeout=None):
        """The results of `inputs`, waiting at most `timeout` seconds (None: no limit)."""
        try:
            self._connection.send(list(inputs))
        except (BrokenPipeError, OSError):
            pass  # the worker is gone: `_answer` says how
        return self._answer(timeout, f"running a call of {len(inputs)} rows")

    def close(self):
        """Stops the worker (killed where it does not end when its pipe closes)."""
        self._connection.close()
        if self.process.is_alive():
            self.process.join(0.5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
