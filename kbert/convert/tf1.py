"""Original google-research/bert TF1 checkpoints: bert_model.ckpt.* + bert_config.json + vocab.txt.

Read with `tf.train.load_checkpoint` (no TF1 graph, no session); variable names such as
`bert/encoder/layer_3/attention/self/query/kernel` are translated to the common Hugging Face
names of `kbert.convert.bert`.
"""

import json
import logging
import re
from pathlib import Path

from kbert.convert import _directory, bert
from kbert.convert.checkpoint import Checkpoint, uppercase_free

CONFIG_FILES = ("bert_config.json",)
# Optimizer slots and bookkeeping in pretraining checkpoints: not model weights.
_SKIP = re.compile(r"(/adam_[mv]$|/lamb_[mv]$|^global_step$|^good_steps$|^current_loss_scale$)")
_SPECIAL = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",  # [2, H] like HF
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
}


def find_prefix(path):
    """The checkpoint prefix for a directory or a prefix path (`.../bert_model.ckpt`)."""
    path = Path(path)
    if Path(f"{path}.index").is_file():
        return str(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is neither a checkpoint prefix nor a directory.")
    if (path / "bert_model.ckpt.index").is_file():
        return str(path / "bert_model.ckpt")
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(path))
    if latest:
        return latest
    indexes = sorted(path.glob("*.index"))
    if len(indexes) == 1:
        return str(indexes[0])[: -len(".index")]
    raise FileNotFoundError(
        f"{path} has {len(indexes)} *.index files and no 'checkpoint' state file: pass the "
        "prefix itself, e.g. .../bert_model.ckpt."
        if indexes else f"{path} has no TF checkpoint (*.index file)."
    )


def is_tf1(path):
    try:
        find_prefix(path)
    except FileNotFoundError:
        return False
    return True


def tf1_name_to_hf(name):
    """`bert/encoder/layer_0/output/dense/kernel` -> (`encoder.layer.0.output.dense.weight`,
    transpose?). `None` for names that are not BERT weights."""
    if name in _SPECIAL:
        return _SPECIAL[name], False
    parts = name.split("/")
    if parts[0] == "bert":
        parts = parts[1:]
    elif parts[0] != "cls":
        return None
    out, transpose = [], False
    for part in parts:
        match = re.fullmatch(r"layer_(\d+)", part)
        if match:
            out += ["layer", match.group(1)]
        elif part == "kernel":
            out.append("weight")
            transpose = True
        elif part == "gamma":
            out.append("weight")
        elif part == "beta":
            out.append("bias")
        else:
            out.append(part)
    if out[-1].endswith("_embeddings"):
        out.append("weight")
    return ".".join(out), transpose


def read(path, config_path=None):
    """Reads an original TF1 BERT checkpoint into a `Checkpoint`.

    Args:
        path: the directory of the release, or the checkpoint prefix.
        config_path: bert_config.json, when it is not next to the checkpoint.
    """
    import tensorflow as tf

    prefix = find_prefix(path)
    folder = Path(prefix).parent
    if config_path is None:
        found = [folder / name for name in CONFIG_FILES if (folder / name).is_file()]
        if not found:
            raise FileNotFoundError(
                f"No {' or '.join(CONFIG_FILES)} next to {prefix}: pass its path (config_path= "
                "in Python, --config in tools/convert_checkpoint.py)."
            )
        config_path = found[0]
    with open(config_path, encoding="utf-8") as f:
        config = bert.config_from_google(json.load(f), source=str(config_path))
    reader = tf.train.load_checkpoint(prefix)
    weights, ignored = {}, []
    for name in sorted(reader.get_variable_to_shape_map()):
        if _SKIP.search(name):
            continue
        translated = tf1_name_to_hf(name)
        if translated is None:
            ignored.append(name)
            continue
        hf_name, transpose = translated
        value = reader.get_tensor(name)
        weights[hf_name] = value.T if transpose else value
    if ignored:
        logging.info("%s: ignored %d variables that are not BERT weights: %s", prefix,
                     len(ignored), ", ".join(ignored[:10]))
    vocabulary, _ = _directory.read_tokenizer_files(folder)  # the releases have no casing file
    return Checkpoint("bert", config, weights, vocabulary,
                      lowercase=uppercase_free(vocabulary or []), source=prefix)
