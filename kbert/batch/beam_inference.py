"""Apache Beam's `RunInference` on kbert pipelines (the `beam` extra: `pip install
"kbert-keras[beam]"`).

    from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
    from kbert.batch.beam_inference import PipelineModelHandler

    handler = PipelineModelHandler("text-classification", "gs://bucket/sst2/export",
                                   options={"top_k": 2})
    texts | RunInference(handler)                          # PredictionResult per text
    keyed | RunInference(KeyedModelHandler(handler))       # (key, PredictionResult)

`model` is anything `kbert.pipeline` takes as a string: a checkpoint or run directory, a
preset name, or an exported SavedModel (checked by `kbert.untrusted` inside the worker,
before anything of it runs, unless `trusted=True`). A model directory on a remote file
system (gs://, s3://, hdfs://: any scheme Beam's `FileSystems` reads) is copied to the
worker's local disk first, once per process.

Each worker process loads the pipeline once (Beam's shared handle) and its threads share it,
taking turns: TensorFlow already spreads one call over the machine's cores. A Beam batch
(`max_batch_size` inputs) is one pipeline call, which runs it as the pipeline always does:
sorted by length into model batches of `options["batch_size"]`, results back in input order.
`PredictionResult.inference` is the pipeline's output for that input as JSON values, what
`tools/predict.py` writes.
"""

import logging
import os
import shutil
import tempfile
import threading

from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from kbert.batch.worker import build, call
from kbert.pipelines import ALIASES, TASKS
from kbert.pipelines.base import RUN_OPTIONS

logger = logging.getLogger(__name__)
DEFAULT_MAX_BATCH_SIZE = 256
_COPIES = {}
_COPIES_LOCK = threading.Lock()


def is_remote(path):
    """Whether `path` names a file system other than the local one (gs://bucket/...)."""
    return "://" in path


def local_copy(path):
    """A local directory holding the files under the remote directory `path` (copied once
    per process; Beam's `FileSystems` reads the remote one)."""
    with _COPIES_LOCK:
        if path not in _COPIES:
            root = path.rstrip("/")
            found = FileSystems.match([root + "/**"])[0].metadata_list
            if not found:
                raise FileNotFoundError(f"model={path!r}: no files under it.")
            target = tempfile.mkdtemp(prefix="kbert-model-")
            for item in found:
                name = os.path.join(target, os.path.relpath(item.path, root))
                os.makedirs(os.path.dirname(name), exist_ok=True)
                with FileSystems.open(item.path) as source, open(name, "wb") as f:
                    shutil.copyfileobj(source, f)
            _COPIES[path] = target
        return _COPIES[path]


class SharedPipeline:
    """A worker process's one pipeline: the process's threads take turns calling it."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.lock = threading.Lock()

    def __call__(self, task, inputs, options):
        with self.lock:
            return call(self.pipe, task, inputs, options)


def allowed_options(task):
    """The options of `task`'s pipeline (a ValueError names the known tasks)."""
    name = ALIASES.get(task, task)
    if name not in TASKS:
        raise ValueError(f"Unknown task {task!r}. Allowed: {', '.join([*TASKS, *ALIASES])}.")
    return name, {**RUN_OPTIONS, **TASKS[name].OPTIONS}


class PipelineModelHandler(ModelHandler):
    """A `ModelHandler` whose model is `kbert.pipeline(task, model=model, trusted=trusted,
    **options)`, loaded in the worker.

    Args:
        task: a pipeline task or one of its other names ("sentiment-analysis", "ner", ...).
        model: a checkpoint or run directory, a preset name, or a SavedModel directory;
            local or on any file system Beam reads (gs://...).
        trusted: load a SavedModel without kbert's check (only one you would run as code).
        runtime, quantize: `kbert.pipeline`'s: None (the model's own runtime) or
            "tensorflow" / "onnxruntime", and with ONNX Runtime None or "int8".
        options: the pipeline's options, the defaults of every call (`batch_size`: sequences
            per model batch; `top_k`, `aggregation_strategy`, ...); RunInference's
            `inference_args` override them per transform.
        min_batch_size, max_batch_size, max_batch_duration_secs, large_model,
        model_copies, **kwargs: Beam's (`ModelHandler`); a Beam batch is one pipeline call.
    """

    def __init__(self, task, model, *, trusted=False, options=None, runtime=None, quantize=None,
                 min_batch_size=1, max_batch_size=DEFAULT_MAX_BATCH_SIZE, **kwargs):
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max_batch_size,
                         **kwargs)
        # Beam's own arguments as given, for with_batch_size (not Beam's private fields).
        self._beam_kwargs = dict(kwargs, min_batch_size=min_batch_size,
                                 max_batch_size=max_batch_size)
        if not isinstance(model, str) or not model:
            raise ValueError(f"model={model!r}: give a path or a preset name (a string); a "
                             "model object cannot travel to Beam's workers.")
        self.task, self._allowed = allowed_options(task)
        self.model, self.trusted = model, bool(trusted)
        self.construction = {"runtime": runtime, "quantize": quantize}
        self.options = {"progress": False, **(options or {})}
        self.validate_inference_args(self.options)

    def validate_inference_args(self, inference_args):
        unknown = sorted(set(inference_args or {}) - set(self._allowed))
        if unknown:
            raise ValueError(f"The {self.task} pipeline takes no option "
                             f"{', '.join(map(repr, unknown))}; its options: "
                             f"{', '.join(sorted(self._allowed))}.")

    def load_model(self):
        model = local_copy(self.model) if is_remote(self.model) else self.model
        if self.trusted:
            logger.warning("trusted=True: %s is loaded WITHOUT kbert's SavedModel check; "
                           "whatever its graph holds runs, file and Python ops included.",
                           self.model)
        return SharedPipeline(build(self.task, model, self.trusted,
                                    {**self.options, **self.construction}))

    def run_inference(self, batch, model, inference_args=None):
        outputs = model(self.task, list(batch), dict(inference_args or {}))
        return [PredictionResult(example, output, self.model)
                for example, output in zip(batch, outputs)]

    def get_num_bytes(self, batch):
        return sum(len(str(example).encode("utf-8")) for example in batch)

    def get_metrics_namespace(self):
        return "kbert"

    def with_batch_size(self, max_batch_size):
        """The same handler with Beam batches of at most `max_batch_size` inputs."""
        kwargs = dict(self._beam_kwargs, max_batch_size=max_batch_size,
                      min_batch_size=min(max_batch_size, self._beam_kwargs["min_batch_size"]))
        return PipelineModelHandler(self.task, self.model, trusted=self.trusted,
                                    options=self.options, **self.construction, **kwargs)
