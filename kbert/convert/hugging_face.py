"""Hugging Face format: config.json + model.safetensors (or pytorch_model.bin) + vocab.txt
(ALBERT: spiece.model; RoBERTa: vocab.json + merges.txt).

Base models, pretraining models, fine-tuned task models (`*ForSequenceClassification`,
`*ForTokenClassification`, `*ForQuestionAnswering`: `kbert.convert.task_heads`) and
sentence-transformers directories around a base model (`_sentence_transformers`).
"""

import json
import logging
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from kbert import _extras
from kbert.convert import _checks, _directory, _headers, _sentence_transformers, families
from kbert.convert import task_heads
from kbert.convert._checks import CheckpointError
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


def _load_torch(file):
    """A legacy (pre-zip) PyTorch pickle, which only torch reads."""
    torch = _extras.require("torch", "torch", f"Reading {file} (a legacy PyTorch pickle; "
                            "model.safetensors needs no torch)")
    try:  # weights_only: a pickle may run code; this refuses anything but tensors.
        state = torch.load(str(file), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for a corrupted pickle
        raise CheckpointError(f"{file}: cannot read it as a PyTorch state dict "
                              f"({error}).") from None
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
    file = path / "config.json"
    hf_config = _checks.read_json(file, "a Hugging Face config.json (an object with model_type)")
    return hf_config, families.by_config(hf_config, source=str(file))


def _shards(path):
    """The safetensors shards that model.safetensors.index.json names."""
    file = path / _SAFETENSORS_INDEX
    weight_map = _checks.read_json(file, "an object with a weight_map").get("weight_map")
    if not isinstance(weight_map, dict) or not all(
            isinstance(v, str) and v == Path(v).name and v not in ("", ".", "..")
            for v in weight_map.values()):
        raise CheckpointError(f"{file}: weight_map is {str(weight_map)[:200]}; expected an "
                              "object of tensor name -> shard file name in this folder.")
    missing = sorted(n for n in set(weight_map.values()) if not (path / n).is_file())
    if missing:
        raise CheckpointError(f"{file} names shards that are not in {path}: "
                              f"{', '.join(missing)}.")
    return [path / shard for shard in sorted(set(weight_map.values()))]


def _list_weights(path):
    """(tensor name -> `Tensor` from the headers alone, a function that reads the arrays)."""
    if (path / _SAFETENSORS).is_file() or (path / _SAFETENSORS_INDEX).is_file():
        files = ([path / _SAFETENSORS] if (path / _SAFETENSORS).is_file() else _shards(path))
        listed = [(file, _headers.safetensors(file)) for file in files]
        tensors = {}
        for file, found in listed:
            twice = sorted(set(found) & set(tensors))
            if twice:
                raise CheckpointError(f"{file} holds {', '.join(twice[:3])}, which "
                                      f"{tensors[twice[0]].file} holds too.")
            tensors.update(found)

        def load():
            return {k: v for file, found in listed
                    for k, v in _headers.load_safetensors(file, found).items()}
        return tensors, load
    if (path / _TORCH).is_file():
        file = path / _TORCH
        tensors = _headers.torch(file)
        if tensors is not None:
            return tensors, lambda: _headers.load_torch(file)
        weights = _load_torch(file)  # the legacy format: its arrays give the shapes
        return _checks.tensors_of(weights, file), lambda: weights
    raise FileNotFoundError(
        f"{path} has no {_SAFETENSORS}, {_SAFETENSORS_INDEX} or {_TORCH}."
    )


def _read_checked(path, family, config, config_file):
    """The weights of `path` (common names), read after their headers agree with `config`."""
    names = {ours: theirs for theirs, ours in family.config_fields.items()}
    _checks.check_sizes(config, config_file, names, family.shapes.offsets)
    tensors, load = _list_weights(path)
    _checks.check_shapes(family, config, _normalise(tensors, family), config_file, names)
    return lambda: _normalise(load(), family)


def _read_companion(path, family, weights, source):
    """The family's companion model in `path` (ELECTRA: the generator, an ElectraForMaskedLM
    directory as kbert writes next to the discriminator) joins the main model's weights."""
    companion = family.companion
    values, found = _read_config(path)
    if found is not family:
        raise ValueError(f"{path}: a {values.get('model_type')} model, not "
                         f"{companion.description}.")
    companion.check_config(values, str(path / "config.json"))
    config = _checks.make_config(found.config_from_hf, values, str(path / "config.json"))
    load = _read_checked(path, found, config, str(path / "config.json"))
    weights.update(companion.join(load(), weights, source))


def read(path):
    """Reads a Hugging Face BERT, ALBERT, DistilBERT, ELECTRA or RoBERTa directory into a
    `Checkpoint`.

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
    config_file = str(path / "config.json")
    config = _checks.make_config(family.config_from_hf, hf_config, config_file)
    if task is None:
        task = task_heads.from_hf_config(hf_config, family, source=config_file)
    load = _read_checked(path, family, config, config_file)
    vocabulary, lowercase = _directory.read_tokenizer_files(path)
    merges = None
    if vocabulary is None:
        vocabulary, merges = _directory.read_byte_pair(path)  # RoBERTa's, which is cased
        lowercase = False if merges is not None else lowercase
    sentencepiece = _directory.read_sentencepiece(path, family.sentencepiece_file)
    _directory.check_tokenizer(path, vocabulary, sentencepiece, config.vocabulary_size,
                               config_file, merges=merges, family=family)
    tokenizer_json = None
    if vocabulary is None and sentencepiece is None:  # ModernBERT's, mmBERT's
        tokenizer_json = _directory.read_tokenizer_json(path, config.vocabulary_size,
                                                        config_file)
    weights = load()  # only now: every check above reads headers and small files alone
    companion = family.companion
    if companion is not None and (path / companion.folder / "config.json").is_file():
        _read_companion(path / companion.folder, family, weights, str(path))
    if lowercase is None:
        lowercase = uppercase_free(vocabulary) if vocabulary else family.lowercase
    architectures = hf_config.get("architectures")
    return Checkpoint(family.name, config, weights, vocabulary, bool(lowercase),
                      source=str(source), sentencepiece_model=sentencepiece, task=task,
                      architecture=(architectures or [None])[0]
                      if isinstance(architectures, list) else None, merges=merges,
                      tokenizer_json=tokenizer_json)


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
        folder, checkpoint, sentencepiece_file=family.sentencepiece_file,
        tokenizer_class=family.tokenizer_class,
        model_max_length=checkpoint.config.max_sequence_length)


def write(checkpoint, path):
    """Writes `checkpoint` as a Hugging Face directory that `transformers` loads.

    Files: config.json, model.safetensors, and vocab.txt (or spiece.model, or vocab.json +
    merges.txt) + tokenizer_config.json when the checkpoint has a vocabulary. An ELECTRA pretrainer is
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
        if family.check_task_config is not None:
            # What a task load would refuse is not written either (DeBERTa's pooler).
            family.check_task_config(task.task, hf_config, checkpoint.source)
        head_prefixes = task_heads.head_prefixes(family)
    weights = {k: v for k, v in checkpoint.weights.items() if k not in family.not_in_hf}
    dropped = sorted(set(checkpoint.weights) - set(weights))
    if family.to_hf_weights is not None:
        weights = family.to_hf_weights(hf_config, weights)
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
