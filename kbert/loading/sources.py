"""What a spec of `kbert.load` is, before any model is built: one `ModelSource` per kind.

As keras-hub's preset loaders, each kind says where the tokenizer and the weights are and
builds the model that was asked for (`build(task, head, dtype)`), so that a caller can take the
tokenizer now and build the model later (inside a distribution strategy's scope).
"""

import abc
import os

from kbert import presets
from kbert.loading import runs
from kbert.tasks import registry

KINDS = ("preset", "pretraining_run", "finetuning_run", "checkpoint", "keras_file",
         "saved_model")
SAVED_MODEL_FILE = "saved_model.pb"
HEADS = ("auto", *presets.HEADS)


def _check_head(head):
    if head not in HEADS:
        raise ValueError(f"Unknown head {head!r}. Allowed: {', '.join(map(repr, HEADS))}.")


def _pretrained_only(what, task):
    """The error for a task model asked of a source that holds no fine-tuned head."""
    served = [r.pipelines[0] for r in registry.RECORDS.values() if r.model is None]
    return ValueError(
        f"{what} is a pretrained model without a fine-tuned {task} head: it serves "
        f"{' and '.join(served)}. Fine-tune a task model (kbert.tasks) or pass a fine-tuned "
        "checkpoint directory.")


def _head_of(record, head, what):
    """The pretraining `head` a task without a model class (fill-mask, feature-extraction)
    runs on."""
    if head != "auto":
        raise ValueError(f"head={head!r} and task={record.name!r} ask for two models of "
                         f"{what}: give one of them.")
    return record.model_head


class ModelSource(abc.ABC):
    """A spec resolved: `kind` (one of `KINDS`), `description` (for messages), `tokenizer()`,
    `max_sequence_length` and `build(task=None, head="auto", dtype=None, **config_overrides)`."""

    kind = None
    description = None

    @abc.abstractmethod
    def tokenizer(self):
        """The kbert tokenizer of the model."""

    @property
    @abc.abstractmethod
    def max_sequence_length(self):
        """The longest input the model takes."""

    @abc.abstractmethod
    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        """The model asked for (see `kbert.load`)."""


class PresetSource(ModelSource):
    """A preset name: its release (`weights="pretrained"`, downloaded and converted once into
    the cache), a checkpoint directory of its architecture, or `weights=None` (random)."""

    kind = "preset"

    def __init__(self, name, weights=presets.PRETRAINED, sha256=None):
        presets.get(name)
        self.name, self.weights, self.sha256 = name, weights, sha256
        self.description = f"preset {name}"
        self._checkpoint = None

    @property
    def checkpoint(self):
        """The `kbert.convert.Checkpoint` of its weights, read once; `None` for random ones."""
        if self.weights is None:
            return None
        if self._checkpoint is None:
            self._checkpoint = presets.checkpoint(self.name, self.weights, self.sha256)
        return self._checkpoint

    def tokenizer(self):
        if self.weights is None:
            raise ValueError(f"Preset {self.name!r} with weights=None is a random model: it "
                             "has no tokenizer. Load its release or a checkpoint for one.")
        return self.checkpoint.tokenizer()

    @property
    def max_sequence_length(self):
        return presets.config(self.name).max_sequence_length

    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        _check_head(head)
        if task is not None:
            record = registry.get(task)
            if record.model is not None:
                raise _pretrained_only(f"Preset {self.name!r}", task)
            head = _head_of(record, head, self.description)
        elif head == "auto":
            head = "pretrainer"
        if self.weights is None:
            return presets.load(self.name, head=head, weights=None, dtype=dtype,
                                sha256=self.sha256, **config_overrides)
        return self.checkpoint.build(head=head, dtype=dtype, name=self.name,
                                     **config_overrides)


class CheckpointSource(ModelSource):
    """A checkpoint directory kbert reads (Hugging Face, TF1, keras-hub, kbert), read once."""

    kind = "checkpoint"

    def __init__(self, path, format="auto"):  # noqa: A002 - kbert.convert's name
        from kbert import convert

        self.path = os.fspath(path)
        self.checkpoint = convert.read(self.path, format=format)
        self.description = f"checkpoint {self.path}"

    def tokenizer(self):
        return self.checkpoint.tokenizer()

    @property
    def max_sequence_length(self):
        return self.checkpoint.config.max_sequence_length

    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        _check_head(head)
        checkpoint = self.checkpoint
        if task is None:
            if checkpoint.task is not None and head == "auto":
                return checkpoint.build_task(dtype=dtype, **config_overrides)
            return checkpoint.build(head=head, dtype=dtype, **config_overrides)
        record = registry.get(task)
        if record.model is not None:
            if head != "auto":
                raise ValueError(f"head={head!r} asks for a pretraining model and task="
                                 f"{task!r} for a task model: give one of them.")
            return checkpoint.build_task(record.name, dtype=dtype, **config_overrides)
        # fill-mask: the richest pretraining head, which must hold a masked LM;
        # feature-extraction: the backbone alone.
        head = _head_of(record, head, self.description)
        model = checkpoint.build(head=None if head is None else "auto", dtype=dtype,
                                 **config_overrides)
        if not record.holds(model):
            raise ValueError(f"{task} needs a masked-LM head, and the checkpoint {self.path} "
                             f"has none (it gives a {type(model).__name__}).")
        return model


class FinetuningRunSource(CheckpointSource):
    """A tools/finetune.py run's model_dir: the model.keras (and tokenizer files) it saved at
    its end."""

    kind = "finetuning_run"

    def __init__(self, path):
        from kbert.convert import kbert_format

        if not kbert_format.is_kbert(path):
            raise runs.RunError(
                f"{os.fspath(path)} is a tools/finetune.py run that has not ended: it has no "
                f"{kbert_format.MODEL_FILE} yet (its checkpoints/ hold the training state, "
                "which the run resumes from). Let it finish, then load the directory.")
        super().__init__(path, format="kbert")
        self.description = f"fine-tuning run {self.path}"

    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        """The run's task model; a `--exit_heads` run's `EarlyExitClassifier` as its
        model.keras holds it (exit heads and all) where nothing else is asked for."""
        if (task is None or registry.get(task) is registry.TEXT_CLASSIFIER) and \
                head == "auto" and dtype is None and not config_overrides:
            from kbert.convert import kbert_format
            from kbert.untrusted import load_model
            from kbert.untrusted.keras_archive import archive_config

            path = os.path.join(os.fspath(self.path), kbert_format.MODEL_FILE)
            if archive_config(path).get("class_name") == "EarlyExitClassifier":
                return load_model(path, compile=False)
        return super().build(task, head, dtype, **config_overrides)


class PretrainingRunSource(ModelSource):
    """A tools/pretrain.py run's model_dir: its model rebuilt from config.json, with the
    newest checkpoint's weights, and its vocabulary."""

    kind = "pretraining_run"

    def __init__(self, path):
        self.run = runs.read_run(path)
        self.path = self.run.path
        self.description = self.run.description

    def tokenizer(self):
        return self.run.tokenizer()

    @property
    def max_sequence_length(self):
        return self.run.max_sequence_length

    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        _check_head(head)
        if config_overrides:
            raise ValueError(f"{self.description} is rebuilt from its own config.json; it "
                             f"takes no overrides (got {', '.join(config_overrides)}).")
        if task is not None:
            record = registry.get(task)
            if record.model is not None:
                raise _pretrained_only(f"The pretraining run {self.path}", task)
            head = _head_of(record, head, self.description)
        trained = self.run.model
        if head not in ("auto", None, trained):
            raise ValueError(f"{self.description} trained --objective="
                             f"{self.run.config.objective}, a {trained} model: head={head!r} "
                             f"is not in it; use head='auto' or None (its encoder).")
        model = self.run.build(dtype)
        return self.run.encoder(model) if head is None else model


class KerasFileSource(ModelSource):
    """A `.keras` file (`model.save`): the model as saved, read in Keras' safe mode; a task
    model's preprocessor (its tokenizer included) comes with it."""

    kind = "keras_file"

    def __init__(self, path):
        self.path = os.fspath(path)
        self.description = f"Keras file {self.path}"
        self._model = None

    def _loaded(self):
        if self._model is None:
            import keras

            import kbert.models  # noqa: F401 (registers kbert's classes with Keras)
            import kbert.tasks  # noqa: F401

            self._model = keras.saving.load_model(self.path)
        return self._model

    def tokenizer(self):
        """The tokenizer of a task model saved with its preprocessor; else None."""
        return getattr(getattr(self._loaded(), "preprocessor", None), "tokenizer", None)

    @property
    def max_sequence_length(self):
        model = self._loaded()
        return getattr(model, "backbone", model).config.max_sequence_length

    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        given = [name for name, value in (("dtype", dtype),) if value is not None]
        given += ["head"] * (head != "auto") + list(config_overrides)
        if given:
            raise ValueError(f"The {self.description} is loaded as it was saved: "
                             f"{', '.join(given)} do not apply to it.")
        model = self._loaded()
        if task is not None and not registry.get(task).holds(model):
            held = registry.of_model(model)
            raise ValueError(f"The {self.description} holds a {type(model).__name__}"
                             f"{f' ({held.describe()})' if held else ''}, not a model of "
                             f"task={task!r}.")
        return model


def exported_tokenizer(path, description):
    """The tokenizer of the export at `path` (a SavedModel's or an ONNX export's directory;
    `description` names it in errors): the tokenizer files that the export wrote beside it
    (vocab.txt, spiece.model, or vocab.json + merges.txt) with the settings of its
    tokenizer_config.json, if any (a byte-level BPE's `add_prefix_space`); cased when that
    file says so or, without one, when a vocabulary token holds an upper-case letter."""
    from kbert.convert.checkpoint import uppercase_free
    from kbert.tokenizers import tokenizer_types
    from kbert.tokenizers.files import read_settings

    kind = tokenizer_types.get(tokenizer_types.type_of_folder(path))
    file = os.path.join(path, kind.file_name)
    if not os.path.isfile(file) and os.path.isfile(os.path.join(path, "tokenizer.json")):
        from kbert.tokenizers import load_tokenizer_json

        return load_tokenizer_json(path)  # ModernBERT's, mmBERT's
    if not os.path.isfile(file):
        raise ValueError(f"The {description} has no tokenizer files beside it "
                         "(vocab.txt, spiece.model or vocab.json + merges.txt): export it "
                         "with its tokenizer, or pass your own.")
    settings = read_settings(path)
    lowercase = settings.get("do_lower_case")
    if lowercase is None:
        tokenizer = tokenizer_types.load(file, kind.name, lowercase=False,
                                         settings=settings)
        lowercase = uppercase_free(tokenizer.vocabulary)
    return tokenizer_types.load(file, kind.name, lowercase=lowercase, settings=settings)


class SavedModelSource(ModelSource):
    """An exported SavedModel directory, checked by `kbert.untrusted.load_saved_model` before
    anything in it runs (`trusted=True` skips the check for a SavedModel you made)."""

    kind = "saved_model"

    def __init__(self, path, trusted=False):
        self.path, self.trusted = os.fspath(path), trusted
        self.description = f"SavedModel {self.path}"
        self._loaded = None

    def tokenizer(self):
        return exported_tokenizer(self.path, self.description)

    @property
    def max_sequence_length(self):
        """The model's longest input: tokenizer_config.json's `model_max_length`, which kbert's
        exports write; for a SavedModel exported without it (kbert before it wrote one), the
        position table's rows once built (RoBERTa's: two more than it takes); else None."""
        import json

        from kbert.tokenizers.files import SETTINGS_FILE

        settings = os.path.join(self.path, SETTINGS_FILE)
        if os.path.isfile(settings):
            with open(settings, encoding="utf-8") as f:
                length = json.load(f).get("model_max_length")
            if isinstance(length, int) and not isinstance(length, bool) and length > 0:
                return length
        for variable in getattr(self._loaded, "variables", ()):
            if "position" in variable.name and len(variable.shape) == 2:
                return int(variable.shape[0])
        return None

    def build(self, task=None, head="auto", dtype=None, **config_overrides):
        given = [name for name, value in (("task", task), ("dtype", dtype)) if value is not None]
        given += ["head"] * (head != "auto") + list(config_overrides)
        if given:
            raise ValueError(f"The {self.description} is loaded as it was exported: "
                             f"{', '.join(given)} do not apply to it.")
        from kbert.untrusted import load_saved_model

        self._loaded = load_saved_model(self.path, trusted=self.trusted)
        return self._loaded
