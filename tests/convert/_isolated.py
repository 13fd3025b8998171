"""Runs a function in a child process with a memory cap and a time limit.

The children fork from a multiprocessing forkserver that has imported kbert.convert once, so
each starts in milliseconds instead of the seconds an interpreter takes to import TensorFlow;
each is still a process of its own: a crash, a hang or an allocation over the cap ends it,
not the test session.
"""

import dataclasses
import multiprocessing
import resource
import time
import traceback

MEMORY_CAP = 2 << 30  # bytes the child may map beyond what the preloaded interpreter maps

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["kbert.convert", "kbert.tokenizers", "tests.convert._isolated"])


@dataclasses.dataclass
class Outcome:
    """What the child did: `error` is the exception's type name (None when it returned),
    `message` its text (or the returned value's repr), `seconds` the call's time."""

    error: str
    message: str
    seconds: float
    details: str = ""

    def refused(self, *kinds):
        return self.error in (kinds or ("CheckpointError",))


def _child(connection, function, args):
    pages = int(open("/proc/self/statm").read().split()[0])
    limit = pages * resource.getpagesize() + MEMORY_CAP
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    start = time.perf_counter()
    try:
        value = function(*args)
        outcome = Outcome(None, value if isinstance(value, str) else repr(value), 0.0)
    except BaseException as error:  # noqa: BLE001 - what was raised is the result
        outcome = Outcome(type(error).__name__, str(error), 0.0, traceback.format_exc())
    outcome.seconds = time.perf_counter() - start
    connection.send(outcome)


def run(function, *args, timeout=60):
    """The `Outcome` of `function(*args)` in a child process capped at `MEMORY_CAP`; an
    AssertionError when the child hangs past `timeout` seconds or dies without answering."""
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    process = _CONTEXT.Process(target=_child, args=(sender, function, args), daemon=True)
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise AssertionError(f"{function.__name__}{args} did not finish in {timeout} s.")
        try:
            return receiver.recv()
        except EOFError:
            process.join(10)
            raise AssertionError(f"{function.__name__}{args} died (exit code "
                                 f"{process.exitcode}) without an answer.") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join(10)
