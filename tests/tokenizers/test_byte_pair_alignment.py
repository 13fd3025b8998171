"""A byte-level BPE (RoBERTa) tokenizer's fine-tuning data is tokenized as RoBERTa tokenizes
(" word" -> "Ġword") and as the pipelines' encoder feeds it at inference, with each token's
characters as the pipeline's offsets."""

import numpy as np
import pytest

from kbert.convert import load_tokenizer
from kbert.tasks.question_answering.data import QuestionExample
from kbert.tasks.question_answering.features import encode_questions
from kbert.tokenizers.alignment import align_texts, align_words
from kbert.tasks.token_classification.data import TaggingExample, encode_tagging
from kbert.tokenizers.encoding import Encoder

ROBERTA = "tests/fixtures/hf_tasks/roberta_token"
TEXTS = ["Hello world, don't stop!", "Café résumé naïve Zürich", "東京 is in 日本 😀 ok",
         "two  spaces\tand\nlines 123abc", "  leading space", "émoji😀🎉x"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(ROBERTA)


def test_texts_tokenized_as_the_pipeline_encodes_them(tokenizer):
    encodings = Encoder(tokenizer).encode(TEXTS)
    for text, alignment, encoding in zip(TEXTS, align_texts(TEXTS, tokenizer), encodings):
        assert alignment.piece_ids.tolist() == encoding.ids.tolist(), text
        np.testing.assert_array_equal(alignment.piece_spans, encoding.offsets, err_msg=text)
        assert all(w.text == text[w.start : w.end] and w.text.strip() == w.text
                   for w in alignment.words)
    vocabulary = tokenizer.vocabulary
    (alignment,) = align_texts(["Hello world"], tokenizer)
    assert [vocabulary[i] for i in alignment.piece_ids][-1].startswith("\u0120")  # "Ġworld"
    assert [w.text for w in alignment.words] == ["Hello", "world"]


def test_non_ascii_pieces_cover_their_characters(tokenizer):
    text = "x 😀é東 Ünï"
    (alignment,) = align_texts([text], tokenizer)
    token_bytes = type(tokenizer)._token_bytes(tokenizer.vocabulary)
    owner = [k for k, char in enumerate(text) for _ in char.encode("utf-8")]
    position = 0
    for piece, span in zip(alignment.piece_ids, alignment.piece_spans):
        data = token_bytes[piece]
        skip = len(data) - len(data.lstrip(b" "))  # "Ġ" covers no character
        chars = owner[position + skip : position + len(data)]
        if chars:
            assert span.tolist() == [chars[0], chars[-1] + 1], (tokenizer.vocabulary[piece], span)
        else:  # a "Ġ" alone: an empty span (the pipeline's offsets)
            assert span[0] == span[1]
        position += len(data)
    assert position == len(owner)
    assert len(alignment.piece_ids) > len(text.split())  # multi-byte characters split


def test_conll_words_each_get_a_space(tokenizer):
    words = ["Zürich", "is", "in", "東京", "😀", "U.S."]
    (alignment,) = align_words([words], tokenizer)
    vocabulary = tokenizer.vocabulary
    firsts = [int(i) for k, i in enumerate(alignment.piece_ids)
              if k == 0 or alignment.piece_words[k] != alignment.piece_words[k - 1]]
    assert len(firsts) == len(words)
    assert all(vocabulary[i].startswith("\u0120") for i in firsts)
    expected = Encoder(tokenizer).encode([" " + " ".join(words)])[0]
    assert alignment.piece_ids.tolist() == expected.ids.tolist()
    np.testing.assert_array_equal(alignment.piece_spans, expected.offsets - 1)
    for k, word in enumerate(alignment.words):
        assert word.text == words[k]
        spans = alignment.piece_spans[alignment.piece_words == k]
        assert (spans[0, 0], spans[-1, 1]) == (word.start, word.end)
    encoded = encode_tagging([TaggingExample(words, [0] * 6, "t")], tokenizer, 32)
    assert (encoded.word_ids[0] >= 0).sum() == len(words)


def test_question_answering_positions_spell_a_non_ascii_answer(tokenizer):
    context = "Le café de Zürich ouvre à 8 h, près du 東京 bar 😀."
    answers = ["Zürich", "東京", "café", "😀"]
    examples = [QuestionExample(f"q{k}", "Où est-ce ?", context,
                                ((a, context.index(a)),), False, "t")
                for k, a in enumerate(answers)]
    encoded = encode_questions(examples, tokenizer, sequence_length=64)
    vocabulary = tokenizer.vocabulary
    for row, (window, answer) in enumerate(zip(encoded.windows, answers)):
        start = int(encoded.labels["start_positions"][row])
        end = int(encoded.labels["end_positions"][row])
        assert 0 < start <= end
        spans = window.piece_spans[window.doc_start + start - window.offset :
                                   window.doc_start + end - window.offset + 1]
        assert context[spans[0, 0] : spans[-1, 1]] == answer
        ids = encoded.features["token_ids"][row, start : end + 1]
        assert Encoder(tokenizer).decode(ids).strip() == answer
        if answer == "café":  # the word after a space starts with "Ġ" ("Ġc")
            assert vocabulary[int(ids[0])].startswith("\u0120")
