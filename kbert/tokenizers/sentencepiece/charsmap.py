"""The normalisation a SentencePiece model carries (its `precompiled_charsmap`: nmt_nfkc in
ALBERT's and DeBERTa-v3's releases), character by character, for the offsets that map its
pieces back to the text (`kbert.tokenizers.offsets`, `kbert.tokenizers.sentencepiece.graph`).

The charsmap is the model's own table: a double-array trie (darts-clone) from UTF-8 strings
to their normalised forms. nmt_nfkc is NFKC, but for what it adds: control characters are
deleted, and tabs, newlines, the zero-width space and other separators become a space (which
starts a new word there, "ab\u200bcd" -> "ab cd"). Python's NFKC knows none of that; this
module reads the model's own forms of single characters (every key of one code point), and
says whether the model composes sequences (its keys of several code points: NFKC's
compositions, "e\u0301" -> "é").
"""

import functools
import struct

import numpy as np


def _varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data):
    """(field number, value) of a protobuf message: ints, or bytes for length-delimited."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = _varint(data, i)
        elif kind == 2:
            size, i = _varint(data, i)
            value, i = data[i:i + size], i + size
        elif kind in (1, 5):
            size = 8 if kind == 1 else 4
            value, i = data[i:i + size], i + size
        else:
            raise ValueError(f"Not a SentencePiece model: protobuf wire type {kind} at byte "
                             f"{i}; the model file is damaged.")
        yield number, value


def precompiled_charsmap(model):
    """The `normalizer_spec.precompiled_charsmap` (bytes; empty: no normalisation, as the
    "identity" rule) of a serialized SentencePiece ModelProto."""
    for number, value in _fields(model):
        if number == 3 and isinstance(value, bytes):  # ModelProto.normalizer_spec
            for inner, blob in _fields(value):
                if inner == 2 and isinstance(blob, bytes):  # .precompiled_charsmap
                    return blob
    return b""


def _code_point_bytes(codes):
    """UTF-8 bytes of each code point: uint8 [N, 4] (zero-padded) and lengths [N]."""
    lengths = 1 + (codes >= 0x80) + (codes >= 0x800) + (codes >= 0x10000)
    out = np.zeros((len(codes), 4), np.int64)
    out[:, 0] = np.select([lengths == 1, lengths == 2, lengths == 3],
                          [codes, 0xC0 | (codes >> 6), 0xE0 | (codes >> 12)],
                          0xF0 | (codes >> 18))
    for position in range(1, 4):  # continuation bytes: 6 bits each, last byte last
        shift = 6 * (lengths - 1 - position)
        out[:, position] = np.where(position < lengths,
                                    0x80 | ((codes >> np.maximum(shift, 0)) & 0x3F), 0)
    return out, lengths


class CharsMap:
    """A SentencePiece model's charsmap. `forms`: {character: its normalised form} of every
    character the model maps alone (the others stay themselves); `composes`: whether any key
    is a sequence of characters."""

    def __init__(self, blob):
        self.forms, self.composes = {}, False
        if not blob:
            return
        (size,) = struct.unpack("<I", blob[:4])
        units = np.frombuffer(blob[4:4 + size], "<u4").astype(np.int64)
        normalized = blob[4 + size:]
        offset = (units >> 10) << ((units & (1 << 9)) >> 6)
        label = units & ((1 << 31) | 0xFF)
        codes = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x110000)])
        data, lengths = _code_point_bytes(codes)
        node = np.full(len(codes), offset[0])
        alive = np.ones(len(codes), bool)
        leaf = np.zeros(len(codes), bool)
        for position in range(4):  # darts-clone's traversal, every code point at once
            step = alive & (position < lengths)
            child = np.where(step, node ^ data[:, position], 0)
            child = np.where(child < len(units), child, 0)
            found = step & (label[child] == data[:, position])
            alive = np.where(step, found, alive)  # (shorter code points are done)
            node = np.where(found, child ^ offset[child], node)
            # A key ends here: the unit's leaf flag; its value sits at the next node.
            leaf = np.where(found, (units[child] >> 8) & 1 == 1, leaf)
        # `alive`: the trie holds the code point's bytes (a key, or the start of a longer
        # one: a sequence such as "e\u0301").
        for code, at in zip(codes[alive & leaf], units[node[alive & leaf]] & 0x7FFFFFFF):
            end = normalized.index(b"\0", at)
            self.forms[chr(code)] = normalized[at:end].decode("utf-8")
        below = node[alive][:, None] ^ np.arange(1, 256)[None, :]
        inside = below < len(units)
        self.composes = bool(np.any(
            inside & (label[np.where(inside, below, 0)] == np.arange(1, 256)[None, :])))

    def char(self, char):
        """The normalised form of one character alone."""
        return self.forms.get(char, char)

    def chars(self, text):
        """`text` with each character mapped alone (no sequence composed)."""
        return "".join(self.forms.get(c, c) for c in text)

    def table(self):
        """(sorted int32 code points, their forms as UTF-8 bytes) for a graph lookup."""
        codes = sorted(self.forms, key=ord)
        return (np.array([ord(c) for c in codes], np.int32),
                [self.forms[c].encode("utf-8") for c in codes])


@functools.lru_cache(maxsize=8)
def _cached(blob):
    return CharsMap(blob)


def charsmap(model):
    """The `CharsMap` of a serialized SentencePiece model (cached by content)."""
    return _cached(precompiled_charsmap(model))
