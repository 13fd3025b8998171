"""A NUL in the middle of a corpus line costs no token: neither in the pretraining pipeline nor
in an exported SavedModel. (TensorFlow's lower-casing drops the text after a NUL: issue 22.)"""

import re

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.data import pretraining_dataset
from kbert.tokenizers.packing import pack_segments as pack
from kbert.tokenizers import WordPieceTokenizer

CLEAN = "Return the NUMBER of items in a container, or raise an error."
LINE = "Return the NUMBER \x00 of items in a con\x00tainer, or raise an error."  # BERT: CLEAN
DOCUMENTS = [
    ["The first document starts here.", CLEAN, "It ends with this sentence."],
    ["A second document follows.", "Its sentences are short."],
    ["Then a third one.", "With two sentences."],
]
WORDS = sorted({word for document in DOCUMENTS for sentence in document
                for word in re.findall(r"\w+|[^\w\s]", sentence.lower())})


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)


@pytest.fixture(scope="module")
def expected(tokenizer):
    ids = tokenizer.tokenize(CLEAN).numpy().tolist()
    assert len(ids) == 14 and tokenizer.unk_id not in ids
    assert tokenizer.tokenize(LINE).numpy().tolist() == ids
    return ids


def contains(row, part):
    return any(row[i:i + len(part)] == part for i in range(len(row) - len(part) + 1))


def test_pretraining_dataset_keeps_the_tokens_after_a_nul(tokenizer, expected):
    documents = [[LINE if s == CLEAN else s for s in document] for document in DOCUMENTS]
    data = pretraining_dataset(
        tf.data.Dataset.from_generator(lambda: iter(documents),
                                       output_signature=tf.TensorSpec([None], tf.string)),
        tokenizer, sequence_length=64, max_predictions=5, batch_size=2, seed=0,
        short_seq_prob=0.0, shuffle_buffer=0, drop_remainder=False)
    rows = []
    for features, labels in data.as_numpy_iterator():
        for i, ids in enumerate(features["token_ids"].copy()):
            # The masked positions get their original ids back.
            for position, original, weight in zip(features["mask_positions"][i],
                                                  labels["mask_ids"][i],
                                                  labels["mask_weights"][i]):
                if weight > 0:
                    ids[position] = original
            rows.append(ids.tolist())
    assert rows and any(contains(row, expected) for row in rows)


@pytest.mark.slow  # the export: about 25 s
def test_the_saved_model_gives_the_python_tokenizers_ids(tokenizer, expected, tmp_path):
    model = kbert.presets.load("bert_tiny", head=None, weights=None,
                               vocabulary_size=tokenizer.vocabulary_size, max_sequence_length=32)
    path = kbert.export(model, str(tmp_path / "saved_model"), tokenizer=tokenizer)
    serving = tf.saved_model.load(path).signatures
    from_text = serving["serving_default"](text=tf.constant([LINE, CLEAN]))
    # The ids the Python tokenizer gives, packed in Python: the model's outputs for them.
    inputs = pack(tokenizer, [tf.ragged.constant([expected, expected], tf.int32)],
                  len(expected) + 2)
    from_ids = serving["serving_ids"](**inputs)
    assert from_text["num_tokens"].numpy().tolist() == [len(expected) + 2] * 2
    np.testing.assert_allclose(from_text["features"], from_ids["sequence_output"], atol=1e-5)
