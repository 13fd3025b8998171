"""The tensors of a weights file listed from its header alone, then its data read with every
error naming the file.

A safetensors file is an 8-byte header length, a JSON header (each tensor's dtype, shape and
byte range) and the data; PyTorch's `pytorch_model.bin` (the zip format of torch >= 1.6) is a
pickle of tensor records (storage, offset, shape, strides) beside one file per storage. Both
are listed here without reading any tensor data, and checked for consistency (every byte
range inside the file and of the size its shape and dtype imply), so a truncated or
corrupted file is refused before anything is allocated for it.
"""

import collections
import json
import os
import pickle
import zipfile

import numpy as np

from kbert.convert._checks import CheckpointError, Tensor, element_count

ITEM_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
              "U8": 1, "U16": 2, "U32": 4, "U64": 8, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
          "I8": "i1", "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?"}
MAX_HEADER_BYTES = 100 << 20  # safetensors' own limit


def _shape(value):
    if not isinstance(value, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value):
        return None
    return tuple(value)


def safetensors(file):
    """The tensors of a safetensors file (name -> `Tensor`) from its header; CheckpointError
    naming the file when the header is not safetensors' or does not fit the file."""
    try:
        with open(file, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            prefix = f.read(8)
            length = int.from_bytes(prefix, "little") if len(prefix) == 8 else None
            if length is None or length > MAX_HEADER_BYTES or 8 + length > size:
                raise CheckpointError(
                    f"{file} is {size} bytes and its first 8 bytes give a header of "
                    f"{length} bytes: truncated, or not a safetensors file (expected an 8-byte "
                    f"header length, at most {MAX_HEADER_BYTES}, then the JSON header and "
                    "the data)."
                )
            raw = f.read(length)
    except OSError as error:
        raise CheckpointError(f"{file}: cannot read it ({error.strerror or error}).") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise CheckpointError(f"{file}: its header is not JSON ({error}); the file is "
                              "corrupted or not a safetensors file.") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{file}: its header is a JSON {type(header).__name__}; "
                              "safetensors' is an object of tensors.")
    data_size = size - 8 - length
    tensors, spans = {}, []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        keys = sorted(entry) if isinstance(entry, dict) else None
        shape = _shape(entry.get("shape")) if keys else None
        offsets = entry.get("data_offsets") if keys else None
        dtype = entry.get("dtype") if keys else None
        if (keys != ["data_offsets", "dtype", "shape"] or dtype not in ITEM_SIZES
                or shape is None or not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
            raise CheckpointError(
                f"{file}: the header's entry {name!r} is {entry!r}; expected dtype (one of "
                f"{', '.join(ITEM_SIZES)}), shape (a list of sizes) and data_offsets (two "
                "ints)."
            )
        begin, end = offsets
        expected = element_count(shape) * ITEM_SIZES[dtype]
        if not 0 <= begin <= end <= data_size or end - begin != expected:
            raise CheckpointError(
                f"{file}: {name} ({dtype} {list(shape)}, {expected} bytes) has data_offsets "
                f"[{begin}, {end}] in {data_size} bytes of data: the file is truncated or its "
                "header corrupted."
            )
        spans.append((begin, end, name))
        tensors[name] = Tensor(shape, dtype, str(file))
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            raise CheckpointError(f"{file}: {name}'s data starts at byte {begin}, the data "
                                  f"before it ends at {position}: the header is corrupted.")
        position = end
    if position != data_size:
        raise CheckpointError(f"{file}: the header describes {position} bytes of data, the file "
                              f"holds {data_size}: it is corrupted or has extra bytes.")
    return tensors


def load_safetensors(file, tensors):
    """The arrays of a safetensors file whose header `safetensors(file)` listed as `tensors`."""
    from safetensors.numpy import load_file

    bfloat16 = [name for name, t in tensors.items() if t.dtype == "BF16"]
    if bfloat16:
        raise CheckpointError(f"{file}: {', '.join(bfloat16[:3])} are bfloat16, which numpy "
                              "cannot hold; save the weights as float32 or float16.")
    try:
        arrays = load_file(str(file))
    except Exception as error:  # safetensors' SafetensorError is a bare Exception subclass
        raise CheckpointError(f"{file}: cannot read its tensors ({error}).") from None
    for name, array in arrays.items():
        if tuple(array.shape) != tensors[name].shape:
            raise CheckpointError(f"{file}: {name} reads as {array.shape}, its header says "
                                  f"{tensors[name].shape}.")
    return arrays


# === PyTorch's zip format ===
_TORCH_STORAGES = {"DoubleStorage": "F64", "FloatStorage": "F32", "HalfStorage": "F16",
                   "BFloat16Storage": "BF16", "LongStorage": "I64", "IntStorage": "I32",
                   "ShortStorage": "I16", "CharStorage": "I8", "ByteStorage": "U8",
                   "BoolStorage": "BOOL"}
_Storage = collections.namedtuple("_Storage", "dtype key numel")
_Record = collections.namedtuple("_Record", "storage offset shape strides")


def _rebuild_tensor(storage, offset, shape, strides, *_):
    return _Record(storage, offset, tuple(shape), tuple(strides))


def _rebuild_parameter(record, *_):
    return record


_TORCH_GLOBALS = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
                  ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
                  ("collections", "OrderedDict"): collections.OrderedDict}


class _TensorRecords(pickle.Unpickler):
    """Unpickles a state dict into `_Record`s; any other class is refused (a pickle may name
    any callable, which would run)."""

    def __init__(self, data, file):
        super().__init__(data)
        self.file = file

    def find_class(self, module, name):
        if (module, name) in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[(module, name)]
        if module == "torch" and name in _TORCH_STORAGES:
            return name
        raise CheckpointError(f"{self.file}: its pickle names {module}.{name}; a weights file "
                              "holds only tensors, so kbert does not run it.")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and pid[1] in _TORCH_STORAGES and isinstance(pid[4], int)):
            raise CheckpointError(f"{self.file}: its pickle has the storage record {pid!r}.")
        return _Storage(_TORCH_STORAGES[pid[1]], str(pid[2]), pid[4])


def _torch_records(file):
    try:
        archive = zipfile.ZipFile(file)
    except zipfile.BadZipFile as error:
        with open(file, "rb") as f:
            start = f.read(2)
        if start == b"\x80\x02":  # torch's legacy format: a pickle (protocol 2) from byte 0
            return None, None
        raise CheckpointError(f"{file}: neither a PyTorch zip file ({error}; truncated or "
                              "corrupted) nor a legacy PyTorch pickle.") from None
    except OSError as error:
        raise CheckpointError(f"{file}: cannot read it ({error.strerror or error}).") from None
    pickles = [n for n in archive.namelist() if n.endswith("data.pkl")]
    if len(pickles) != 1:
        raise CheckpointError(f"{file} holds {len(pickles)} data.pkl members; PyTorch's "
                              "format has one.")
    root = pickles[0][: -len("data.pkl")]
    try:
        state = _TensorRecords(archive.open(pickles[0]), file).load()
    except CheckpointError:
        raise
    except Exception as error:  # a truncated or corrupted pickle raises many kinds
        raise CheckpointError(f"{file}: its data.pkl is not a state dict ({error!r}).") from None
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, _Record) for k, v in state.items()):
        raise CheckpointError(f"{file}: its data.pkl is not a dict of named tensors.")
    return archive, {name: (record, f"{root}data/{record.storage.key}")
                     for name, record in state.items()}


def torch(file):
    """The tensors of a PyTorch zip-format state dict (name -> `Tensor`) from its pickle's
    records; `None` for the legacy (pre-zip) format, which only torch reads."""
    archive, records = _torch_records(file)
    if archive is None:
        return None
    tensors = {}
    with archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
        for name, (record, member) in records.items():
            storage = record.storage
            need = storage.numel * ITEM_SIZES[storage.dtype]
            if sizes.get(member) != need:
                raise CheckpointError(
                    f"{file}: {name}'s storage {member} has {sizes.get(member)} bytes, "
                    f"{storage.numel} {storage.dtype} elements need {need}."
                )
            shape, strides = record.shape, record.strides
            if (_shape(list(shape)) is None or len(strides) != len(shape)
                    or not isinstance(record.offset, int) or record.offset < 0):
                raise CheckpointError(f"{file}: {name} has shape {shape}, strides {strides}.")
            last = record.offset + sum((d - 1) * s for d, s in zip(shape, strides))
            if element_count(shape) and (last >= storage.numel or min(strides, default=0) < 0):
                raise CheckpointError(
                    f"{file}: {name} ({list(shape)}, strides {list(strides)}, offset "
                    f"{record.offset}) reaches past its storage of {storage.numel} elements."
                )
            tensors[name] = Tensor(shape, storage.dtype, str(file))
    return tensors


def load_torch(file):
    """The arrays of a PyTorch zip-format state dict, read with numpy (no torch needed)."""
    archive, records = _torch_records(file)
    arrays = {}
    with archive:
        for name, (record, member) in records.items():
            dtype = record.storage.dtype
            try:
                raw = archive.read(member)
            except (zipfile.BadZipFile, OSError, EOFError) as error:  # e.g. a bad CRC
                raise CheckpointError(f"{file}: cannot read {member} ({error}).") from None
            if dtype == "BF16":  # the high half of a float32
                storage = (np.frombuffer(raw, "<u2").astype("<u4") << 16).view("<f4")
            else:
                storage = np.frombuffer(raw, _NUMPY[dtype])
            item = storage.itemsize
            view = np.lib.stride_tricks.as_strided(
                storage[record.offset:], record.shape, [s * item for s in record.strides])
            arrays[name] = np.array(view)
    return arrays
