"""Hugging Face format: config.json + model.safetensors (or pytorch_model.bin) + vocab.txt."""

import json
from pathlib import Path

import numpy as np

from kbert.convert import _directory, bert
from kbert.convert.checkpoint import Checkpoint, uppercase_free

_FAMILY_OF_MODEL_TYPE = {"bert": "bert"}
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


def _normalise(weights):
    """Old Hugging Face names (LayerNorm gamma/beta) and the `bert.` prefix -> the common form."""
    result = {}
    for name, value in weights.items():
        if name.startswith("bert."):
            name = name[len("bert."):]
        if ".LayerNorm." in name:
            name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
            name = name.replace("LayerNorm.beta", "LayerNorm.bias")
        result[name] = value
    # Some exports keep the MLM output bias only as the (tied) decoder bias.
    if "cls.predictions.bias" not in result and "cls.predictions.decoder.bias" in result:
        result["cls.predictions.bias"] = result["cls.predictions.decoder.bias"]
    result.pop("cls.predictions.decoder.bias", None)
    result.pop("cls.predictions.decoder.weight", None)  # tied to the word embeddings
    result.pop("embeddings.position_ids", None)  # a buffer (arange), not a weight
    return result


def read(path):
    """Reads a Hugging Face BERT directory into a `Checkpoint`."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json: not a Hugging Face model directory.")
    with open(path / "config.json", encoding="utf-8") as f:
        hf_config = json.load(f)
    model_type = hf_config.get("model_type")
    if model_type not in _FAMILY_OF_MODEL_TYPE:
        raise ValueError(
            f"{path / 'config.json'}: model_type={model_type!r} is not supported. Supported: "
            f"{', '.join(sorted(_FAMILY_OF_MODEL_TYPE))}."
        )
    config = bert.config_from_hf(hf_config, source=str(path / "config.json"))
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
    vocabulary, lowercase = _directory.read_tokenizer_files(path)
    if lowercase is None:
        lowercase = uppercase_free(vocabulary or [])
    return Checkpoint(_FAMILY_OF_MODEL_TYPE[model_type], config, _normalise(weights),
                      vocabulary, bool(lowercase), source=str(path))


_ARCHITECTURES = {None: "BertModel", "mlm": "BertForMaskedLM", "pretrainer": "BertForPreTraining"}


def write(checkpoint, path):
    """Writes `checkpoint` as a Hugging Face directory that `transformers` loads.

    Files: config.json, model.safetensors, and vocab.txt + tokenizer_config.json when the
    checkpoint has a vocabulary. The directory is written next to `path` and renamed into
    place, so a crash leaves no half-written model.
    """
    from safetensors.numpy import save_file

    head = checkpoint.head
    hf_config = bert.config_to_hf(checkpoint.config, _ARCHITECTURES[head])
    weights = dict(checkpoint.weights)
    if head is not None:  # BertForMaskedLM / BertForPreTraining keep the encoder under bert.
        weights = {(k if k.startswith("cls.") else f"bert.{k}"): v for k, v in weights.items()}
    with _directory.staged(path) as staging:
        with open(staging / "config.json", "w", encoding="utf-8") as f:
            json.dump(hf_config, f, indent=2, sort_keys=True)
        save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()},
                  str(staging / _SAFETENSORS), metadata={"format": "pt"})
        _directory.write_tokenizer_files(
            staging, checkpoint, tokenizer_class="BertTokenizer",
            model_max_length=checkpoint.config.max_sequence_length)
    return Path(path)
