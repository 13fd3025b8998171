"""Hugging Face format: config.json + model.safetensors (or pytorch_model.bin) + vocab.txt.

Base models, pretraining models, fine-tuned task models (`*ForSequenceClassification`,
`*ForTokenClassification`, `*ForQuestionAnswering`: `kbert.convert.task_heads`) and
sentence-transformers directories around a base model (`_sentence_transformers`).
"""

import json
import logging
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from kbert.convert import _directory, _sentence_transformers, families, task_heads
from kbert.convert.checkpoint import Checkpoint, uppercase_free

_SAFETENSORS = "model.safetensors"
_SAFETENSORS_INDEX = "model.safetensors.index.json"
_TORCH = "pytorch_model.bin"


def is_hugging_face(path):
    path = Path(path)
    if _sentence_transformers.is_sentence_transformers(path):
        path = _sentence_transformers.transformer_folder(path)
    return (path / "config.json").is_file() and any(
        (path / name).is_file() for name in (_SAFETENSORS, _SAFETENSORS_INDEX, _TORCH)
    )


def _load_safetensors(files):
    from safetensors.numpy import load_file

    weights = {}
    for file in files:
        try:
            weights.update(load_file(str(file)))
        except TypeError as error:  # e.g. bfloat16, which numpy cannot hold
            raise ValueError(f"{file}: cannot read its tensors with numpy ({error}).") from error
    return weights


def _load_torch(file):
    try:
        import torch
    except ImportError as error:
        raise ImportError(
            f"{file} is a PyTorch pickle and reading it needs torch: pip install "
            "'kbert[torch]' (or pip install torch), or convert it to model.safetensors."
        ) from error
    # weights_only: a pickle may run code; this refuses anything but tensors.
    state = torch.load(str(file), map_location="cpu", weights_only=True)
    return {k: v.float().numpy() if v.is_floating_point() else v.numpy()
            for k, v in state.items()}


def _normalise(weights, family):
    """Hugging Face names -> the common form: no model prefix (`bert.`), LayerNorm weight/bias
    for the old gamma/beta, no tied copies of the token table, no buffers."""
    result = {}
    for name, value in weights.items():
        if name.startswith(family.prefix):
            name = name[len(family.prefix):]
        if ".LayerNorm." in name:
            name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
            name = name.replace("LayerNorm.beta", "LayerNorm.bias")
        result[name] = value
    # Some exports keep the MLM output bias only as the (tied) decoder bias.
    for alias, name in family.aliases.items():
        if alias in result:
            result.setdefault(name, result[alias])
            del result[alias]
    for name in (*family.tied, "embeddings.position_ids", "embeddings.token_type_ids"):
        result.pop(name, None)  # the token table again, and buffers (arange, zeros)
    return result


def _read_config(path):
    with open(path / "config.json", encoding="utf-8") as f:
        hf_config = json.load(f)
    return hf_config, families.by_model_type(hf_config.get("model_type"),
                                             source=str(path / "config.json"))


def _read_weights(path, family):
    if (path / _SAFETENSORS).is_file():
        weights = _load_safetensors([path / _SAFETENSORS])
    elif (path / _SAFETENSORS_INDEX).is_file():
        with open(path / _SAFETENSORS_INDEX, encoding="utf-8") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        weights = _load_safetensors([path / shard for shard in shards])
    elif (path / _TORCH).is_file():
        weights = _load_torch(path / _TORCH)
    else:
        raise FileNotFoundError(
            f"{path} has no {_SAFETENSORS}, {_SAFETENSORS_INDEX} or {_TORCH}."
        )
    return _normalise(weights, family)


def _read_companion(path, family, weights, source):
    """The family's companion model in `path` (ELECTRA: the generator, an ElectraForMaskedLM
    directory as kbert writes next to the discriminator) joins the main model's weights."""
    companion = family.companion
    values, found = _read_config(path)
    if found is not family:
        raise ValueError(f"{path}: a {values.get('model_type')} model, not "
                         f"{companion.description}.")
    companion.check_config(values, str(path / "config.json"))
    weights.update(companion.join(_read_weights(path, found), weights, source))


def read(path):
    """Reads a Hugging Face BERT, ALBERT, DistilBERT or ELECTRA directory into a `Checkpoint`.

    An ELECTRA discriminator directory with a `generator/` subdirectory (as `write` makes for
    an `ElectraPretrainer`) reads as the whole pretrainer. A fine-tuned model
    (`BertForSequenceClassification`, ...) or a sentence-transformers directory (modules.json)
    reads with its task (`Checkpoint.task`).
    """
    path = source = Path(path)
    task = None
    if _sentence_transformers.is_sentence_transformers(path):
        path, task = _sentence_transformers.read(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json: not a Hugging Face model directory.")
    hf_config, family = _read_config(path)
    config = family.config_from_hf(hf_config, source=str(path / "config.json"))
    if task is None:
        task = task_heads.from_hf_config(hf_config, family, source=str(path / "config.json"))
    weights = _read_weights(path, family)
    companion = family.companion
    if companion is not None and (path / companion.folder / "config.json").is_file():
        _read_companion(path / companion.folder, family, weights, str(path))
    vocabulary, lowercase = _directory.read_tokenizer_files(path)
    if lowercase is None:
        lowercase = uppercase_free(vocabulary or [])
    return Checkpoint(family.name, config, weights, vocabulary, bool(lowercase),
                      source=str(source),
                      sentencepiece_model=_directory.read_sentencepiece(path), task=task,
                      architecture=(hf_config.get("architectures") or [None])[0])


def _write_one(folder, checkpoint, family, head, hf_config, weights, head_prefixes=None):
    """One model: `head_prefixes` (default: the family's for `head`) name the weights outside
    the encoder; `None` head and no prefixes: a base model, whose weights have no prefix."""
    hf_config = {"architectures": [family.architectures[head]], **hf_config}
    if head_prefixes is None and head is not None:
        head_prefixes = family.head_prefixes
    if head_prefixes is not None:  # *For<Head> models keep the encoder under the prefix
        weights = {(k if k.startswith(head_prefixes) else family.prefix + k): v
                   for k, v in weights.items()}
    with open(folder / "config.json", "w", encoding="utf-8") as f:
        json.dump(hf_config, f, indent=2, sort_keys=True)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()},
              str(folder / _SAFETENSORS), metadata={"format": "pt"})
    _directory.write_tokenizer_files(
        folder, checkpoint, tokenizer_class=family.tokenizer_class,
        model_max_length=checkpoint.config.max_sequence_length)


def write(checkpoint, path):
    """Writes `checkpoint` as a Hugging Face directory that `transformers` loads.

    Files: config.json, model.safetensors, and vocab.txt (or spiece.model) +
    tokenizer_config.json when the checkpoint has a vocabulary. An ELECTRA pretrainer is
    written as its discriminator (`ElectraForPreTraining`) with the generator
    (`ElectraForMaskedLM`) in `generator/`, as Google published them. The directory is
    written next to `path` and renamed into place, so a crash leaves no half-written model.
    A task model is written as its `*For<Task>` class (with `id2label`, `label2id`, and
    `problem_type` where declared), a `TextEmbedder` as a sentence-transformers directory
    around the base model.
    """
    family = families.get(checkpoint.family)
    head = checkpoint.head
    hf_config = family.config_to_hf(checkpoint.config)
    task = checkpoint.task
    head_prefixes = None
    if task is not None and task.task in task_heads.HF_TASKS:
        hf_config.update(task_heads.to_hf_config(task, family, source=checkpoint.source))
        head_prefixes = task_heads.HEAD_PREFIXES
    weights = {k: v for k, v in checkpoint.weights.items() if k not in family.not_in_hf}
    dropped = sorted(set(checkpoint.weights) - set(weights))
    if dropped:
        logging.info("%s: Hugging Face's %s has no place for %s; not written.",
                     checkpoint.source, family.architectures[None], ", ".join(dropped))
    companion = family.companion
    parts = companion.split(checkpoint.config, weights) if companion is not None else None
    with _directory.staged(path) as staging:
        if parts:
            weights, companion_config, companion_weights = parts
            (staging / companion.folder).mkdir()
            _write_one(staging / companion.folder, checkpoint, family, companion.head,
                       companion_config, companion_weights)
        _write_one(staging, checkpoint, family, head, hf_config, weights, head_prefixes)
        if task is not None and task.task == "text_embedder":
            _sentence_transformers.write(staging, task, checkpoint.config.hidden_size,
                                         checkpoint.config.max_sequence_length)
    return Path(path)
