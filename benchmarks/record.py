"""A benchmark's result as a JSON file: what ran, when, on what, with which versions.

    {"benchmark": "train_step", "date": "2026-12-03T16:20:00+00:00", "seconds": 412.0,
     "command": "python tools/benchmark.py train_step --steps=3",
     "versions": {"python": "3.11.9", "tensorflow": "2.21.0", ...},
     "machine": {"system": "Linux", "machine": "x86_64", "cores": 2,
                 "processor": "Intel(R) Xeon(R) ...", "memory_gib": 23.5},
     "results": {...}}

`results` is what the benchmark's `run` returned (its own keys, documented there). The file
holds plain JSON only: NumPy numbers become Python numbers, tuples lists, dict keys strings,
NaN and infinities null.
"""

import datetime
import json
import math
import os
import platform
import shlex
from importlib import metadata

# Distributions whose versions a result records, where installed (the peers' included).
PACKAGES = ("kbert-keras", "tensorflow", "keras", "keras-hub", "jax", "numpy", "ai-edge-litert",
            "apache-beam", "onnxruntime", "torch", "transformers")


def versions():
    """{"python": ..., distribution: version} of what is installed of `PACKAGES`."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def _proc_field(path, field):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == field:
                    return value.strip()
    except OSError:
        pass
    return None


def machine():
    """The system, architecture, cores, processor model and memory (Linux's /proc where
    there is one; None where unknown)."""
    memory = _proc_field("/proc/meminfo", "MemTotal")  # "24576000 kB"
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "processor": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "memory_gib": round(int(memory.split()[0]) / 2**20, 1) if memory else None,
    }


def command(args):
    """The command line that reruns the benchmark: `python tools/benchmark.py` and `args`
    (the name and its flags as given)."""
    return shlex.join(["python", "tools/benchmark.py", *args])


def plain(value):
    """`value` as plain JSON types: NumPy scalars and arrays to Python numbers and lists,
    tuples to lists, dict keys to strings (a tuple key joined by '/')."""
    if isinstance(value, dict):
        return {(("/".join(str(k) for k in key)) if isinstance(key, tuple) else str(key)):
                plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # NumPy
        return plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN and infinities are not JSON
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"A benchmark result holds a {type(value).__name__} ({value!r}): give "
                    "numbers, strings, lists or dicts.")


def make(name, args, results, seconds, date=None):
    """The record of one run of benchmark `name` with command-line `args`."""
    date = date or datetime.datetime.now(datetime.timezone.utc)
    return {"benchmark": name, "date": date.isoformat(timespec="seconds"),
            "seconds": round(float(seconds), 1), "command": command(args),
            "versions": versions(), "machine": machine(), "results": plain(results)}


def write(record, folder):
    """Writes `record` to `folder/<benchmark>.json` (the folder made if needed, a previous
    result of that benchmark replaced whole) and returns the path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{record['benchmark']}.json")
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(partial, path)
    return path


def read(path):
    """A record written by `write`, checked for the keys every record has."""
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    missing = {"benchmark", "date", "command", "versions", "machine", "results"} - set(record)
    if missing:
        raise ValueError(f"{path} is not a benchmark record: no {', '.join(sorted(missing))}.")
    return record
