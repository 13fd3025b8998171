"""The heads of a multi-task run (`--multitask`, repeatable): each one task with its own data.

    --multitask=sst2:task=text_classifier,train_data=tfds:glue/sst2
    --multitask=ner:task=token_classifier,train_data=train.conll,validation_data=dev.conll,loss_weight=0.5

A head is `NAME:KEY=VALUE,KEY=VALUE,...`: NAME (letters, digits, _) names the head in logs,
scores, `--best_by`, the SavedModel's signatures and model_dir/NAME/; its keys are `task`
and `train_data` (required), `loss_weight` (default 1) and any single-task flag of the Data
group (`validation_data`, `text_column`, `sequence_length`, `tag_scheme`, `doc_stride`, ...)
plus `head` and `global_batch_size`. Everything else (encoder, schedule, hardware, output)
is the run's flags, shared by every head. A head's settings are a whole `FinetuningConfig`
(the run's, with the head's keys in place): each task's own fine-tuning hooks read it as in
a single-task run. Values are given as on the command line; file names cannot hold commas.
"""

import dataclasses
import re
import typing

from kbert.training import config_fields
from kbert.training.config_fields import ConfigError

# Besides the Data group's fields: what a head may set for itself.
_OWN_FIELDS = ("task", "head", "global_batch_size")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# The strategies a multi-task run takes: its steps switch between the heads' train steps,
# each on its own stream; fit()'s distributed data handling is not in that loop.
STRATEGIES = ("default",)


@dataclasses.dataclass(frozen=True)
class Head:
    """One head of a multi-task run: its name, its whole config and its loss weight."""

    name: str
    config: object  # a FinetuningConfig
    loss_weight: float


def parse_heads(values):
    """["NAME:KEY=VALUE,...", ...] (the flag's values) -> {NAME: {KEY: VALUE}} (strings)."""
    heads = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not _NAME.match(name):
            raise ValueError(f"{value!r} is not NAME:KEY=VALUE,KEY=VALUE,... (NAME: a letter, "
                             "then letters, digits or _).")
        if name in heads:
            raise ValueError(f"the head name {name!r} is given twice: each head needs its "
                             "own name.")
        settings = {}
        for item in filter(None, rest.split(",")):
            key, sep, setting = item.partition("=")
            if not sep or not key:
                raise ValueError(f"head {name!r}: {item!r} is not KEY=VALUE.")
            if key in settings:
                raise ValueError(f"head {name!r}: {key!r} is given twice.")
            settings[key] = setting
        heads[name] = settings
    return heads


def head_keys(config_class):
    """The keys a head may set: `loss_weight`, the Data group's fields and `_OWN_FIELDS`."""
    fields = [f.name for f in dataclasses.fields(config_class)
              if f.metadata.get("group") == "Data" or f.name in _OWN_FIELDS]
    return ("loss_weight", *fields)


def _typed(field_type, key, value):
    """A head's setting as its field's type (strings as on the command line)."""
    kind = config_fields._base_type(field_type)
    if not isinstance(value, str) or kind is str:
        return value
    if kind is bool:
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"{key}={value!r}: expected true or false.")
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{key}={value!r}: expected {'an integer' if kind is int else 'a number'}"
                         ".") from None


def heads(config):
    """The `Head`s of `config.multitask`, in the order given, each config validated (errors
    name the head)."""
    config_class = type(config)
    allowed = head_keys(config_class)
    hints = typing.get_type_hints(config_class)
    result = []
    for name, settings in config.multitask.items():
        where = f"--multitask head {name!r}"
        unknown = sorted(set(settings) - set(allowed))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}. A head takes: "
                              f"{', '.join(allowed)} (the rest are the run's flags).")
        missing = [key for key in ("task", "train_data") if key not in settings]
        if missing:
            raise ConfigError(f"{where}: give {' and '.join(missing)} (e.g. "
                              f"{name}:task=text_classifier,train_data=train.csv).")
        try:
            typed = {key: _typed(hints.get(key, float), key, value)
                     for key, value in settings.items()}
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
        loss_weight = typed.pop("loss_weight", 1.0)
        if not isinstance(loss_weight, (int, float)) or not loss_weight > 0:
            raise ConfigError(f"{where}: loss_weight must be a number > 0, got "
                              f"{loss_weight!r}.")
        head_config = dataclasses.replace(config, **{"multitask": {}, "validation_data": None,
                                                      **typed})
        try:
            head_config.validate()
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        result.append(Head(name, head_config, float(loss_weight)))
    return result


def validate(config):
    """The multi-task checks of `FinetuningConfig.validate` (with `--multitask` given)."""
    if len(config.multitask) < 2:
        raise ConfigError(f"--multitask gives {len(config.multitask)} head(s): a multi-task "
                          "run needs two or more (one task: --task and --train_data).")
    for name in ("train_data", "validation_data"):
        if getattr(config, name) is not None:
            raise ConfigError(f"--{name} is for one task: with --multitask each head gives "
                              f"its own (NAME:task=...,{name}=...).")
    if config.strategy not in STRATEGIES:
        raise ConfigError(f"--strategy={config.strategy}: a multi-task run takes "
                          f"{', '.join(STRATEGIES)} (one device).")
    if config.steps_per_execution != 1:
        raise ConfigError(f"--steps_per_execution={config.steps_per_execution}: a multi-task "
                          "run switches heads every step; it takes 1.")
    if config.lora_rank:
        raise ConfigError(f"--lora_rank={config.lora_rank}: LoRA is for one task; a "
                          "multi-task run trains its shared backbone fully.")
    if not config.sampling_temperature > 0:
        raise ConfigError(f"--sampling_temperature must be > 0, got "
                          f"{config.sampling_temperature!r}.")
    if config.best_by != "mean" and config.best_by not in config.multitask:
        raise ConfigError(f"--best_by={config.best_by!r} is not 'mean' or a head: "
                          f"{', '.join(config.multitask)}.")
    return heads(config)
