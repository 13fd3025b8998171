"""Original Google TF1 checkpoints: google-research/bert (bert_model.ckpt.* + bert_config.json +
vocab.txt), google-research/albert (model.ckpt-best.* + albert_config.json + 30k-clean.model)
and google-research/electra (electra_small.* + vocab.txt, no config).

Read with `tf.train.load_checkpoint` (no TF1 graph, no session); variable names such as
`bert/encoder/layer_3/attention/self/query/kernel` are translated to the common Hugging Face
names of the family's module (`kbert.convert.bert`, `albert`, `electra`).
"""

import logging
import re
from pathlib import Path

from kbert.convert import _checks, _directory, families
from kbert.convert._checks import CheckpointError
from kbert.convert.checkpoint import Checkpoint, uppercase_free

# Optimizer slots and bookkeeping in pretraining checkpoints: not model weights.
_SKIP = re.compile(r"(/adam_[mv]$|/lamb_[mv]$|^global_step$|^good_steps$|^current_loss_scale$"
                   r"|^temperature$)")


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


def family_of(names):
    """The model family of a TF1 checkpoint, from its variable names: the family whose
    `tf1_pattern` some name matches, else the one without a pattern (BERT)."""
    names = list(names)
    with_release = [f for f in families.FORMATS.values() if f.tf1_name is not None]
    for family in with_release:
        if family.tf1_pattern and any(re.search(family.tf1_pattern, n) for n in names):
            return family.name
    (default,) = [f for f in with_release if f.tf1_pattern is None]
    return default.name


def tf1_name_to_hf(name, family="bert"):
    """The common (Hugging Face) name of a TF1 variable and whether its array is transposed:
    `bert/encoder/layer_0/output/dense/kernel` -> (`encoder.layer.0.output.dense.weight`,
    True). `None` for names that are not weights of the family."""
    record = families.get(family)
    if record.tf1_name is None:
        raise ValueError(f"{family} has no original TF1 release, so no TF1 names.")
    return record.tf1_name(name)


def _config(family, folder, prefix, config_path, tensors):
    """(config, its file for messages) of the release: its config file, or for ELECTRA's
    releases, which have none, the tensors' shapes."""
    record = families.get(family)
    if config_path is None:
        found = [folder / name for name in record.tf1_config_files if (folder / name).is_file()]
        if found:
            config_path = found[0]
        elif record.config_from_weights is not None:  # ELECTRA's releases have no config
            return _checks.make_config(record.config_from_weights, tensors, prefix), prefix
        else:
            raise FileNotFoundError(
                f"No {' or '.join(record.tf1_config_files)} next to {prefix}: pass its path "
                "(config_path= in Python, --config in tools/convert_checkpoint.py)."
            )
    values = _checks.read_json(config_path, f"the release's {record.tf1_config_files[0]}")
    return (_checks.make_config(record.config_from_google, values, str(config_path)),
            str(config_path))


def _data_files(prefix):
    return ", ".join(sorted(str(p) for p in Path(prefix).parent.glob(
        f"{Path(prefix).name}.data-*"))) or f"{prefix}.data-*"


def _tensor(reader, name, prefix):
    import tensorflow as tf

    try:
        return reader.get_tensor(name)
    except (tf.errors.OpError, ValueError, RuntimeError, IndexError, OSError) as error:
        message = getattr(error, "message", None) or str(error)
        raise CheckpointError(f"{_data_files(prefix)}: cannot read {name} ({message.strip()}); "
                              "the data file is truncated or corrupted.") from None


def _open(prefix):
    """(reader, variable -> shape, variable -> dtype name) from the checkpoint's index."""
    import tensorflow as tf

    try:
        reader = tf.train.load_checkpoint(prefix)
        return (reader, reader.get_variable_to_shape_map(),
                {k: v.name for k, v in reader.get_variable_to_dtype_map().items()})
    except (tf.errors.OpError, ValueError, RuntimeError, IndexError, OSError) as error:
        message = getattr(error, "message", None) or str(error)
        raise CheckpointError(
            f"{prefix}.index: cannot read the TF checkpoint index ({message.strip()}); expected "
            "the .index and .data-* files of a tf.train.Saver or tf.train.Checkpoint "
            "checkpoint."
        ) from None


_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}


def read(path, config_path=None):
    """Reads an original TF1 BERT, ALBERT or ELECTRA checkpoint into a `Checkpoint`.

    The variables' names, shapes and dtypes (the index alone), the config and the vocabulary
    are checked against each other (`kbert.convert._checks`) before any tensor is read.

    Args:
        path: the directory of the release, or the checkpoint prefix.
        config_path: bert_config.json (albert_config.json), when it is not next to the
            checkpoint. ELECTRA's releases have none: its architecture comes from the weights'
            shapes, with one attention head per 64 units as google-research/electra.
    """
    prefix = find_prefix(path)
    folder = Path(prefix).parent
    reader, shapes, dtypes = _open(prefix)
    names = sorted(n for n in shapes if not _SKIP.search(n))
    family = family_of(names)
    tensors, sources, ignored = {}, {}, []
    for name in names:
        translated = tf1_name_to_hf(name, family)
        if translated is None:
            ignored.append(name)
            continue
        hf_name, transpose = translated
        shape = tuple(int(d) for d in shapes[name])
        tensors[hf_name] = _checks.Tensor(shape[::-1] if transpose else shape,
                                          _DTYPES.get(dtypes[name], dtypes[name]),
                                          _data_files(prefix))
        sources[hf_name] = (name, transpose)
    if ignored:
        logging.info("%s: ignored %d variables that are not %s weights: %s", prefix,
                     len(ignored), family, ", ".join(ignored[:10]))
    config, config_source = _config(family, folder, prefix, config_path, tensors)
    record = families.get(family)
    fields = {ours: theirs for theirs, ours in record.config_fields.items()}
    _checks.check_sizes(config, config_source, fields)
    _checks.check_shapes(record, config, tensors, config_source, fields)
    vocabulary, _ = _directory.read_tokenizer_files(folder)  # the releases have no casing file
    sentencepiece = None
    models = sorted(folder.glob("*.model"))  # ALBERT: 30k-clean.model
    if vocabulary is None and len(models) == 1:
        sentencepiece = _directory.read_bytes(models[0])
    _directory.check_tokenizer(folder, vocabulary, sentencepiece, config.vocabulary_size,
                               config_source)
    weights = {}
    for hf_name, (name, transpose) in sources.items():
        value = _tensor(reader, name, prefix)
        weights[hf_name] = value.T if transpose else value
    return Checkpoint(family, config, weights, vocabulary,
                      lowercase=uppercase_free(vocabulary or []), source=prefix,
                      sentencepiece_model=sentencepiece)
