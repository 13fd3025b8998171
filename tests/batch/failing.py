"""Model handlers that fail on purpose (a worker that dies or raises mid-bundle) or count
their loads: importable by Beam's worker processes, which unpickle them by name."""

import os

from kbert.batch.beam_inference import PipelineModelHandler


class _FailingOnce(PipelineModelHandler):
    """Fails (`fail`) in the first batch of the run whose `marker` file is not there yet
    (made with O_EXCL, so once over all processes); then runs as the handler does."""

    def __init__(self, *args, marker, **kwargs):
        super().__init__(*args, **kwargs)
        self.marker = marker

    def run_inference(self, batch, model, inference_args=None):
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return super().run_inference(batch, model, inference_args)
        self.fail(batch)


class DyingOnce(_FailingOnce):
    """Kills its worker process: a worker killed mid-bundle."""

    def fail(self, batch):
        os._exit(17)


class RaisingOnce(_FailingOnce):
    """Raises: a worker error mid-bundle that leaves the process alive."""

    def fail(self, batch):
        raise RuntimeError(f"failing once, in a batch of {len(batch)}")


class CountingLoads(PipelineModelHandler):
    """Counts its loads in this process (`LOADS`): the in-process runners' workers."""

    LOADS = []

    def load_model(self):
        CountingLoads.LOADS.append(self.model)
        return super().load_model()
