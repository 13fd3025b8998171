"""BERT's masked-LM corruption on batches of fixed-length examples, in the TensorFlow graph.

For each sequence: pick `masked_lm_prob` (15%) of the non-special tokens, capped at `max_predictions`;
of those, 80% become [MASK], 10% a random non-special token, 10% stay. Units can be
tokens, whole words (all the tokens of a word together, where the tokenizer's own rule
`starts_word` says a word starts: WordPiece's "##" continues one, SentencePiece's "\u2581"
starts one) or n-grams of whole words (ALBERT: spans of 1..max_ngram words, P(n)
proportional to 1/n).

Why not tensorflow-text's `RandomItemSelector`: it rounds the number of picks per sequence up
(`ceil`), which overshoots 15% (by a third on a 10-token sequence), shuffles row by row in a
`map_fn`, and draws from stateful random ops. Here the number of units is rounded
stochastically (unbiased: exactly `masked_lm_prob` in expectation), one sort per batch ranks all units,
and every draw is stateless from a per-batch seed, so a seed reproduces the batches exactly.
"""

import numpy as np
import tensorflow as tf

MASKINGS = ("token", "word", "ngram")


class Masker:
    """Masks batches: `masker(features, seed)` -> (features with `mask_positions`, labels).

    Args:
        tokenizer: the kbert tokenizer of the token ids (`WordPieceTokenizer`,
            `SentencePieceTokenizer`, ...). Its `special_ids` and placeholders
            (`is_placeholder`) are never predicted nor drawn as random tokens, its `mask_id`
            replaces, and its word-start rule (`starts_word`) groups tokens into words.
        max_predictions: masked positions per sequence (the label width `P`).
        masked_lm_prob: fraction of the non-special tokens to predict.
        mask_token_rate, random_token_rate: of the predicted tokens, the fraction replaced
            by [MASK] and by a random non-special token (the rest stay).
        masking: the unit masked together: "token", "word" (whole-word masking) or "ngram"
            (n-grams of whole words).
        max_ngram: longest n-gram for masking="ngram".
    """

    def __init__(self, tokenizer, max_predictions, masked_lm_prob=0.15, mask_token_rate=0.8,
                 random_token_rate=0.1, masking="token", max_ngram=3):
        if masking not in MASKINGS:
            raise ValueError(f"Unknown masking {masking!r}. Allowed: {', '.join(MASKINGS)}.")
        if not 0 < masked_lm_prob < 1:
            raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob!r}.")
        if not (0 <= mask_token_rate and 0 <= random_token_rate
                and mask_token_rate + random_token_rate <= 1):
            raise ValueError(
                f"mask_token_rate={mask_token_rate!r} and random_token_rate="
                f"{random_token_rate!r} must be >= 0 and add up to at most 1."
            )
        if not isinstance(max_predictions, int) or max_predictions < 1:
            raise ValueError(f"max_predictions must be an integer >= 1, got {max_predictions!r}.")
        if not isinstance(max_ngram, int) or max_ngram < 1:
            raise ValueError(f"max_ngram must be an integer >= 1, got {max_ngram!r}.")
        needed = ("vocabulary", "special_ids", "mask_id", "starts_word", "is_placeholder")
        lacking = [name for name in needed if not hasattr(tokenizer, name)]
        if lacking:
            raise TypeError(f"Masker takes a kbert tokenizer (WordPieceTokenizer, "
                            f"SentencePieceTokenizer); {type(tokenizer).__name__} has no "
                            f"{', '.join(lacking)}.")
        vocabulary = list(tokenizer.vocabulary)
        special = np.array([tokenizer.is_placeholder(t) for t in vocabulary], bool)
        special[list(tokenizer.special_ids)] = True
        self.vocabulary_size = len(vocabulary)
        self.mask_id = int(tokenizer.mask_id)
        self.max_predictions = max_predictions
        self.masked_lm_prob = masked_lm_prob
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.masking = masking
        self.max_ngram = max_ngram
        self._special = tf.constant(special)
        if masking != "token":  # a tokenizer without a word-start rule still masks tokens
            self._word_start = tf.constant([bool(tokenizer.starts_word(t)) for t in vocabulary])
        self._random_ids = tf.constant(np.flatnonzero(~special).astype(np.int32))
        weights = 1.0 / np.arange(1, max_ngram + 1)
        self._ngram_logits = tf.constant(np.log(weights / weights.sum())[None], tf.float32)

    def _unit_ids(self, token_ids, selectable, seeds):
        """Unit index of every token [B, S]; tokens of one unit share it, in order."""
        s = tf.shape(token_ids)[1]
        if self.masking == "token":
            return tf.broadcast_to(tf.range(s)[None], tf.shape(token_ids))
        # A word starts at a selectable token that starts a word by the tokenizer's rule, or
        # follows a non-selectable one ([CLS], [SEP]: a word never spans segments).
        word_start = tf.gather(self._word_start, token_ids)
        previous = tf.pad(selectable[:, :-1], [[0, 0], [1, 0]])
        starts = selectable & (word_start | ~previous)
        word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # [B, S], -1 before the first
        if self.masking == "word":
            return tf.maximum(word, 0)
        # n-grams: a random partition of the word sequence into spans of 1..max_ngram words.
        b = tf.shape(token_ids)[0]
        lengths = tf.random.stateless_categorical(
            self._ngram_logits, b * s, seed=seeds[2], dtype=tf.int32
        )
        ends = tf.cumsum(tf.reshape(lengths + 1, [b, s]), axis=1)  # span k covers words < ends[k]
        return tf.searchsorted(ends, tf.maximum(word, 0), side="right")

    def __call__(self, features, seed):
        """Masks a batch. `seed`: int64 scalar or [2] int tensor, e.g. from Dataset.random."""
        seed = tf.cast(tf.reshape(seed, [-1]), tf.int64)
        seed = tf.concat([seed, [0x5EED]], 0)[:2]  # [2], whatever was given
        seeds = tf.unstack(tf.random.experimental.stateless_split(seed, 6))
        token_ids = tf.cast(features["token_ids"], tf.int32)
        padding = tf.cast(features["padding_mask"], tf.bool)
        shape = tf.shape(token_ids)
        b, s, p = shape[0], shape[1], self.max_predictions
        selectable = padding & ~tf.gather(self._special, token_ids)

        # === Choose units: rank them by a random score, keep the first k of each row ===
        unit = self._unit_ids(token_ids, selectable, seeds)  # [B, S]
        flat_unit = unit + s * tf.range(b)[:, None]
        is_unit = tf.math.unsorted_segment_max(
            tf.cast(selectable, tf.int32), flat_unit, b * s
        )  # [B*S] 1 where the unit has selectable tokens
        is_unit = tf.reshape(is_unit, [b, s]) > 0
        score = tf.random.stateless_uniform([b, s], seeds[0])
        score = tf.where(is_unit, score, 2.0)
        rank = tf.argsort(tf.argsort(score, axis=1), axis=1)  # [B, S] rank of each unit slot
        units = tf.reduce_sum(tf.cast(is_unit, tf.float32), axis=1)
        # Stochastic rounding: E[k] = masked_lm_prob * units exactly.
        k = tf.floor(units * self.masked_lm_prob + tf.random.stateless_uniform([b], seeds[1]))
        token_rank = tf.gather(rank, unit, batch_dims=1)  # [B, S]
        chosen = selectable & (tf.cast(token_rank, tf.float32) < k[:, None])

        # === Cap at max_predictions tokens, dropping whole units from the end of the order ===
        per_rank = tf.math.unsorted_segment_sum(
            tf.cast(chosen, tf.int32), token_rank + s * tf.range(b)[:, None], b * s
        )
        upto = tf.cumsum(tf.reshape(per_rank, [b, s]), axis=1)  # tokens in units of rank <= r
        chosen &= tf.gather(upto, token_rank, batch_dims=1) <= p

        # === Positions [B, P] in order, padded with 0 (weight 0) ===
        key = tf.where(chosen, s - tf.range(s)[None], 0)
        top, _ = tf.math.top_k(key, k=tf.minimum(p, s))
        top = tf.pad(top, [[0, 0], [0, p - tf.minimum(p, s)]])
        weights = tf.cast(top > 0, tf.float32)
        positions = tf.where(top > 0, s - top, 0)
        mask_ids = tf.gather(token_ids, positions, batch_dims=1) * tf.cast(weights, tf.int32)

        # === 80 / 10 / 10 ===
        r = tf.random.stateless_uniform([b, s], seeds[3])
        random_ids = tf.gather(
            self._random_ids,
            tf.random.stateless_uniform(
                [b, s], seeds[4], maxval=tf.size(self._random_ids), dtype=tf.int32
            ),
        )
        replaced = tf.where(r < self.mask_token_rate, self.mask_id, token_ids)
        replaced = tf.where(
            (r >= self.mask_token_rate) & (r < self.mask_token_rate + self.random_token_rate),
            random_ids,
            replaced,
        )
        masked = dict(features)
        masked["token_ids"] = tf.where(chosen, replaced, token_ids)
        masked["mask_positions"] = positions
        labels = {"mask_ids": mask_ids, "mask_weights": weights}
        return masked, labels
