"""sentence-transformers directories: modules.json naming a Transformer (a Hugging Face model
directory, at the top or in its own folder such as 0_Transformer/), a Pooling module
(1_Pooling/config.json) and optionally a Normalize module. kbert reads them as a
`TextEmbedder` with that pooling and normalization, and writes one in the layout every
sentence-transformers version loads (the module names and pooling keys of 2.x)."""

import json
from pathlib import Path

from kbert.convert._checks import CheckpointError, read_json
from kbert.convert.task_heads import TaskHead, sentence_transformers_name
from kbert.tasks._heads import POOLINGS

MODULES = "modules.json"
_TRANSFORMER_CONFIG = "sentence_bert_config.json"
# The pooling config's keys before sentence-transformers 5 (`pooling_mode` since), in the
# order sentence-transformers concatenates the poolings.
_LEGACY_POOLING = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                   "pooling_mode_mean_tokens": "mean",
                   "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                   "pooling_mode_weightedmean_tokens": "weightedmean",
                   "pooling_mode_lasttoken": "lasttoken"}
_KINDS = ("Transformer", "Pooling", "Normalize")


def is_sentence_transformers(path):
    return (Path(path) / MODULES).is_file()


def _modules(path):
    file = Path(path) / MODULES
    modules = read_json(file, "a list of sentence-transformers modules", kind=list)
    if not all(isinstance(m, dict) for m in modules):
        raise CheckpointError(f"{file}: expected a list of module objects (type, path).")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (list(_KINDS[:2]), list(_KINDS)):
        raise ValueError(
            f"{file} names the modules {' -> '.join(kinds)}; kbert reads Transformer -> "
            "Pooling, optionally -> Normalize, as a TextEmbedder (a Dense or other module "
            "has no kbert form)."
        )
    return modules, kinds


def transformer_folder(path):
    """The folder of the Transformer module: the Hugging Face model directory."""
    modules, _ = _modules(path)
    return Path(path) / modules[0].get("path", "")


def _pooling(file):
    config = read_json(file, "a sentence-transformers Pooling config")
    if "pooling_mode" in config:
        modes = config["pooling_mode"]
        modes = [modes] if isinstance(modes, str) else list(modes)
    else:
        modes = [mode for key, mode in _LEGACY_POOLING.items() if config.get(key)] or ["mean"]
    if len(modes) != 1 or modes[0] not in POOLINGS:
        raise ValueError(
            f"{file}: pooling {' + '.join(modes)}; kbert's TextEmbedder pools one way: "
            f"{', '.join(POOLINGS)}."
        )
    return modes[0]


def _setting(file, key):
    """An int setting of a JSON file; `None` where absent, and for transformers' "no limit"
    (a model_max_length of 1e30)."""
    if not file.is_file():
        return None
    value = read_json(file).get(key)
    return int(value) if isinstance(value, (int, float)) and value < 1e9 else None


def read(path):
    """(the Transformer module's folder, the `TaskHead` of the embedder) of a
    sentence-transformers directory."""
    path = Path(path)
    modules, kinds = _modules(path)
    folder = path / modules[0].get("path", "")
    pooling = _pooling(path / modules[1].get("path", "") / "config.json")
    max_length = _setting(folder / _TRANSFORMER_CONFIG, "max_seq_length")
    if max_length is None:  # sentence-transformers 5 keeps it as the tokenizer's
        max_length = _setting(folder / "tokenizer_config.json", "model_max_length")
    normalize = "Normalize" in kinds
    return folder, TaskHead("text_embedder", sentence_transformers_name(pooling, normalize),
                            {"pooling": pooling, "normalize": normalize,
                             "max_length": max_length})


def write(folder, task_head, hidden_size, max_length):
    """modules.json, sentence_bert_config.json, 1_Pooling/config.json and (normalized)
    2_Normalize/ around the Transformer module written at the top of `folder`; the
    embedder's `max_length` (else `max_length`, the positions) is its `max_seq_length`."""
    folder = Path(folder)
    arguments = task_head.arguments
    modules = [("", "Transformer"), ("1_Pooling", "Pooling")]
    if arguments.get("normalize"):
        modules.append(("2_Normalize", "Normalize"))
    entries = [{"idx": i, "name": str(i), "path": path,
                "type": f"sentence_transformers.models.{kind}"}
               for i, (path, kind) in enumerate(modules)]
    _dump(folder / MODULES, entries)
    _dump(folder / _TRANSFORMER_CONFIG, {"max_seq_length": task_head.max_length or max_length,
                                         "do_lower_case": False})
    pooling = arguments.get("pooling", "mean")
    (folder / "1_Pooling").mkdir()
    _dump(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": hidden_size,
        **{key: mode == pooling for key, mode in list(_LEGACY_POOLING.items())[:4]},
    })
    if arguments.get("normalize"):
        (folder / "2_Normalize").mkdir()


def _dump(file, values):
    with open(file, "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2)
