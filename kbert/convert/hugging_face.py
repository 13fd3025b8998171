"""Hugging Face format: config.json + model.safetensors (or pytorch_model.bin) + vocab.txt."""

import json
import logging
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from kbert.convert import _directory, electra
from kbert.convert.checkpoint import MAPPINGS, Checkpoint, uppercase_free

MODEL_TYPES = {m.MODEL_TYPE: m for m in MAPPINGS.values()}  # config.json's model_type
GENERATOR_FOLDER = "generator"
_SAFETENSORS = "model.safetensors"
_SAFETENSORS_INDEX = "model.safetensors.index.json"
_TORCH = "pytorch_model.bin"


def is_hugging_face(path):
    path = Path(path)
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


def _normalise(weights, mapping):
    """Hugging Face names -> the common form: no model prefix (`bert.`), LayerNorm weight/bias
    for the old gamma/beta, no tied copies of the token table, no buffers."""
    result = {}
    for name, value in weights.items():
        if name.startswith(mapping.PREFIX):
            name = name[len(mapping.PREFIX):]
        if ".LayerNorm." in name:
            name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
            name = name.replace("LayerNorm.beta", "LayerNorm.bias")
        result[name] = value
    # Some exports keep the MLM output bias only as the (tied) decoder bias.
    for alias, name in mapping.ALIASES.items():
        if alias in result:
            result.setdefault(name, result[alias])
            del result[alias]
    for name in (*mapping.TIED, "embeddings.position_ids", "embeddings.token_type_ids"):
        result.pop(name, None)  # the token table again, and buffers (arange, zeros)
    return result


def _read_config(path):
    with open(path / "config.json", encoding="utf-8") as f:
        hf_config = json.load(f)
    model_type = hf_config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise ValueError(
            f"{path / 'config.json'}: model_type={model_type!r} is not supported. Supported: "
            f"{', '.join(sorted(MODEL_TYPES))}."
        )
    return hf_config, MODEL_TYPES[model_type]


def _read_weights(path, mapping):
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
    return _normalise(weights, mapping)


def _read_generator(path, weights, source):
    """ELECTRA: a generator in `path` (an ElectraForMaskedLM directory, as kbert writes next
    to the discriminator) joins the discriminator's weights under `generator.`."""
    values, mapping = _read_config(path)
    if mapping is not electra:
        raise ValueError(f"{path}: a {values.get('model_type')} model, not an ELECTRA generator.")
    electra.check_generator_config(values, str(path / "config.json"))
    generator = _read_weights(path, mapping)
    different = [n for n, v in generator.items() if n.startswith("embeddings.")
                 and (n not in weights or not np.array_equal(v, weights[n]))]
    if different:
        logging.warning("%s: the generator's embeddings differ from the discriminator's "
                        "(%s); kbert's generator shares the discriminator's.", source,
                        ", ".join(different))
    weights.update(electra.join_generator(generator))


def read(path):
    """Reads a Hugging Face BERT, ALBERT, DistilBERT or ELECTRA directory into a `Checkpoint`.

    An ELECTRA discriminator directory with a `generator/` subdirectory (as `write` makes for
    an `ElectraPretrainer`) reads as the whole pretrainer.
    """
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json: not a Hugging Face model directory.")
    hf_config, mapping = _read_config(path)
    config = mapping.config_from_hf(hf_config, source=str(path / "config.json"))
    weights = _read_weights(path, mapping)
    if mapping is electra and (path / GENERATOR_FOLDER / "config.json").is_file():
        _read_generator(path / GENERATOR_FOLDER, weights, str(path))
    vocabulary, lowercase = _directory.read_tokenizer_files(path)
    if lowercase is None:
        lowercase = uppercase_free(vocabulary or [])
    return Checkpoint(mapping.FAMILY, config, weights, vocabulary, bool(lowercase),
                      source=str(path),
                      sentencepiece_model=_directory.read_sentencepiece(path))


def _write_one(folder, checkpoint, mapping, head, hf_config, weights):
    hf_config = {**hf_config, "architectures": [mapping.ARCHITECTURES[head]]}
    if head is not None:  # *ForMaskedLM / *ForPreTraining keep the encoder under the prefix
        weights = {(k if k.startswith(mapping.HEAD_PREFIXES) else mapping.PREFIX + k): v
                   for k, v in weights.items()}
    with open(folder / "config.json", "w", encoding="utf-8") as f:
        json.dump(hf_config, f, indent=2, sort_keys=True)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()},
              str(folder / _SAFETENSORS), metadata={"format": "pt"})
    _directory.write_tokenizer_files(
        folder, checkpoint, tokenizer_class=mapping.TOKENIZER_CLASS,
        model_max_length=checkpoint.config.max_sequence_length)


def write(checkpoint, path):
    """Writes `checkpoint` as a Hugging Face directory that `transformers` loads.

    Files: config.json, model.safetensors, and vocab.txt (or spiece.model) +
    tokenizer_config.json when the checkpoint has a vocabulary. An ELECTRA pretrainer is
    written as its discriminator (`ElectraForPreTraining`) with the generator
    (`ElectraForMaskedLM`) in `generator/`, as Google published them. The directory is
    written next to `path` and renamed into place, so a crash leaves no half-written model.
    """
    mapping = MAPPINGS[checkpoint.family]
    head = checkpoint.head
    hf_config = mapping.config_to_hf(checkpoint.config)
    weights = {k: v for k, v in checkpoint.weights.items()
               if k not in getattr(mapping, "NOT_IN_HF", ())}
    dropped = sorted(set(checkpoint.weights) - set(weights))
    if dropped:
        logging.info("%s: Hugging Face's %s has no place for %s; not written.",
                     checkpoint.source, mapping.ARCHITECTURES[None], ", ".join(dropped))
    with _directory.staged(path) as staging:
        if mapping is electra and head == "pretrainer":
            discriminator, generator = electra.split_pretrainer(weights)
            (staging / GENERATOR_FOLDER).mkdir()
            _write_one(staging / GENERATOR_FOLDER, checkpoint, mapping, "mlm",
                       electra.generator_config_to_hf(checkpoint.config, weights), generator)
            _write_one(staging, checkpoint, mapping, "pretrainer", hf_config, discriminator)
        else:
            _write_one(staging, checkpoint, mapping, head, hf_config, weights)
    return Path(path)
