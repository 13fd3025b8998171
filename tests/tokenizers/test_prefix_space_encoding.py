"""A byte-level BPE with `add_prefix_space` (kbert's RoBERTa runs put a space before each text)
in the pipelines' encoder: the ids equal the tokenizer's own in the graph (a space before each
piece of text between special literals, as the tokenizers library's
ByteLevel(add_prefix_space=True)), and the offsets point into the text as given."""

from pathlib import Path

import tensorflow as tf

from kbert.tokenizers import tokenizer_types
from kbert.tokenizers.encoding import Encoder

ROBERTA = Path(__file__).resolve().parents[1] / "fixtures" / "hf_tiny" / "roberta"
TEXTS = ["Return the value.", "the <mask> of it", "<mask>of", "", " leading space",
         "a</s>b c", "héllo wörld, again", "Return the\n<mask>"]


def test_the_encoder_gives_the_graphs_ids_and_offsets_in_the_text():
    tokenizer = tokenizer_types.load(str(ROBERTA / "vocab.json"), lowercase=False)
    assert tokenizer.add_prefix_space
    specials = {token: tokenizer.token_to_id(token) for token in tokenizer.special_tokens}
    encodings = Encoder(tokenizer).encode(TEXTS, specials)
    graph = tokenizer.tokenize_keeping_special_tokens(tf.constant(TEXTS)).to_list()
    assert [e.ids.tolist() for e in encodings] == graph
    assert Encoder(tokenizer).ids(TEXTS, specials)[0].tolist() == graph[0]
    for text, encoding in zip(TEXTS, encodings):
        for token_id, (start, end) in zip(encoding.ids, encoding.offsets):
            token = tokenizer.vocabulary[token_id]
            assert 0 <= start <= end <= len(text), (text, token, start, end)
            if token in specials:
                assert text[start:end].lstrip() == token  # "<mask>" with the space it took
            elif token.isascii() and token.strip("\u0120"):
                assert text[start:end] == token.strip("\u0120"), (text, token, start, end)
    # The tiny vocabulary's "Ġ" alone is the added space: an empty span before "R".
    assert [tokenizer.vocabulary[i] for i in graph[0][:2]] == ["\u0120", "R"]
    assert encodings[0].offsets[:2].tolist() == [[0, 0], [0, 1]]


def test_alignment_of_words_gives_the_tokenizers_ids():
    """`align_texts` (NER labels, SQuAD answers) tokenizes the text's pieces as the tokenizer
    does the whole text: a space before the first word only, none before "." or "," (each
    piece once tokenized with a space of its own gave "Ġ." where the text has ".")."""
    tokenizer = tokenizer_types.load(str(ROBERTA / "vocab.json"), lowercase=False)
    texts = ["Return the value.", "héllo wörld, again", " leading space", "", "a,b.c"]
    alignments = tokenizer.align_texts(texts)
    assert [a.piece_ids.tolist() for a in alignments] == tokenizer.tokenize(texts).to_list()
    first = alignments[0]
    assert [(w.text, w.start, w.end) for w in first.words][:2] == [("Return", 0, 6),
                                                                   ("the", 7, 10)]
    assert all(0 <= s <= e <= len(first.text) for s, e in first.piece_spans.tolist())
