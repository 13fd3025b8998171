"""Hugging Face's tokenizer.json (the `tokenizers` package's format), as ModernBERT and mmBERT
ship their tokenizers, read into a kbert tokenizer (`load_tokenizer_json`).

Two shapes of it are read, each checked part by part (a part of another type is a ValueError
that names what was found and what is read):

- byte-level BPE (ModernBERT's, OLMo's / GPT-NeoX's): normalizer NFC or none, pre-tokenizer
  `ByteLevel` (GPT-2's split, no prefix space), a `BPE` model without byte fallback;
- byte-fallback BPE (mmBERT's, Gemma's): normalizer `Replace(" ", "▁")`, after a
  `Prepend("▁")` or not, no pre-tokenizer (the text is one word), a `BPE` model with
  `byte_fallback` and its 256 <0xNN> tokens;
both with the added tokens (special or not, matched in the raw or the normalised text, with
`lstrip` / `rstrip`) and a `TemplateProcessing` post-processor ([CLS] $A [SEP] and [CLS] $A
[SEP] $B [SEP], any literals), optionally after a `ByteLevel` one that trims the offsets.
"""

import dataclasses
import json
import os

import tensorflow as tf

from kbert.tokenizers.packing import PairLayout

TOKENIZER_FILE = "tokenizer.json"
SETTINGS_FILE = "tokenizer_config.json"
# Conventional literals of the specials a tokenizer_config.json does not name.
_CONVENTIONS = {"pad": ("[PAD]", "<pad>", "<|padding|>"), "mask": ("[MASK]", "<mask>"),
                "unk": ("[UNK]", "<unk>")}
_NO = (None, "", 0, 0.0, False)


@dataclasses.dataclass
class TokenizerJson:
    """What kbert reads of a tokenizer.json.

    Attributes:
        kind: "byte_level" or "byte_fallback".
        vocabulary: every token, the added ones too (index = id).
        merges: the BPE merges, (left, right) pairs in rank order.
        added: the added tokens, dicts with content, id, special, normalized, lstrip, rstrip.
        normalizer: "nfc", "metaspace", or None (none).
        prepend: a byte-fallback normaliser's `Prepend("▁")`.
        trim_offsets: a `ByteLevel` post-processor trims the offsets' spaces.
        specials: {cls, sep, pad, mask, unk: literal}.
        layout: the pair template's layout (a `kbert.tokenizers.packing.PairLayout`).
        model_tokens: the tokens of the BPE model's own vocabulary (its symbols).
        text: the file's text, written back as it was.
    """

    kind: str
    vocabulary: list
    merges: list
    added: list
    normalizer: object
    prepend: bool
    trim_offsets: bool
    specials: dict
    layout: PairLayout
    model_tokens: frozenset
    text: str


def _fail(source, part, found, supported):
    raise ValueError(f"{source}: the {part} is {found}; kbert reads {supported}.")


def _type(part):
    return part.get("type") if isinstance(part, dict) else part


def _normalizer(value, kind, source):
    """(normalizer, prepend) of the normalizer object."""
    parts = value.get("normalizers") if _type(value) == "Sequence" else [value]
    parts = [p for p in (parts or []) if p is not None]
    if kind == "byte_level":
        if all(_type(p) == "NFC" for p in parts) and len(parts) <= 1:
            return ("nfc" if parts else None), False
        _fail(source, "normalizer", json.dumps(value)[:200], "NFC or none for a byte-level "
              "BPE (ModernBERT's)")
    prepend = bool(parts) and _type(parts[0]) == "Prepend" and parts[0].get("prepend") == "▁"
    rest = parts[1:] if prepend else parts
    if (len(rest) == 1 and _type(rest[0]) == "Replace"
            and rest[0].get("pattern") == {"String": " "} and rest[0].get("content") == "▁"):
        return "metaspace", prepend
    _fail(source, "normalizer", json.dumps(value)[:200], "Replace(' ', '▁'), after a "
          "Prepend('▁') or not, for a byte-fallback BPE (mmBERT's, Gemma's)")


def _kind(model, pre_tokenizer, source):
    if _type(model) != "BPE":
        _fail(source, "model", repr(_type(model)), "BPE (byte-level or with byte_fallback)")
    for field in ("dropout", "continuing_subword_prefix", "end_of_word_suffix",
                  "ignore_merges"):
        if model.get(field) not in _NO:
            _fail(source, f"model's {field}", repr(model.get(field)), f"a BPE without {field}")
    if _type(pre_tokenizer) == "ByteLevel":
        if pre_tokenizer.get("add_prefix_space") or not pre_tokenizer.get("use_regex", True):
            _fail(source, "ByteLevel pre-tokenizer", json.dumps(pre_tokenizer),
                  "ByteLevel with add_prefix_space=false and use_regex=true")
        if model.get("byte_fallback"):
            _fail(source, "model's byte_fallback", "true with a ByteLevel pre-tokenizer",
                  "a byte-level BPE without byte fallback")
        return "byte_level"
    if pre_tokenizer is None and model.get("byte_fallback"):
        return "byte_fallback"
    _fail(source, "pre-tokenizer", json.dumps(pre_tokenizer)[:200] + " with byte_fallback="
          + json.dumps(bool(model.get("byte_fallback"))), "ByteLevel (a byte-level BPE) or "
          "none with byte_fallback=true (a byte-fallback BPE)")


def _template(value, source):
    """(trim_offsets, cls, sep, the pair's `PairLayout`)."""
    parts = value.get("processors") if _type(value) == "Sequence" else [value]
    parts = [p for p in (parts or []) if p is not None]
    trim = False
    if parts and _type(parts[0]) == "ByteLevel":
        trim = bool(parts[0].get("trim_offsets", True))
        parts = parts[1:]
    supported = ("TemplateProcessing [CLS] $A [SEP] / [CLS] $A [SEP] $B [SEP] (any literals, "
                 "one or more separators between the texts), after a ByteLevel one or not")
    if len(parts) != 1 or _type(parts[0]) != "TemplateProcessing":
        _fail(source, "post-processor", json.dumps(value)[:200], supported)

    def item(piece):
        (key, body), = piece.items()
        return (body["id"] if key == "SpecialToken" else "$" + body["id"]), body["type_id"]

    try:
        single = [item(p) for p in parts[0]["single"]]
        pair = [item(p) for p in parts[0]["pair"]]
    except (KeyError, TypeError, ValueError, AttributeError):
        _fail(source, "post-processor", json.dumps(value)[:200], supported)
    if len(single) != 3 or len(pair) < 5:
        _fail(source, "post-processor", json.dumps(value)[:200], supported)
    cls, sep = single[0][0], single[-1][0]
    separators = len(pair) - 4
    if (len(single) != 3 or single[1][0] != "$A" or any(t for _, t in single)
            or separators < 1 or pair[:2] != [(cls, 0), ("$A", 0)]
            or [p[0] for p in pair[2:2 + separators]] != [sep] * separators
            or pair[-2][0] != "$B" or pair[-1] != (sep, pair[-2][1])
            or any(t for _, t in pair[2:2 + separators]) or cls.startswith("$")):
        _fail(source, "post-processor", json.dumps(value)[:200], supported)
    return trim, cls, sep, PairLayout(separators, pair[-2][1])


def _vocabulary(model, added, source):
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        _fail(source, "model's vocab", type(vocab).__name__, "an object {token: id}")
    by_id = {}
    for source_tokens in (list(vocab.items()), [(a.get("content"), a.get("id")) for a in added]):
        seen = {}
        for token, i in source_tokens:  # an added token takes its id over (as `tokenizers`)
            if not isinstance(token, str) or not isinstance(i, int):
                raise ValueError(f"{source}: vocabulary entry {token!r}: {i!r}: expected a "
                                 "string token and an integer id.")
            if i in seen:
                raise ValueError(f"{source}: token {token!r} has the id {i!r}, which "
                                 f"{seen.get(i)!r} has too; expected one token per id.")
            seen[i] = by_id[i] = token
    if sorted(by_id) != list(range(len(by_id))):
        raise ValueError(f"{source}: the ids of the vocabulary and added tokens are not "
                         f"0..{len(by_id) - 1} without gaps.")
    tokens = [by_id[i] for i in range(len(by_id))]
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{source}: the vocabulary repeats tokens.")
    return tokens


def _merges(model, source):
    from kbert.tokenizers.bpe.tokenizer import merge_pairs

    return merge_pairs([m if isinstance(m, str) else tuple(m) for m in model.get("merges", [])],
                       f"{source} (model.merges)")


def _specials(settings, cls, sep, model, added, vocabulary, source):
    specials = {"cls": cls, "sep": sep}
    named = {a["content"] for a in added if a.get("special")}
    for key in ("pad", "mask", "unk"):
        value = settings.get(f"{key}_token")
        value = value.get("content") if isinstance(value, dict) else value
        if value is None and key == "unk":
            value = model.get("unk_token")
        if value is None:
            value = next((t for t in _CONVENTIONS[key] if t in named), None)
        if value is None or value not in vocabulary:
            raise ValueError(f"{source}: no {key} token ({value!r}); expected "
                             f"tokenizer_config.json's {key}_token or one of "
                             f"{list(_CONVENTIONS[key])} among the special added tokens.")
        specials[key] = value
    return specials


def parse(text, settings=None, source=TOKENIZER_FILE):
    """A tokenizer.json's text (and its tokenizer_config.json's fields) -> `TokenizerJson`."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{source} is not JSON ({error}).") from None
    if not isinstance(value, dict) or not isinstance(value.get("model"), dict):
        raise ValueError(f"{source} has no model object: not a tokenizer.json.")
    model = value["model"]
    kind = _kind(model, value.get("pre_tokenizer"), source)
    normalizer, prepend = _normalizer(value.get("normalizer"), kind, source)
    added = []
    for token in value.get("added_tokens") or []:
        if token.get("single_word"):
            _fail(source, f"added token {token.get('content')!r}", "single_word=true",
                  "added tokens without single_word")
        added.append({k: token.get(k, False) for k in ("content", "id", "special",
                                                          "normalized", "lstrip", "rstrip")})
    vocabulary = _vocabulary(model, added, source)
    if kind == "byte_fallback":
        missing = [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in vocabulary]
        if missing:
            raise ValueError(f"{source}: a byte-fallback BPE without the byte tokens "
                             f"{missing[:4]}{' ...' if len(missing) > 4 else ''}; kbert "
                             "reads one with all 256 <0xNN> tokens.")
    trim, cls, sep, layout = _template(value.get("post_processor"), source)
    specials = _specials(settings or {}, cls, sep, model, added, vocabulary, source)
    return TokenizerJson(kind, vocabulary, _merges(model, source), added, normalizer, prepend,
                         trim, specials, layout, frozenset(model["vocab"]), text)


def load_tokenizer_json(path, split_special_tokens=True, pair_layout=None):
    """The kbert tokenizer of a tokenizer.json: `path` is the file or a folder holding it
    (a ModernBERT or mmBERT checkpoint folder), whose tokenizer_config.json, if any, names the
    pad, mask and unknown tokens.

    split_special_tokens: as every kbert tokenizer's: True, a special token's literal typed
        in the text is split as text (the `tokenizers` package's `encode_special_tokens`);
        False, it is its token. Added tokens that are not special are always their tokens.
    pair_layout: how a pair is packed (`kbert.tokenizers.packing.PairLayout`, a pair or a
        name); None: the tokenizer_config.json's `pair_layout` (kbert writes one where it
        is not the kind's), else the file's post-processor template's.
    """
    path = os.fspath(path)
    folder, file = (path, os.path.join(path, TOKENIZER_FILE)) if tf.io.gfile.isdir(path) \
        else (os.path.dirname(path), path)
    if not tf.io.gfile.exists(file):
        raise FileNotFoundError(f"{path} has no {TOKENIZER_FILE}.")
    with tf.io.gfile.GFile(file, "r") as f:
        text = f.read()
    settings = {}
    if tf.io.gfile.exists(os.path.join(folder, SETTINGS_FILE)):
        with tf.io.gfile.GFile(os.path.join(folder, SETTINGS_FILE), "r") as f:
            settings = json.load(f)
    return tokenizer_from_json(text, settings, split_special_tokens, file, pair_layout)


def tokenizer_from_json(text, settings=None, split_special_tokens=True,
                        source=TOKENIZER_FILE, pair_layout=None):
    """`load_tokenizer_json` of a tokenizer.json's text and its tokenizer_config.json's
    fields (a dict; the pad, mask and unknown tokens' names are read from it, and
    `pair_layout` where `pair_layout` is None)."""
    from kbert.tokenizers.tokenizer_json.tokenizer import tokenizer_of

    if pair_layout is None:
        pair_layout = (settings or {}).get("pair_layout")
    return tokenizer_of(parse(text, settings, source), split_special_tokens, pair_layout)
