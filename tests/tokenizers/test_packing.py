"""One packing of text pairs for fine-tuning, export and the pipelines: BERT's
[CLS] A [SEP] B [SEP] (segment ids 0 then 1), RoBERTa's <s> A </s></s> B </s> (segment ids all
0, as transformers' RobertaTokenizer), the budget of a pair leaving room for every special
token, and question answering windows whose context starts after the separators."""

import functools
import types

import numpy as np
import pytest
import tensorflow as tf

from kbert.tokenizers.packing import (
    pack_segments,
    packed_row,
    pair_separators,
    second_segment_id,
    special_count,
)
from kbert.tasks.question_answering.data import QuestionExample
from kbert.tasks.question_answering.features import encode_questions
from kbert.tasks.text_classification.features import (
    classification_dataset,
    encode_classification,
)
from kbert.tokenizers.words import tokenize_words
from tests.pipelines.reference import FIXTURES

FAMILIES = {"bert": "hf_tasks/bert_seq_single", "roberta": "hf_tasks/roberta_seq_single"}


@functools.lru_cache(maxsize=None)
def tokenizer_of(family):
    from kbert.convert import load_tokenizer

    return load_tokenizer(str(FIXTURES / FAMILIES[family]))


def ids_of(tokenizer, text):
    return tokenizer.tokenize(tf.constant([text]))[0].numpy().tolist()


def expected_pair(tokenizer, first, second, length):
    """The pair as transformers packs it (build_inputs_with_special_tokens and
    create_token_type_ids_from_sequences), padded: what every kbert path must give."""
    cls, sep, pad = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    separators = 2 if type(tokenizer).__name__ == "BytePairTokenizer" else 1
    ids = [cls, *first, *[sep] * separators, *second, sep]
    head = 1 + len(first) + separators
    segments = [0] * head + [0 if separators == 2 else 1] * (len(second) + 1)
    rest = length - len(ids)
    return ids + [pad] * rest, segments + [0] * rest, [1] * len(ids) + [0] * rest


def as_lists(features):
    return {k: np.asarray(v).tolist() for k, v in features.items()}


@pytest.mark.parametrize("family, separators", [("bert", 1), ("roberta", 2)])
def test_the_tokenizer_says_how_many_separators(family, separators):
    tokenizer = tokenizer_of(family)
    assert pair_separators(tokenizer) == separators
    assert special_count(tokenizer, True) == 2 + separators
    assert special_count(tokenizer, False) == 2
    assert second_segment_id(tokenizer) == (1 if family == "bert" else 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_pack_segments_packs_a_pair_and_a_single_text(family):
    tokenizer = tokenizer_of(family)
    first, second = ids_of(tokenizer, "Paris is nice"), ids_of(tokenizer, "London")
    ids = tokenizer.tokenize(tf.constant(["Paris is nice", "London"]))
    pair = as_lists(pack_segments(tokenizer, [ids[:1], ids[1:]], 16))
    token_ids, segment_ids, padding_mask = expected_pair(tokenizer, first, second, 16)
    assert pair["token_ids"] == [token_ids]
    assert pair["segment_ids"] == [segment_ids]
    assert pair["padding_mask"] == [padding_mask]
    assert pair["token_ids"][0].count(tokenizer.sep_id) == 1 + pair_separators(tokenizer)
    single = as_lists(pack_segments(tokenizer, [ids[:1]], 12))
    cls, sep, pad = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    assert single["token_ids"] == [[cls, *first, sep] + [pad] * (10 - len(first))]
    assert single["segment_ids"] == [[0] * 12]
    # A single text's budget: the two special tokens only.
    cut = as_lists(pack_segments(tokenizer, [ids[:1]], 5))
    assert cut["token_ids"] == [[cls, *first[:3], sep]]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_budget_of_a_pair_leaves_room_for_every_special_token(family):
    tokenizer = tokenizer_of(family)
    long_text = " ".join(["Paris is nice in the spring"] * 6)
    ids = tokenizer.tokenize(tf.constant([long_text, "London", long_text, long_text]))
    first, second = ids[0].numpy().tolist(), ids[1].numpy().tolist()
    length = 20
    budget = length - special_count(tokenizer, True)
    packed = as_lists(pack_segments(tokenizer, [ids[0::2], ids[1::2]], length))
    # A long first text and a short second: the second is kept whole, the first cut.
    kept = budget - len(second)
    assert packed["token_ids"][0] == expected_pair(tokenizer, first[:kept], second, length)[0]
    # Both long: half each (BERT's longest-first rule), and the row is full.
    half = budget // 2
    expected = expected_pair(tokenizer, first[:budget - half], first[:half], length)
    assert packed["token_ids"][1] == expected[0]
    assert packed["segment_ids"][1] == expected[1]
    assert packed["padding_mask"][1] == [1] * length


def truncate_seq_pair(a, b, max_length):
    """google-research/bert's run_classifier._truncate_seq_pair."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


@pytest.mark.parametrize("separators", [1, 2, 3])
def test_pairs_are_truncated_longest_first_within_the_budget_of_their_separators(separators):
    rng = np.random.default_rng(separators)
    lengths = rng.integers(0, 14, (100, 2))
    a = tf.ragged.constant([list(range(100, 100 + n)) for n, _ in lengths], tf.int32)
    b = tf.ragged.constant([list(range(200, 200 + n)) for _, n in lengths], tf.int32)
    tokenizer = types.SimpleNamespace(cls_id=0, sep_id=2, pad_id=1,
                                      pair_separators=separators)
    second = 1 if separators == 1 else 0
    for length in (4 + separators, 9, 30):
        packed = as_lists(pack_segments(tokenizer, [a, b], length))
        for row, (la, lb) in enumerate(lengths):
            ta, tb = truncate_seq_pair(range(100, 100 + la), range(200, 200 + lb),
                                       length - 2 - separators)
            expected = [0, *ta, *[2] * separators, *tb, 2]
            padding = [0] * (length - len(expected))
            assert packed["token_ids"][row] == expected + [1] * len(padding)
            assert packed["segment_ids"][row] == ([0] * (len(ta) + 1 + separators)
                                                  + [second] * (len(tb) + 1) + padding)
            assert packed["padding_mask"][row] == [1] * len(expected) + padding


def test_bad_packing_arguments_are_refused_by_name():
    tokenizer = types.SimpleNamespace(cls_id=0, sep_id=2, pad_id=1, pair_separators=2)
    a = tf.ragged.constant([[5, 6]], tf.int32)
    with pytest.raises(ValueError, match="sequence_length=3 is shorter than the 4 special "
                                         "tokens of a pair"):
        pack_segments(tokenizer, [a, a], 3)
    with pytest.raises(ValueError, match="one text or a pair, got 3 segments"):
        pack_segments(tokenizer, [a, a, a], 16)
    tokenizer.pair_separators = 0
    with pytest.raises(ValueError, match="`pair_separators` must be an integer >= 1, got 0"):
        pack_segments(tokenizer, [a, a], 16)


@pytest.mark.parametrize("family", FAMILIES)
def test_packed_row_packs_as_pack_segments(family):
    tokenizer = tokenizer_of(family)
    first, second = ids_of(tokenizer, "Where is it?"), ids_of(tokenizer, "It is in Paris.")
    ids = tokenizer.tokenize(tf.constant(["Where is it?", "It is in Paris."]))
    graph = as_lists(pack_segments(tokenizer, [ids[:1], ids[1:]], 24))
    *row, offset = packed_row(first, second, 24, tokenizer.cls_id, tokenizer.sep_id,
                              tokenizer.pad_id, pair_separators(tokenizer),
                              second_segment_id(tokenizer))
    assert [r.tolist() for r in row] == [graph[k][0] for k in
                                         ("token_ids", "segment_ids", "padding_mask")]
    assert offset == 1 + len(first) + pair_separators(tokenizer)
    assert row[0][offset : offset + len(second)].tolist() == second
    # The default is BERT's packing, which the single texts of tagging use.
    *single, end = packed_row(first, None, 24, tokenizer.cls_id, tokenizer.sep_id,
                              tokenizer.pad_id)
    assert single[0][: end].tolist() == [tokenizer.cls_id, *first, tokenizer.sep_id]


@pytest.mark.parametrize("family", FAMILIES)
def test_fine_tuning_pairs_are_packed_as_the_model_was_pretrained(family):
    tokenizer = tokenizer_of(family)
    pairs = [("Paris is nice", "London"), ("A quiet café.", "I liked it a lot.")]
    encoded = encode_classification(pairs, tokenizer, sequence_length=40)
    for row, (a, b) in enumerate(pairs):
        expected = expected_pair(tokenizer, ids_of(tokenizer, a), ids_of(tokenizer, b), 40)
        assert encoded.features["token_ids"][row].tolist() == expected[0]
        assert encoded.features["segment_ids"][row].tolist() == expected[1]
        assert encoded.features["padding_mask"][row].tolist() == expected[2]
    # The shortest sequence_length: the special tokens and a piece of each text.
    shortest = special_count(tokenizer, True) + 2
    classification_dataset(pairs, tokenizer, sequence_length=shortest)
    with pytest.raises(ValueError, match=f"`sequence_length` must be an integer >= {shortest}"):
        classification_dataset(pairs, tokenizer, sequence_length=shortest - 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_question_answering_windows_start_the_context_after_the_separators(family):
    tokenizer = tokenizer_of(family)
    context = ("The tower was built in Paris in 1889 and it is three hundred metres tall, "
               "the tallest in the city for many years.")
    answer = "1889"
    example = QuestionExample("q0", "When was it built?", context,
                              answers=((answer, context.index(answer)),))
    length, stride = 24, 6
    encoded = encode_questions([example], tokenizer, sequence_length=length, doc_stride=stride)
    question_ids = tokenize_words(tokenizer, [example.question])[example.question].tolist()
    separators = pair_separators(tokenizer)
    found = 0
    for row, window in enumerate(encoded.windows):
        assert window.offset == 1 + len(question_ids) + separators
        tokens = encoded.features["token_ids"][row].tolist()
        assert tokens[: window.offset] == [tokenizer.cls_id, *question_ids,
                                           *[tokenizer.sep_id] * separators]
        end = window.offset + window.doc_length
        assert tokens[end] == tokenizer.sep_id and tokens.count(tokenizer.sep_id) == 1 + separators
        # The window fills the row: the budget counts every special token.
        assert window.doc_length <= length - len(question_ids) - 2 - separators
        segments = encoded.features["segment_ids"][row].tolist()
        assert segments == ([0] * window.offset
                            + [second_segment_id(tokenizer)] * (window.doc_length + 1)
                            + [0] * (length - end - 1))
        start = encoded.labels["start_positions"][row]
        stop = encoded.labels["end_positions"][row]
        if start:
            found += 1
            spans = window.token_spans
            assert window.offset <= start <= stop < end
            assert context[spans[start, 0] : spans[stop, 1]] == answer
    assert found >= 1 and len(encoded.windows) > 1


@pytest.mark.parametrize("family", FAMILIES)
def test_exported_question_answering_windows_are_the_fine_tuning_windows(family):
    """answer_signatures.window_features (the QA SavedModel's packing, in the graph) gives
    the rows encode_questions gives for the same pieces."""
    from kbert.tokenizers.alignment import align_texts
    from kbert.tasks.question_answering.windows_graph import window_features

    tokenizer = tokenizer_of(family)
    context = "The tower was built in Paris in 1889 and it is three hundred metres tall."
    example = QuestionExample("q0", "When was it built?", context)
    length, stride = 20, 5
    encoded = encode_questions([example], tokenizer, sequence_length=length, doc_stride=stride)
    question_ids = tokenize_words(tokenizer, [example.question])[example.question]
    pieces = align_texts([context], tokenizer)[0].piece_ids
    window = window_features(tokenizer, tf.ragged.constant([question_ids], tf.int32),
                             tf.ragged.constant([pieces], tf.int32), length, stride,
                             padded_to=length)
    assert window["offset"].numpy().tolist() == [w.offset for w in encoded.windows]
    assert window["doc_length"].numpy().tolist() == [w.doc_length for w in encoded.windows]
    for key, value in window["features"].items():
        assert value.numpy().tolist() == encoded.features[key].tolist(), key
