"""BPE merges in the TensorFlow graph, on words given as symbol ids: the merge table and its
loop, shared by the byte-level BPE (`BytePairTokenizer`) and the byte-fallback BPE of a
tokenizer.json (`kbert.tokenizers.tokenizer_json.tokenizer`).

In every word, all non-overlapping occurrences of the pair of lowest merge rank are merged,
left to right, until no pair has a rank (GPT-2's `bpe`; for merges learned in order it is what
`tokenizers`' priority queue gives). Pairs are looked up as int64 keys `left_id * V +
right_id`, so the loop never builds strings.
"""

import numpy as np
import tensorflow as tf


class MergeTable(tf.Module):
    """The merges of a vocabulary as one hash table: pair key -> rank * V + merged id.

    Args:
        index: {token: id}; size: the vocabulary's size V (ids are below it).
        merges: (left, right) pairs in rank order; each token and their join in `index`.
    """

    def __init__(self, index, merges, size, name=None):
        super().__init__(name=name)
        keys, ranks, merged = [], [], []
        for rank, (left, right) in enumerate(merges):
            if left not in index or right not in index or left + right not in index:
                raise ValueError(f"Merge {rank} ({left!r}, {right!r}) names a token that the "
                                 "vocabulary lacks.")
            keys.append(index[left] * size + index[right])
            ranks.append(rank)
            merged.append(index[left + right])
        keys = np.array(keys, np.int64)
        if len(set(keys.tolist())) != len(keys):
            raise ValueError("merges repeats a pair.")
        self._no_merge = len(merges)
        self._size = size
        values = np.array(ranks, np.int64) * size + np.array(merged, np.int64)
        if not len(keys):  # (a table cannot be empty: a key no pair has)
            keys, values = np.array([-1], np.int64), np.array([self._no_merge * size])
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.constant(values)),
            default_value=self._no_merge * size)

    def merge(self, ids, lengths):
        """BPE on words given as flat int64 symbol ids [T] and their lengths [W] -> the merged
        ids and the words' new lengths."""
        size = tf.constant(self._size, tf.int64)
        none = tf.constant(self._no_merge, tf.int64)

        def step(ids, lengths, _):
            count = tf.size(ids, out_type=tf.int64)
            words = tf.size(lengths, out_type=tf.int64)
            word_of = tf.repeat(tf.range(words), lengths)  # [T]
            limit = tf.gather(tf.cumsum(lengths), word_of)  # [T], one past the word's end
            index = tf.range(count)
            following = tf.concat([ids, [0]], 0)[1:]  # (no words: stays empty)
            found = self._table.lookup(ids * size + following)
            rank = tf.where(index + 1 < limit, found // size, none)  # of the pair at i, i+1
            best = tf.math.unsorted_segment_min(rank, word_of, words)
            candidate = (rank < none) & tf.equal(rank, tf.gather(best, word_of))
            # Overlapping candidates (a run of one pair "a a a") merge left to right: the
            # even ones of each run of consecutive candidates.
            previous = tf.concat([[False], candidate], 0)[:-1]
            starts = candidate & ~previous
            run = tf.cumsum(tf.cast(starts, tf.int64)) - 1
            run_start = tf.gather(tf.concat([tf.boolean_mask(index, starts), [0]], 0),
                                  tf.maximum(run, 0))
            merge = candidate & tf.equal((index - run_start) % 2, 0)
            merged_id = found % size
            dropped = tf.concat([[False], merge], 0)[:-1]
            ids = tf.boolean_mask(tf.where(merge, merged_id, ids), ~dropped)
            lengths = lengths - tf.math.unsorted_segment_sum(
                tf.cast(merge, tf.int64), word_of, words)
            return ids, lengths, tf.reduce_any(merge)

        # Each step but the last merges at least one pair (one id fewer): the loop ends within
        # size(ids) + 1 steps. Saying so lets kbert's SavedModel check see the bound.
        ids, lengths, _ = tf.while_loop(
            lambda ids, lengths, changed: changed, step, (ids, lengths, tf.constant(True)),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]),
                              tf.TensorShape([])),
            maximum_iterations=tf.size(ids) + 1)
        return ids, lengths
