"""Masking statistics over >= 1,000,000 tokens of the stdlib corpus (several dynamic epochs),
for each kind of tokenizer (WordPiece, SentencePiece, byte-level BPE).

Tolerances: selection 15% +- 0.5% (sd at 1e6 tokens: 0.04%), 80/10/10 split +- 1% of the
selected (sd at 1.5e5 selections: 0.1%), NSP labels 50% +- 2%.
"""

from pathlib import Path

import numpy as np
import pytest

from kbert.data import pretraining_dataset
from tests.helpers import as_dataset

ROOT = Path(__file__).resolve().parents[2]

MIN_TOKENS = 1_000_000

# Each kind of tokenizer under test: its fixture (tests/data/conftest.py) and where its words
# start, written here apart from the tokenizer's own `starts_word`, so that a wrong rule there
# fails.
KINDS = {
    "wordpiece": ("tokenizer", lambda token: not token.startswith("##")),
    "sentencepiece": ("sentence_piece_tokenizer", lambda token: token.startswith("\u2581")),
    "bpe": ("byte_pair_tokenizer", lambda token: token.startswith("\u0120")),  # "Ġ"
}


@pytest.fixture(params=list(KINDS))
def kind(request):
    """(tokenizer, its word-start rule as a bool per id) of each kind in turn."""
    fixture, starts_word = KINDS[request.param]
    tokenizer = request.getfixturevalue(fixture)
    return tokenizer, np.array([starts_word(t) for t in tokenizer.vocabulary])


def collect(dataset, tokenizer, min_tokens=MIN_TOKENS):
    """Batches (as numpy) until `min_tokens` selectable tokens were seen, over epochs."""
    batches, tokens = [], 0
    while tokens < min_tokens:
        for features, labels in dataset.as_numpy_iterator():
            batches.append((features, labels))
            ids = features["token_ids"]
            special = np.isin(ids, [tokenizer.cls_id, tokenizer.sep_id, tokenizer.unk_id])
            tokens += int((features["padding_mask"].astype(bool) & ~special).sum())
    return batches, tokens


def original_ids(features, labels):
    ids = features["token_ids"].copy()
    rows = np.arange(len(ids))[:, None]
    real = labels["mask_weights"] > 0
    ids[np.broadcast_to(rows, real.shape)[real], features["mask_positions"][real]] = labels["mask_ids"][real]
    return ids


@pytest.mark.slow
def test_selection_rate_and_80_10_10(stdlib_documents, kind):
    tokenizer, _ = kind
    data = pretraining_dataset(as_dataset(stdlib_documents), tokenizer, sequence_length=128,
                               max_predictions=20, batch_size=64, seed=3)
    batches, tokens = collect(data, tokenizer)
    assert tokens >= MIN_TOKENS
    special = set(tokenizer.special_ids)
    selected = masked = kept = randomized = 0
    nsp = []
    for features, labels in batches:
        weights = labels["mask_weights"] > 0
        now = np.take_along_axis(features["token_ids"], features["mask_positions"], 1)[weights]
        before = labels["mask_ids"][weights]
        assert not np.isin(before, list(special)).any(), "a special token was selected"
        selected += len(before)
        masked += int((now == tokenizer.mask_id).sum())
        kept += int((now == before).sum())
        random = now[(now != tokenizer.mask_id) & (now != before)]
        randomized += len(random)
        assert not np.isin(random, list(special)).any(), "a random token was a special token"
        assert random.max(initial=0) < tokenizer.vocabulary_size
        # Positions are real, distinct tokens.
        positions = features["mask_positions"]
        for row in range(len(positions)):
            p = positions[row][weights[row]]
            assert len(set(p)) == len(p) and np.all(features["padding_mask"][row, p] == 1)
        nsp.append(labels["next_sentence_labels"])
    print(f"{type(tokenizer).__name__}: {tokens} tokens, selected {selected / tokens:.4f}, "
          f"mask {masked / selected:.4f}, kept {kept / selected:.4f}, random "
          f"{randomized / selected:.4f}")
    assert abs(selected / tokens - 0.15) < 0.005, selected / tokens
    assert abs(masked / selected - 0.8) < 0.01
    assert abs(kept / selected - 0.1) < 0.01
    assert abs(randomized / selected - 0.1) < 0.01
    assert abs(np.concatenate(nsp).mean() - 0.5) < 0.02


@pytest.mark.slow
@pytest.mark.parametrize("masking", ["word", "ngram"])
def test_whole_words_are_never_split(stdlib_documents, kind, masking):
    tokenizer, starts_word = kind
    # 32 predictions for 128 tokens: the cap (which drops whole units) seldom binds, so the
    # rate below is the selection's. At 20 it binds often, the more so for the longer words of
    # SentencePiece ("\u2581attribute" "," is one word): 13.4% (word) and 12.6% (n-gram) of
    # its tokens were seen then.
    data = pretraining_dataset(as_dataset(stdlib_documents), tokenizer, batch_size=64, seed=5,
                               masking=masking, max_predictions=32)
    continuation = ~starts_word
    selected = tokens = 0
    checked_words = 0
    for features, labels in data.as_numpy_iterator():
        ids = original_ids(features, labels)
        chosen = np.zeros(ids.shape, bool)
        weights = labels["mask_weights"] > 0
        rows = np.broadcast_to(np.arange(len(ids))[:, None], weights.shape)
        chosen[rows[weights], features["mask_positions"][weights]] = True
        # A continuation piece is chosen exactly when the piece before it is (unless that is
        # [CLS] or [SEP]: truncation from the front can leave a continuation first).
        special = np.isin(ids, tokenizer.special_ids)  # never continuations, never continued
        inner = (continuation[ids[:, 1:]] & (features["padding_mask"][:, 1:] == 1)
                 & ~special[:, 1:] & ~special[:, :-1])
        assert np.array_equal(chosen[:, 1:][inner], chosen[:, :-1][inner])
        checked_words += int(inner.sum())
        tokens += int(((features["padding_mask"] == 1) & ~special).sum())
        selected += int(weights.sum())
    print(f"{type(tokenizer).__name__} {masking}: {checked_words} continuations checked, "
          f"selected {selected / tokens:.4f}")
    assert checked_words > 10_000
    # Whole units: 15% of the units, so about 15% of the tokens (looser: units vary in size
    # and the cap drops whole units).
    assert abs(selected / tokens - 0.15) < 0.015, selected / tokens


def test_whole_sentence_piece_words_on_a_tiny_model():
    """Fast: a tiny SentencePiece model spells most words piece by piece; every set that word
    and n-gram masking choose is whole words, each "\u2581" piece with the pieces after it."""
    import tensorflow as tf

    from kbert.data import Masker
    from kbert.tokenizers import SentencePieceTokenizer

    tokenizer = SentencePieceTokenizer(ROOT / "tests" / "fixtures" / "hf_tiny" / "albert" /
                                       "spiece.model")
    text = "the word was written by the people who were there when we met at noon"
    ids = [tokenizer.cls_id, *tokenizer.tokenize(text).numpy().tolist(), tokenizer.sep_id]
    word = np.cumsum([tokenizer.id_to_token(i).startswith("\u2581") for i in ids])
    word[0] = word[-1] = -1  # [CLS], [SEP]
    features = {"token_ids": tf.constant([ids] * 8),
                "segment_ids": tf.zeros([8, len(ids)], tf.int32),
                "padding_mask": tf.ones([8, len(ids)], tf.int32)}
    for masking in ("word", "ngram"):
        masker = Masker(tokenizer, max_predictions=len(ids), masking=masking)
        split_words_seen = 0
        for seed in range(20):
            masked, labels = masker(features, seed)
            for positions, weights in zip(masked["mask_positions"].numpy(),
                                          labels["mask_weights"].numpy()):
                chosen = set(positions[weights > 0].tolist())
                words = {word[p] for p in chosen}
                assert -1 not in words
                assert chosen == {p for p in range(len(ids)) if word[p] in words}, masking
                split_words_seen += sum(int((word == w).sum() > 1) for w in words)
        assert split_words_seen > 20  # words of several pieces were chosen, whole
    # Token masking on the same rows does split them: the check above can fail.
    masked, labels = Masker(tokenizer, max_predictions=len(ids))(features, 0)
    chosen = [set(p[w > 0].tolist()) for p, w in zip(masked["mask_positions"].numpy(),
                                                     labels["mask_weights"].numpy())]
    assert any(c != {p for p in range(len(ids)) if word[p] in {word[q] for q in c}}
               for c in chosen)


def test_a_tokenizer_without_a_word_start_rule():
    """Token masking needs no word-start rule; word masking names the missing method."""
    from kbert.data import Masker
    from kbert.tokenizers import SentencePieceTokenizer
    from kbert.tokenizers.base import Tokenizer

    class NoRule(SentencePieceTokenizer):
        starts_word = Tokenizer.starts_word

    tokenizer = NoRule(ROOT / "tests" / "fixtures" / "hf_tiny" / "albert" / "spiece.model")
    Masker(tokenizer, 5, masking="token")
    with pytest.raises(NotImplementedError, match="NoRule does not say where its words start"):
        Masker(tokenizer, 5, masking="word")
    with pytest.raises(TypeError, match="Masker takes a kbert tokenizer .* list has no"):
        Masker(["[PAD]", "[MASK]"], 5)
