"""What a checkpoint must pass before kbert builds anything from it.

Every reader lists the tensors (names, shapes, dtypes) from the files' headers first (a
safetensors header, a TF1 index, a PyTorch pickle's records: `kbert.convert._headers`),
then checks here that the config's sizes are ones a real model has (`check_sizes`), that the
tensors are the ones the config implies (`check_shapes`) and that the vocabulary is the
model's (`check_vocabulary`). Only then are the tensors' data read and a model built, so a
hostile or broken checkpoint is refused in seconds, before any large allocation, and every
message names the file, the field and both values.
"""

import collections
import json
import math
import re
from pathlib import Path

# Sizes no released model of these families comes near (BERT-Large: 0.34 billion
# parameters, a 250k vocabulary, 24 layers): a config beyond them is broken or hostile.
MAX_PARAMETERS = 100_000_000_000
MAX_VOCABULARY = 10_000_000
MAX_LAYERS = 1_000
MAX_POSITIONS = 1_000_000
MAX_JSON_BYTES = 64 << 20  # config.json, index and tokenizer files are kilobytes

FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")

# A tensor as a header describes it: shape (tuple of ints), dtype (safetensors' names: "F32",
# "I64", ...), and the file that holds it (for messages).
Tensor = collections.namedtuple("Tensor", "shape dtype file")


class CheckpointError(ValueError):
    """A checkpoint kbert refuses to read; the message names the file, what it holds and what
    kbert expected."""


def read_json(path, expected="a JSON object", kind=dict, unique_keys=False):
    """The object (or, with `kind=list`, the list) in the JSON file `path`; CheckpointError
    naming the file when it cannot be read, is not JSON, or holds another kind of value.
    `unique_keys`: an object that names a key twice is refused too (JSON keeps the last)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise CheckpointError(f"{path} is {size} bytes; expected {expected} of at most "
                                  f"{MAX_JSON_BYTES} bytes.")
        text = path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read it ({error.strerror or error}); expected "
                              f"{expected}.") from None
    def unique(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise CheckpointError(f"{path}: the key {key!r} is listed twice; expected "
                                      f"{expected}, each key once.")
            seen.add(key)
        return dict(pairs)

    try:
        values = json.loads(text.decode("utf-8"), object_pairs_hook=unique if unique_keys
                            else None)
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{path} is not UTF-8 text ({error.reason} at byte "
                              f"{error.start}); expected {expected}.") from None
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is not valid JSON ({error.msg} at line {error.lineno}, "
                              f"column {error.colno}); expected {expected}.") from None
    except RecursionError:
        raise CheckpointError(f"{path} nests too deep to parse; expected {expected}.") from None
    if not isinstance(values, kind):
        raise CheckpointError(f"{path} holds a JSON {type(values).__name__}; expected "
                              f"{expected}.")
    return values


def make_config(make, values, source):
    """`make(values, source)` (a family's `config_from_*`), with every error it raises about
    the values naming `source`."""
    try:
        return make(values, source=source)
    except CheckpointError:
        raise
    except (ValueError, TypeError, KeyError) as error:
        message = str(error)
        if source not in message:
            message = f"{source}: {message}"
        raise CheckpointError(message) from None


def parameter_count(config):
    """About how many weights `config` asks for (the encoder's blocks, the embeddings and the
    pooler), from the config alone; ALBERT's shared blocks count once per group."""
    hidden, inner = config.hidden_size, config.intermediate_size
    width = getattr(config, "embedding_size", None) or hidden
    tables = (config.vocabulary_size + config.max_sequence_length
              + (getattr(config, "type_vocab_size", 0) or 0)) * width
    block = 4 * hidden * hidden + 2 * hidden * inner + 9 * hidden + inner
    blocks = getattr(config, "num_groups", None) or config.num_layers
    return tables + width * hidden + blocks * block + hidden * hidden


def check_sizes(config, source, names=None, offsets=None):
    """Refuses a config whose sizes no real model has (`MAX_PARAMETERS`, `MAX_VOCABULARY`,
    `MAX_LAYERS`, `MAX_POSITIONS`), before anything is allocated. `names`: kbert field ->
    the file's name of it, for messages; `offsets`: kbert field -> what the file's value adds
    to kbert's (`Shapes.offsets`), so that messages show the file's value."""
    names, offsets = names or {}, offsets or {}
    limits = (("vocabulary_size", MAX_VOCABULARY, "tokens in its vocabulary"),
              ("num_layers", MAX_LAYERS, "layers"),
              ("max_sequence_length", MAX_POSITIONS, "positions"))
    for field, limit, what in limits:
        value = getattr(config, field)
        if value > limit:
            raise CheckpointError(
                f"{source}: {_field(field, names)}={value + offsets.get(field, 0)}: no real "
                f"model has over {limit:,} {what}; kbert refuses it before allocating anything."
            )
    count = parameter_count(config)
    if count > MAX_PARAMETERS:
        raise CheckpointError(
            f"{source}: the config asks for about {count:,} parameters ("
            + ", ".join(f"{_field(f, names)}={getattr(config, f) + offsets.get(f, 0)}"
                        for f in ("vocabulary_size", "num_layers", "hidden_size",
                                  "intermediate_size"))
            + f"); no real model has over {MAX_PARAMETERS:,}. kbert refuses it before "
            "allocating anything."
        )


def _field(field, names):
    theirs = names.get(field)
    return field if theirs in (None, field) else theirs


def _implied(family, config, tensors):
    """(field, the config's value, the tensors' value, the tensor that says so) for every
    size the tensors fix; a field with an offset (`Shapes.offsets`) gives the file's value,
    the tensor's length."""
    layout = family.shapes
    result = []
    for field, (name, axis) in layout.sizes.items():
        expected = getattr(config, field, None)
        if field == "embedding_size" and not expected:  # no factorized embedding
            field, expected = "hidden_size", config.hidden_size
        if expected is None:
            continue
        expected += layout.offsets.get(field, 0)
        tensor = tensors.get(name)
        if tensor is None:
            if field in layout.optional:
                result.append((field, expected, 0, name))
            continue
        if len(tensor.shape) <= axis:
            raise CheckpointError(f"{tensor.file}: {name} has shape {tuple(tensor.shape)}; "
                                  f"expected {axis + 1} or more dimensions.")
        result.append((field, expected, tensor.shape[axis], name))
    pattern = re.compile(layout.layers)
    indexes = {int(m.group(1)) for n in tensors for m in [pattern.match(n)] if m}
    if indexes:
        result.append((layout.layer_field, getattr(config, layout.layer_field),
                       max(indexes) + 1, pattern.pattern))
    return result


def check_shapes(family, config, tensors, config_source, names=None):
    """Refuses tensors (common name -> `Tensor`) that are not the ones `config` implies: the
    vocabulary, positions, segments, widths and layer count the family's record
    (`FamilyFormat.shapes`) reads from them, a layer whose tensors differ from layer 0's, and a
    weight that is not floating point. Messages name both files, the field and both values."""
    names = names or {}
    for name, tensor in tensors.items():
        if tensor.dtype not in FLOAT_DTYPES:
            raise CheckpointError(
                f"{tensor.file}: {name} has dtype {tensor.dtype}; a weight is floating point "
                f"({', '.join(FLOAT_DTYPES)})."
            )
        if any(d < 0 for d in tensor.shape):
            raise CheckpointError(f"{tensor.file}: {name} has shape {tuple(tensor.shape)}.")
    for field, expected, found, name in _implied(family, config, tensors):
        if expected != found:
            where = tensors[name].file if name in tensors else _any_file(tensors)
            what = (f"{found} layers ({name})" if name not in tensors and found else
                    f"{field} {found} (no {name})" if name not in tensors else
                    f"{name} of shape {tuple(tensors[name].shape)}, so {found}")
            raise CheckpointError(
                f"{config_source}: {_field(field, names)}={expected}, but {where} holds "
                f"{what}. The config and the weights are of different models."
            )
    pattern = re.compile(family.shapes.layers)
    for name, tensor in tensors.items():
        match = pattern.match(name)
        if not match or match.group(1) == "0":
            continue
        first = name[:match.start(1)] + "0" + name[match.end(1):]
        if first in tensors and tuple(tensors[first].shape) != tuple(tensor.shape):
            raise CheckpointError(
                f"{tensor.file}: {name} has shape {tuple(tensor.shape)}, {first} "
                f"{tuple(tensors[first].shape)}; every layer has the same shapes."
            )


def _any_file(tensors):
    files = sorted({str(t.file) for t in tensors.values()})
    return ", ".join(files) or "the weights"


def check_vocabulary(tokens, vocabulary_size, specials, source, config_source,
                     spare_rows=False):
    """Refuses a vocabulary (the tokens, index = id) that is not the model's: a token count
    other than the config's `vocabulary_size` (with `spare_rows`, more than it: DeBERTa-v3's
    table has rows no token uses), a special token missing, a token listed twice. `source`
    is the vocabulary's file."""
    if len(tokens) > vocabulary_size:
        raise CheckpointError(
            f"{source} holds {len(tokens)} tokens, but {config_source} has vocabulary_size="
            f"{vocabulary_size}: no token may have an id the model lacks."
        )
    if len(tokens) != vocabulary_size and not spare_rows:
        raise CheckpointError(
            f"{source} holds {len(tokens)} tokens, but {config_source} has vocabulary_size="
            f"{vocabulary_size}: each of the model's {vocabulary_size} token ids needs a "
            "token, and no token may have an id the model lacks."
        )
    missing = [token for token in specials if token not in set(tokens)]
    if missing:
        raise CheckpointError(f"{source} lacks the special tokens {', '.join(missing)}; the "
                              f"model's tokenizer needs {', '.join(specials)}.")
    seen = {}
    for i, token in enumerate(tokens):
        if token in seen:
            raise CheckpointError(f"{source}: {token!r} is listed twice (lines {seen[token] + 1} "
                                  f"and {i + 1}); each token has one id.")
        seen[token] = i


_NUMPY_DTYPES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64",
                 "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}


def tensors_of(arrays, file):
    """name -> `Tensor` of arrays already read (formats whose headers cannot be listed)."""
    return {name: Tensor(tuple(a.shape), _NUMPY_DTYPES.get(str(a.dtype), str(a.dtype)),
                         str(file)) for name, a in arrays.items()}


def element_count(shape):
    return math.prod(int(d) for d in shape)


__all__ = ["CheckpointError", "Tensor", "check_shapes", "check_sizes", "check_vocabulary",
           "make_config", "read_json", "tensors_of"]
