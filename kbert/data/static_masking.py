"""Static masking (tools/create_pretraining_data.py): masked examples made ahead of training,
block by block, so that one process and any number of Beam workers make the same ones.

Documents are numbered in input order (ordinal o: files in `expand_patterns` order, documents
in file order). Block b holds the documents with `o // block_size == b`. Everything random
comes from seeds of the block, never from what was read before it:

- a document's pairs from a generator seeded by (seed, o): the same pairs in every pass;
- NSP's random B segment from another document of the same block (the window of
  `PairBuilder`; a block of `block_size` documents stands in for its `random_buffer`);
- masks in batches of the block's examples, seeded by (seed, pass, b, batch), so each of
  the `dupe_factor` passes draws new ones;
- the order of a block's examples shuffled by (seed, pass, b).

`BlockMaker.examples(b, documents, pass_index)` is the unit of work: `write` runs the blocks
one after another, `kbert.batch.pretraining_beam` runs them on Beam workers.
"""

import itertools

import numpy as np
import tensorflow as tf

from kbert.data import inputs, tfrecords
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder

MASK_BATCH = 256  # examples masked together


def numbered_documents(spec):
    """(ordinal, sentences) for every document of `spec` (see `kbert.data.inputs`), in input
    order; sentences are str. A bad spec or a pattern without files fails here, at once."""
    data = inputs.documents(spec)
    return ((ordinal, [s.decode("utf-8") for s in sentences])
            for ordinal, sentences in enumerate(data.as_numpy_iterator()))


def blocks(numbered, block_size):
    """(block index, [(ordinal, sentences), ...]) from `numbered_documents`' stream."""
    for index, group in itertools.groupby(numbered, key=lambda d: d[0] // block_size):
        yield index, list(group)


class BlockMaker:
    """Serialized masked examples (original feature names) of one block of documents.

    Args: those of `kbert.data.pretraining_dataset` that shape the examples, `seed` (an
    integer >= 0) and `block_size` (documents per block: the NSP window).
    """

    def __init__(self, tokenizer, sequence_length=128, max_predictions=20, sentence_task="nsp",
                 masking="token", masked_lm_prob=0.15, short_seq_prob=0.1, seed=0,
                 block_size=1000, mask_token_rate=0.8, random_token_rate=0.1, max_ngram=3):
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}.")
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}.")
        self.tokenizer = tokenizer
        self.seed, self.block_size = seed, block_size
        self.sequence_length = sequence_length
        self.builder = PairBuilder(
            sequence_length, sentence_task, tokenizer.cls_id, tokenizer.sep_id,
            tokenizer.pad_id, short_seq_prob=short_seq_prob)
        masker = Masker(tokenizer, max_predictions, masked_lm_prob=masked_lm_prob,
                        mask_token_rate=mask_token_rate, random_token_rate=random_token_rate,
                        masking=masking, max_ngram=max_ngram)
        rows = tf.TensorSpec([None, sequence_length], tf.int32)
        self._mask = tf.function(
            lambda token_ids, padding_mask, seed: masker(
                {"token_ids": token_ids, "padding_mask": padding_mask}, seed),
            input_signature=[rows, rows, tf.TensorSpec([2], tf.int64)])

    def _tokenized(self, documents):
        sentences = [s for document in documents for s in document]
        if not sentences:
            return [[] for _ in documents]
        ids = self.tokenizer.tokenize(tf.constant(sentences))
        values, lengths = ids.flat_values.numpy(), ids.row_lengths().numpy()
        pieces = np.split(values, np.cumsum(lengths)[:-1])
        out, start = [], 0
        for document in documents:
            out.append(pieces[start : start + len(document)])
            start += len(document)
        return out

    def pairs(self, numbered):
        """The unmasked examples of a block: [(ordinal, sentences), ...] -> list of dicts."""
        numbered = sorted(numbered, key=lambda d: d[0])
        rngs = [np.random.default_rng([self.seed, ordinal]) for ordinal, _ in numbered]
        tokens = self._tokenized([sentences for _, sentences in numbered])
        return list(self.builder.block_examples(tokens, rngs))

    def masked(self, block, pairs, pass_index):
        """`pairs` masked for pass `pass_index` and shuffled: serialized tf.train.Examples."""
        out = []
        for start in range(0, len(pairs), MASK_BATCH):
            batch = pairs[start : start + MASK_BATCH]
            seed = np.random.SeedSequence(
                [self.seed, pass_index, block, start // MASK_BATCH]).generate_state(2)
            token_ids = np.stack([e["token_ids"] for e in batch])
            padding_mask = np.stack([e["padding_mask"] for e in batch])
            masked, labels = self._mask(token_ids, padding_mask, seed.astype(np.int64))
            arrays = {"token_ids": masked["token_ids"].numpy(),
                      "segment_ids": np.stack([e["segment_ids"] for e in batch]),
                      "padding_mask": padding_mask,
                      "mask_positions": masked["mask_positions"].numpy(),
                      "mask_ids": labels["mask_ids"].numpy(),
                      "mask_weights": labels["mask_weights"].numpy()}
            if "next_sentence_labels" in batch[0]:
                arrays["next_sentence_labels"] = np.array(
                    [[e["next_sentence_labels"]] for e in batch], np.int32)
            out.extend(tfrecords.serialize({k: v[r] for k, v in arrays.items()})
                       for r in range(len(batch)))
        order = np.random.default_rng([self.seed, pass_index, block, 1]).permutation(len(out))
        return [out[i] for i in order]

    def examples(self, block, numbered, passes=(0,)):
        """{pass: serialized examples} of block `block` ([(ordinal, sentences), ...])."""
        pairs = self.pairs(numbered)
        return {p: self.masked(block, pairs, p) for p in passes}


def write(spec, maker, path, num_shards=1, dupe_factor=1, log_every=10000):
    """Every block of corpus `spec` (see `kbert.data.inputs`), `dupe_factor` passes over it
    with new masks, written round-robin to `tfrecords.shard_files(path, num_shards)`.

    Returns the files and the number of examples.
    """
    if not isinstance(dupe_factor, int) or dupe_factor < 1:
        raise ValueError(f"dupe_factor must be an integer >= 1, got {dupe_factor!r}.")
    tfrecords.shard_files(path, num_shards)  # bad values fail before any work
    numbered = numbered_documents(spec)  # and a bad spec too

    def records():
        for pass_index in range(dupe_factor):
            documents = numbered if pass_index == 0 else numbered_documents(spec)
            for block, group in blocks(documents, maker.block_size):
                yield from maker.examples(block, group, [pass_index])[pass_index]

    result = tfrecords.write_records(records(), path, num_shards, log_every)
    maker.builder.log_statistics()  # what truncation and dropping cost, as the stream logs
    return result
