"""What every kind of kbert tokenizer answers for itself (`kbert.tokenizers.base`): its
files, its name, its words with their characters, its decoders in Python and in the graph.
On the three checkpoints' tokenizers of the pipeline fixtures: WordPiece (BERT), SentencePiece
(ALBERT) and byte-level BPE (RoBERTa)."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from kbert import convert
from kbert.tokenizers import load_tokenizer_json, tokenizer_types

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hf_tasks"
JSON_FIXTURES = FIXTURES.parent / "tokenizer_json"  # ModernBERT's and mmBERT's kinds
TEXTS = ["Hello, World! Café déjà-vu.", "  two  spaces\tand a tab ", "東京 is big; ok?", "",
         "naïve résumé 1,000 don't"]


@pytest.fixture(scope="module", params=["bert_token", "albert_token", "roberta_token"])
def tokenizer(request):
    return convert.load_tokenizer(str(FIXTURES / request.param))


def test_the_files_it_writes_read_back_as_the_same_vocabulary(tokenizer, tmp_path):
    kind = tokenizer_types.get(tokenizer.tokenizer_type)
    tokenizer.write_files(str(tmp_path))
    path = tmp_path / kind.file_name
    assert all(Path(p).is_file() for p in tokenizer_types.files(path, kind.name))
    again = tokenizer_types.load(path, kind.name, lowercase=tokenizer.lowercase)
    assert type(again) is type(tokenizer)
    assert again.identity() == tokenizer.identity()
    assert kind.pair_layout == tokenizer.layout


def test_tokens_with_offsets_have_the_ids_of_the_whole_text(tokenizer):
    encodings = tokenizer.tokenize_with_offsets(TEXTS)
    whole = tokenizer.tokenize(tf.constant([t.encode() for t in TEXTS]))
    for text, encoding, ids in zip(TEXTS, encodings, whole.to_list()):
        assert encoding.ids.tolist() == ids, text
        starts, ends = encoding.offsets[:, 0], encoding.offsets[:, 1]
        assert np.all((0 <= starts) & (starts <= ends) & (ends <= len(text))), text
        assert np.all(np.diff(starts) >= 0), text


def test_the_graph_decoders_are_the_python_ones(tokenizer):
    ids = [e.ids.tolist() for e in tokenizer.tokenize_with_offsets(TEXTS)]
    ids.append([tokenizer.cls_id] + ids[0] + [tokenizer.sep_id])
    graph = tokenizer.graph_decode(tf.ragged.constant(ids, tf.int32))
    assert [g.decode() for g in graph.numpy()] == [tokenizer.decode(i) for i in ids]
    tokens = [[tokenizer.vocabulary[i] for i in row] for row in ids]
    graph = tokenizer.graph_tokens_to_string(tf.ragged.constant(tokens, tf.string))
    assert [g.decode() for g in graph.numpy()] == [tokenizer.tokens_to_string(t)
                                                   for t in tokens]
    # [CLS] / [SEP] (and [UNK]: a special id too) are left out when asked.
    assert tokenizer.decode(ids[-1], skip_special_tokens=True) == tokenizer.decode(
        [i for i in ids[0] if i not in tokenizer.special_ids])


def test_a_tokenizer_without_a_twin_says_why():
    bpe = convert.load_tokenizer(str(FIXTURES / "roberta_token"))
    with pytest.raises(ValueError, match="BytePairTokenizer .* cannot go inside a TFLite"):
        bpe.tflite_tokenizer()
    assert not bpe.tflite_offsets and not bpe.bert_words
    bert = convert.load_tokenizer(str(FIXTURES / "bert_token"))
    assert bert.tflite_offsets and bert.bert_words and bert.continuation_prefix == "##"


def test_the_graph_encoding_is_the_python_one(tokenizer):
    """`graph_encode` (every kind has one) gives `tokenize_with_offsets`' ids and characters,
    a special literal typed in a text as its token."""
    mask = tokenizer.vocabulary[tokenizer.mask_id]
    texts = TEXTS + [f"the {mask} is  big{mask}."]
    specials = {mask: tokenizer.mask_id}
    python = tokenizer.tokenize_with_offsets(texts, specials)
    graph = tokenizer.graph_encode(tf.constant([t.encode() for t in texts]), specials)
    for row, (text, encoding) in enumerate(zip(texts, python)):
        assert graph["ids"][row].numpy().tolist() == encoding.ids.tolist(), text
        assert graph["starts"][row].numpy().tolist() == encoding.offsets[:, 0].tolist(), text
        assert graph["ends"][row].numpy().tolist() == encoding.offsets[:, 1].tolist(), text
        assert graph["literal"][row].numpy().tolist() == (encoding.words < 0).tolist(), text


@pytest.mark.parametrize("name, encodes_added_tokens", [
    ("bert_token", False), ("albert_token", False), ("roberta_token", False),
    ("modern_bert", True), ("mm_bert", True)])
def test_split_special_tokens_may_be_assigned_after_construction(name, encodes_added_tokens):
    """Every kind (the tokenizer.json ones too) reads `split_special_tokens` when it
    tokenizes, not only when it is built: built with the default, a mask literal typed in
    the text is split as text; assigned False, it is the mask's token, in `tokenize` eagerly
    and traced; assigned True again, text again. A tokenizer.json's added tokens follow it in
    its encodings too (`tokenize_with_offsets`, `graph_encode` without specials), as the
    `tokenizers` package's `encode_special_tokens`; the other kinds' are told by `specials`."""
    if (JSON_FIXTURES / name).is_dir():
        tokenizer = load_tokenizer_json(JSON_FIXTURES / name)
    else:
        tokenizer = convert.load_tokenizer(str(FIXTURES / name))
    mask = tokenizer.vocabulary[tokenizer.mask_id]
    texts = [f"the {mask} is big", mask]
    data = tf.constant([t.encode() for t in texts])

    def ids_by_path():
        traced = tf.function(tokenizer.tokenize,
                             input_signature=[tf.TensorSpec([None], tf.string)])
        ids = {"eager": tokenizer.tokenize(data).to_list(), "traced": traced(data).to_list()}
        if encodes_added_tokens:
            ids["python"] = [e.ids.tolist() for e in tokenizer.tokenize_with_offsets(texts)]
            ids["graph"] = tokenizer.graph_encode(data, {})["ids"].to_list()
        return ids

    def masks(ids):
        return [row.count(tokenizer.mask_id) for row in ids]

    assert tokenizer.split_special_tokens
    for path, ids in ids_by_path().items():
        assert masks(ids) == [0, 0], (path, ids)
    tokenizer.split_special_tokens = False
    for path, ids in ids_by_path().items():
        assert masks(ids) == [1, 1] and ids[1] == [tokenizer.mask_id], (path, ids)
    tokenizer.split_special_tokens = True
    for path, ids in ids_by_path().items():
        assert masks(ids) == [0, 0], (path, ids)
