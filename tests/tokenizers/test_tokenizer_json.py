"""tokenizer.json tokenizers (`kbert.tokenizers.load_tokenizer_json`) against the `tokenizers`
package itself, live: the 2,302 hostile strings of tests/fixtures/tokenizer_parity/ (real
lines, the same with control, format, private-use, unassigned characters, spaces, NUL, U+FFFD
and lone surrogates put in, special literals typed in, random strings of every Unicode
category, decomposed accents) and a few with the added tokens, on two tokenizers that
tests/fixtures/make_tokenizer_json.py trained with that package, shaped as ModernBERT's
(byte-level BPE, NFC, added runs of spaces) and mmBERT's (byte-fallback BPE, "▁" for spaces).
Ids and each token's characters, in Python (`tokenize_with_offsets`, the pipelines' path) and
in the graph (`graph_encode`, the exports' path)."""

import json
import lzma
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tokenizers import Tokenizer

import kbert.convert
import kbert.models
from kbert.tokenizers import load_tokenizer_json, tokenizer_from_json
from kbert.tokenizers.tokenizer_json import ByteFallbackTokenizer, ByteLevelJsonTokenizer
from tests.tokenizers.test_tokenizer_interface import (
    test_the_graph_decoders_are_the_python_ones as graph_decoders_are_python,
    test_the_graph_encoding_is_the_python_one as graph_encoding_is_python,
    test_tokens_with_offsets_have_the_ids_of_the_whole_text as whole_text_ids,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FOLDER = FIXTURES / "tokenizer_json"
EXTRA = ["a |||IP_ADDRESS||| b", "x  y   z\t\t w", "a [MASK] b", "  [MASK]", "[CLS]x[SEP]",
         "<b>bold</b> <start_of_turn>x<bos>", "<mask> <pad>", "", " ", "e\u0301\u0301e",
         "\u1100\u1161\u11a8 z", "a\u0301\u0323b", "\u0958x|||EMAIL_ADDRESS|||"]


@pytest.fixture(scope="module")
def texts():
    with lzma.open(FIXTURES / "tokenizer_parity" / "reference.jsonl.xz", "rt",
                   encoding="utf-8", errors="surrogatepass") as f:
        f.readline()
        rows = [json.loads(line) for line in f]
    # What kbert receives: UTF-8 bytes (a lone surrogate's are invalid, and repaired).
    data = [row["text"].encode("utf-8", "surrogatepass") for row in rows] + [
        e.encode() for e in EXTRA]
    return data, [d.decode("utf-8", "replace") for d in data]


def reference(name, split_special_tokens):
    tokenizer = Tokenizer.from_file(str(FOLDER / name / "tokenizer.json"))
    tokenizer.encode_special_tokens = split_special_tokens
    return tokenizer


def _wrong(got, expected):
    return [(i, g, e) for i, (g, e) in enumerate(zip(got, expected)) if g != e]


@pytest.mark.parametrize("name, kind", [("modern_bert", ByteLevelJsonTokenizer),
                                        ("mm_bert", ByteFallbackTokenizer)])
def test_python_ids_and_offsets_are_the_tokenizers_packages(texts, name, kind):
    """The pipelines' path, with special literals as their tokens (transformers' default)."""
    data, strings = texts
    assert len(strings) > 2300
    tokenizer = load_tokenizer_json(FOLDER / name, split_special_tokens=False)
    assert type(tokenizer) is kind
    expected = reference(name, False).encode_batch(strings, add_special_tokens=False)
    encodings = tokenizer.tokenize_with_offsets(strings)
    wrong = _wrong([(e.ids.tolist(), [tuple(o) for o in e.offsets.tolist()]) for e in encodings],
                   [(e.ids, e.offsets) for e in expected])
    assert not wrong, f"{len(wrong)} differ, e.g. {[(strings[i], g, e) for i, g, e in wrong[:2]]}"
    # Not bytes alone: merges are used; and the added tokens were found.
    assert sum(len(e.ids) for e in expected) < 0.7 * sum(len(s.encode()) for s in strings)
    assert {tokenizer.mask_id, tokenizer.cls_id} <= {i for e in expected for i in e.ids}


@pytest.mark.parametrize("name", ["modern_bert", "mm_bert"])
def test_graph_ids_and_offsets_are_the_tokenizers_packages(texts, name):
    """The exports' path and `tokenize`, with special literals split as text (kbert's
    default, the package's `encode_special_tokens`)."""
    data, strings = texts
    tokenizer = load_tokenizer_json(FOLDER / name)
    expected = reference(name, True).encode_batch(strings, add_special_tokens=False)
    encoded = tokenizer.graph_encode(tf.constant(data), {})
    got = [(i, list(zip(s, e))) for i, s, e in zip(encoded["ids"].to_list(),
                                                   encoded["starts"].to_list(),
                                                   encoded["ends"].to_list())]
    wrong = _wrong(got, [(e.ids, e.offsets) for e in expected])
    assert not wrong, f"{len(wrong)} differ, e.g. {[(strings[i], g, e) for i, g, e in wrong[:2]]}"
    literals = [i for i, s in enumerate(strings) if "[SEP]" in s or "<pad>" in s]
    ids = tokenizer.tokenize(tf.constant([data[i] for i in literals])).to_list()
    assert ids == [expected[i].ids for i in literals] and len(literals) > 20


@pytest.mark.parametrize("name", ["modern_bert", "mm_bert", "roberta"])
def test_a_lone_surrogate_is_read_as_the_graph_reads_it(name):
    """A Python string may hold a lone surrogate (`json.loads('"\\ud800"')`): its UTF-8
    bytes are invalid, and the graph reads them as three U+FFFD. The pipelines' path gives
    the ids of those, in the graph's order, each token's characters mapped back onto the
    surrogate's one character (ModernBERT's raised an IndexError; RoBERTa's byte-level BPE
    put every later token two characters a surrogate too far)."""
    tokenizer = kbert.convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "roberta_token")) \
        if name == "roberta" else load_tokenizer_json(FOLDER / name, split_special_tokens=False)
    texts = ["new\ud800york \ud800 city", "\ud800", "a \udfff\ud800b [MASK]\ud800"]
    read = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in texts]
    graph = tokenizer.tokenize(tf.constant([t.encode("utf-8", "surrogatepass")
                                            for t in texts])).to_list()
    for text, seen, ids, got, expected in zip(texts, read, graph,
                                              tokenizer.tokenize_with_offsets(texts),
                                              tokenizer.tokenize_with_offsets(read)):
        assert got.ids.tolist() == expected.ids.tolist() == ids, ascii(text)
        # The character of `text` that each character of `seen` comes from.
        origin = [i for i, c in enumerate(text)
                  for _ in range(3 if "\ud800" <= c <= "\udfff" else 1)]
        assert len(origin) == len(seen)
        back = [(origin[a], origin[b - 1] + 1) if b > a else
                ((origin[a] if a < len(origin) else len(text)),) * 2
                for a, b in expected.offsets.tolist()]
        assert [tuple(o) for o in got.offsets.tolist()] == back, ascii(text)


def test_a_prepended_mark_and_normalised_added_tokens(texts):
    """Llama's normaliser (Prepend("▁") before Replace) prepends to the text between added
    tokens; an added token matched in the normalised text is matched as normalised."""
    data, strings = texts
    value = json.loads((FOLDER / "mm_bert" / "tokenizer.json").read_text("utf-8"))
    value["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"}, value["normalizer"]]}
    added = 1 + max(*value["model"]["vocab"].values(),
                    *(a["id"] for a in value["added_tokens"]))
    value["added_tokens"].append({"id": added, "content": "ab c", "single_word": False,
                                  "lstrip": False, "rstrip": True, "normalized": True,
                                  "special": False})
    text = json.dumps(value)
    theirs = Tokenizer.from_str(text)
    ours = tokenizer_from_json(text, split_special_tokens=False)
    sample = strings[::8] + ["x ab c  y<mask> ab c", "ab c", " ab c<b> ab c"]
    expected = theirs.encode_batch(sample, add_special_tokens=False)
    assert any(added in e.ids for e in expected)
    got = ours.tokenize_with_offsets(sample)
    assert not _wrong([(e.ids.tolist(), [tuple(o) for o in e.offsets.tolist()]) for e in got],
                      [(e.ids, e.offsets) for e in expected])
    encoded = ours.graph_encode(tf.constant([s.encode() for s in sample]), {})
    assert encoded["ids"].to_list() == [e.ids for e in expected]
    assert encoded["starts"].to_list() == [[a for a, _ in e.offsets] for e in expected]


@pytest.mark.parametrize("name", ["modern_bert", "mm_bert"])
def test_what_every_kbert_tokenizer_answers(name):
    """`tests/tokenizers/test_tokenizer_interface.py`'s checks (the graph encoding and
    decoders are the Python ones, a typed [MASK] as its token), the same words in both paths,
    the template's pair layout and the decoder of the `tokenizers` package."""
    tokenizer = load_tokenizer_json(FOLDER / name)
    graph_encoding_is_python(tokenizer)
    graph_decoders_are_python(tokenizer)
    whole_text_ids(tokenizer)
    mask = tokenizer.vocabulary[tokenizer.mask_id]
    texts = [f"the {mask} is  big{mask}.", "Hello, World! Café déjà-vu.", "東京 is  big"]
    specials = {mask: tokenizer.mask_id}
    python = tokenizer.tokenize_with_offsets(texts, specials)
    graph = tokenizer.graph_encode(tf.constant([t.encode() for t in texts]), specials)
    for row, encoding in enumerate(python):
        words = graph["words"][row].numpy()
        assert np.array_equal(np.unique(words[words >= 0], return_inverse=True)[1],
                              encoding.words[encoding.words >= 0]), texts[row]
    assert python[0].ids.tolist().count(tokenizer.mask_id) == 2
    theirs = reference(name, False)
    expected = theirs.encode(texts[0], texts[1])
    token_ids, segment_ids = tokenizer.pair_layout(python[0].ids, python[1].ids)
    assert token_ids.tolist() == expected.ids and segment_ids.tolist() == expected.type_ids
    ids = python[1].ids.tolist() + python[2].ids.tolist()
    assert tokenizer.decode(ids) == theirs.decode(ids, skip_special_tokens=False)


def test_tokenize_in_a_tf_function_and_any_rank():
    tokenizer = load_tokenizer_json(FOLDER / "mm_bert", split_special_tokens=False)
    texts = ["the people 😀", "  ", "a <mask> b"]
    expected = tokenizer.tokenize(texts).to_list()
    traced = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    assert traced(tf.constant(texts)).to_list() == expected
    assert tokenizer.tokenize([texts[:1], texts[1:2]]).to_list() == [expected[:1],
                                                                     expected[1:2]]
    assert tokenizer.tokenize(tf.constant(texts[0])).numpy().tolist() == expected[0]


def test_a_checkpoint_folder_gives_its_tokenizer_and_writes_it_back(tmp_path):
    """A ModernBERT checkpoint written with its tokenizer.json reads back with it
    (`kbert.convert.load_tokenizer`), and the tokenizer files round-trip."""
    tokenizer = load_tokenizer_json(FOLDER / "modern_bert")
    backbone = kbert.models.build("modern_bert", kbert.models.ModernBertConfig(
        vocabulary_size=tokenizer.vocabulary_size, hidden_size=16, intermediate_size=16,
        num_layers=1, num_heads=2, max_sequence_length=32), head=None)
    kbert.convert.save_hugging_face(backbone, tmp_path / "hf", vocabulary=tokenizer)
    again = kbert.convert.load_tokenizer(str(tmp_path / "hf"))
    assert type(again) is ByteLevelJsonTokenizer and again.identity() == tokenizer.identity()
    assert (again.cls_id, again.sep_id, again.pad_id, again.mask_id) == (
        tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id)
    tokenizer.write_files(str(tmp_path / "files"))
    assert load_tokenizer_json(tmp_path / "files").identity() == tokenizer.identity()


def test_a_tokenizer_too_large_for_the_model_is_refused(tmp_path):
    import shutil

    folder = tmp_path / "modern_bert"
    shutil.copytree(FIXTURES / "hf_tiny" / "modern_bert", folder)
    shutil.copy(FOLDER / "modern_bert" / "tokenizer.json", folder)
    with pytest.raises(kbert.convert.CheckpointError, match="1231 tokens.*60 rows"):
        kbert.convert.read(folder)


def test_a_checkpoint_whose_tokenizer_json_kbert_does_not_read_loads_without_it(tmp_path):
    """The weights load; asking for the tokenizer says what was found and what is read."""
    import shutil

    folder = tmp_path / "modern_bert"
    shutil.copytree(FIXTURES / "hf_tiny" / "modern_bert", folder)
    (folder / "tokenizer.json").write_text(_edited("modern_bert", model={"type": "WordPiece"}))
    checkpoint = kbert.convert.read(folder)
    with pytest.raises(ValueError, match="model is 'WordPiece'; kbert reads BPE"):
        checkpoint.tokenizer()


def _edited(name, **parts):
    value = json.loads((FOLDER / name / "tokenizer.json").read_text("utf-8"))
    for key, part in parts.items():
        if key == "model":
            value["model"].update(part)
        else:
            value[key] = part
    return json.dumps(value)


@pytest.mark.parametrize("name, parts, message", [
    ("modern_bert", {"model": {"type": "WordPiece"}}, r"model is 'WordPiece'; kbert reads BPE"),
    ("modern_bert", {"normalizer": {"type": "Lowercase"}}, r"normalizer is .*Lowercase.*NFC"),
    ("modern_bert", {"pre_tokenizer": {"type": "Whitespace"}},
     r"pre-tokenizer is .*Whitespace.*ByteLevel"),
    ("modern_bert", {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True}},
     r"add_prefix_space=false"),
    ("modern_bert", {"post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2],
                                        "cls": ["[CLS]", 1]}},
     r"post-processor is .*BertProcessing.*TemplateProcessing"),
    ("modern_bert", {"model": {"dropout": 0.1}}, r"dropout is 0.1"),
    ("mm_bert", {"normalizer": {"type": "NFKC"}}, r"normalizer is .*NFKC.*Replace"),
    ("mm_bert", {"model": {"byte_fallback": False}}, r"none with byte_fallback=true"),
])
def test_unsupported_parts_are_named(name, parts, message):
    with pytest.raises(ValueError, match=message):
        tokenizer_from_json(_edited(name, **parts))


def test_missing_byte_tokens_and_single_word_are_named():
    value = json.loads((FOLDER / "mm_bert" / "tokenizer.json").read_text("utf-8"))
    value["model"]["vocab"]["zz<0x41>"] = value["model"]["vocab"].pop("<0x41>")
    with pytest.raises(ValueError, match=r"without the byte tokens \['<0x41>'\]"):
        tokenizer_from_json(json.dumps(value))
    value = json.loads((FOLDER / "mm_bert" / "tokenizer.json").read_text("utf-8"))
    value["added_tokens"][-1]["single_word"] = True
    with pytest.raises(ValueError, match="single_word=true"):
        tokenizer_from_json(json.dumps(value))


def test_a_saved_model_folder_gives_the_tokenizer_json_written_beside_it(tmp_path):
    """What `kbert.load` reads beside a SavedModel that an export wrote with this tokenizer."""
    from kbert.loading.sources import SavedModelSource

    tokenizer = load_tokenizer_json(FOLDER / "mm_bert")
    tokenizer.write_files(str(tmp_path))
    again = SavedModelSource(tmp_path).tokenizer()
    assert type(again) is ByteFallbackTokenizer and again.identity() == tokenizer.identity()


def test_a_tokenizer_json_is_written_back_with_the_class_it_loads_into(tmp_path):
    """A family's tokenizer class names its vocab.txt kind (ModernBERT's says BertTokenizer
    for a WordPiece vocabulary); a tokenizer.json keeps the class it came with, or the fast
    tokenizer any tokenizer.json loads into, never a WordPiece class."""
    import types

    from kbert.convert import _directory

    text = (FOLDER / "mm_bert" / "tokenizer.json").read_text("utf-8")
    for settings, expected in (({"tokenizer_class": "GemmaTokenizerFast"}, "GemmaTokenizerFast"),
                               ({}, "PreTrainedTokenizerFast")):
        folder = tmp_path / expected
        folder.mkdir()
        checkpoint = types.SimpleNamespace(tokenizer_json=(text, settings))
        _directory.write_tokenizer_files(folder, checkpoint, tokenizer_class="BertTokenizer",
                                         model_max_length=512)
        written = json.loads((folder / "tokenizer_config.json").read_text("utf-8"))
        assert written["tokenizer_class"] == expected
        assert written["model_max_length"] == 512
        assert (folder / "tokenizer.json").read_text("utf-8") == text
