"""Fuzzing the checkpoint readers: 200 randomly corrupted copies of a tiny checkpoint (bytes
flipped in the safetensors header and the TF1 index, files truncated, dtypes and shapes
changed in the header, shapes off by one in a well-formed file, config sizes off by one,
vocabulary lines dropped or repeated) never hang, never crash the interpreter, and each either
loads equal to the original or is refused with an error that names its folder."""

import json
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from tests.convert import _checkpoints, _isolated

CASES = 200
SEED = 17
SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size",
                "max_position_embeddings", "type_vocab_size")


def _header(data):
    length = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + length]), data[8 + length:]


def _with_header(header, rest):
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + rest


def _flip(data, rng, start=0, stop=None):
    data = bytearray(data)
    position = int(rng.integers(start, stop or len(data)))
    data[position] ^= int(rng.integers(1, 256))
    return bytes(data)


def corrupt_hf(folder, rng):
    """Corrupts one file of a Hugging Face directory in place; returns what it did."""
    weights, config = folder / "model.safetensors", folder / "config.json"
    data = weights.read_bytes()
    kind = rng.choice(["flip header", "truncate", "dtype", "header shape", "file shape",
                       "config size", "config truncate", "vocab"])
    if kind == "flip header":
        weights.write_bytes(_flip(data, rng, 0, 8 + int.from_bytes(data[:8], "little")))
    elif kind == "truncate":
        weights.write_bytes(data[: int(rng.integers(0, len(data)))])
    elif kind in ("dtype", "header shape"):
        header, rest = _header(data)
        name = rng.choice(sorted(k for k in header if k != "__metadata__"))
        if kind == "dtype":
            header[name]["dtype"] = str(rng.choice(["F16", "F64", "BF16", "I32", "U8", "I64"]))
        elif header[name]["shape"]:
            axis = int(rng.integers(len(header[name]["shape"])))
            header[name]["shape"][axis] += int(rng.choice([-1, 1]))
        else:
            header[name]["shape"] = [1]
        weights.write_bytes(_with_header(header, rest))
    elif kind == "file shape":  # a well-formed file whose one tensor is off by one
        arrays = load_file(str(weights))
        name = rng.choice(sorted(arrays))
        axis = int(rng.integers(arrays[name].ndim))
        if rng.integers(2):
            arrays[name] = np.take(arrays[name], range(arrays[name].shape[axis] - 1), axis)
        else:
            pad = [(0, 1 if a == axis else 0) for a in range(arrays[name].ndim)]
            arrays[name] = np.pad(arrays[name], pad)
        save_file(arrays, str(weights))
    elif kind == "config size":
        values = json.loads(config.read_text())
        field = rng.choice(SHAPE_FIELDS)
        values[field] += int(rng.choice([-1, 1]))
        config.write_text(json.dumps(values))
    elif kind == "config truncate":
        text = config.read_bytes()
        config.write_bytes(text[: int(rng.integers(0, len(text)))])
    else:
        vocab = folder / "vocab.txt"
        lines = vocab.read_text().splitlines(keepends=True)
        i = int(rng.integers(len(lines)))
        how = rng.choice(["drop", "repeat", "flip"])
        if how == "drop":
            del lines[i]
        elif how == "repeat":
            lines.insert(i, lines[i])
        vocab.write_bytes(_flip(vocab.read_bytes(), rng) if how == "flip"
                          else "".join(lines).encode())
        kind = f"vocab {how}"
    return kind


def corrupt_tf1(folder, rng):
    index = folder / "bert_model.ckpt.index"
    (data,) = folder.glob("bert_model.ckpt.data-*")
    target = index if rng.integers(2) else data
    content = target.read_bytes()
    if rng.integers(2):
        target.write_bytes(_flip(content, rng))
        return f"flip {target.suffix}"
    target.write_bytes(content[: int(rng.integers(0, len(content)))])
    return f"truncate {target.suffix}"


def _timeout(*_):
    raise TimeoutError("no answer in 20 s")


def load_each(original, folders):
    """In the child: for each folder, "equal", "refused" or what went wrong, after loading the
    folder and comparing its model's weights with `original`'s."""
    import kbert.convert

    def weights(path):
        model = kbert.convert.load(path)
        return type(model).__name__, [np.asarray(w) for w in model.weights]

    expected = weights(original)
    signal.signal(signal.SIGALRM, _timeout)
    results = []
    for folder in folders:
        signal.alarm(20)
        try:
            name, found = weights(folder)
            same = name == expected[0] and len(found) == len(expected[1]) and all(
                a.shape == b.shape and np.array_equal(a, b)
                for a, b in zip(found, expected[1]))
            results.append("equal" if same else "loaded a different model")
        except (ValueError, OSError) as error:  # CheckpointError is a ValueError
            named = Path(folder).name in str(error)
            results.append("refused" if named else
                           f"refused without naming the folder: {type(error).__name__}: {error}")
        except Exception as error:  # noqa: BLE001 - any other kind is the finding
            results.append(f"{type(error).__name__}: {error}")
        finally:
            signal.alarm(0)
    return json.dumps(results)


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    import kbert.convert

    root = tmp_path_factory.mktemp("originals")
    model = _checkpoints.random_pretrainer()
    hf = kbert.convert.save_hugging_face(model, root / "hf",
                                         vocabulary=_checkpoints.VOCABULARY)
    return hf, _checkpoints.write_tf1_release(model, root / "tf1")


def test_corrupted_checkpoints_load_equal_or_are_refused(tmp_path, originals):
    rng = np.random.default_rng(SEED)
    cases = {"hf": [], "tf1": []}
    for i in range(CASES):
        kind = "tf1" if i % 4 == 3 else "hf"
        folder = tmp_path / f"case{i:03d}_{kind}"
        shutil.copytree(originals[kind == "tf1"], folder)
        what = (corrupt_tf1 if kind == "tf1" else corrupt_hf)(folder, rng)
        cases[kind].append((str(folder), what))
    failures, counts = [], {}
    for kind, listed in cases.items():
        for start in range(0, len(listed), 50):  # a crash loses one batch, named below
            batch = listed[start:start + 50]
            outcome = _isolated.run(load_each, str(originals[kind == "tf1"]),
                                    [f for f, _ in batch], timeout=300)
            assert outcome.error is None, (kind, start, outcome.details)
            for (folder, what), result in zip(batch, json.loads(outcome.message)):
                counts[result if result in ("equal", "refused") else "failed"] = \
                    counts.get(result if result in ("equal", "refused") else "failed", 0) + 1
                if result not in ("equal", "refused"):
                    failures.append(f"{Path(folder).name} ({what}): {result}")
    assert not failures, "\n".join(failures)
    assert sum(counts.values()) == CASES and counts.get("refused", 0) > CASES // 2, counts
