"""`preprocess`: raw text lines (the standard library's docstring sentences, repeated to
`lines`, in BERT's one-sentence-per-line format) -> masked examples (sequence 128, 20
predictions, batches of `batch_size`).

kbert's `pretraining_dataset` also builds NSP pairs (so one example packs several lines);
keras-hub's `BertMaskedLMPreprocessor` makes one example per line. Both use the same WordPiece
vocabulary (learned from the corpus, untimed) and read the same file. Printed and returned:
examples/s, lines/s, real (non-padding) tokens/s, and the ratios kbert / keras-hub (best
round).
"""

import os
import platform
import time

from benchmarks import ratios


def corpus_file(folder, lines):
    """BERT-format file of `lines` stdlib sentences (documents separated by blank lines)."""
    from kbert.data import corpora

    documents = [[s.decode() for s in d] for d in corpora.stdlib_docstrings().as_numpy_iterator()]
    path = os.path.join(folder, "corpus.txt")
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < lines:
            for doc in documents:
                take = doc[: lines - written]
                f.write("\n".join(take) + "\n\n")
                written += len(take)
                if written >= lines:
                    break
    return path, written


def run(lines, batch_size, rounds):
    """Prints the table; returns {"lines", "sequence_length", "predictions",
    "batch_size", "vocabulary_size", "rounds": {name: [[seconds, examples, real tokens] of
    each round]}, "rates": {name: {"examples_per_second", "lines_per_second",
    "tokens_per_second"}}, "ratios": kbert / keras-hub in each, "lines_per_example"}."""
    import tempfile

    import keras_hub
    import tensorflow as tf

    import kbert
    from kbert.data import corpora, pretraining_dataset
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.tokenizers.vocab_learning import learn_vocabulary

    lines_asked = lines
    batch, seq, preds = batch_size, 128, 20
    print(f"preprocess: {lines_asked} lines -> masked examples, sequence {seq}, {preds} "
          f"predictions, batches of {batch}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"keras-hub {keras_hub.__version__}, kbert {kbert.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        path, lines = corpus_file(folder, lines_asked)
        vocabulary = learn_vocabulary(corpora.text_files(path), 8000, max_sentences=20000)
        print(f"corpus: {lines} lines; vocabulary: {len(vocabulary)} tokens")
        tokenizer = WordPieceTokenizer(vocabulary)

        def kbert_data():
            return pretraining_dataset(corpora.text_files(path), tokenizer, sequence_length=seq,
                                       max_predictions=preds, batch_size=batch, sentence_task="nsp")

        hub_tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
        hub_preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
            hub_tokenizer, sequence_length=seq, mask_selection_length=preds
        )

        def hub_data():
            text = tf.data.TextLineDataset(path).filter(lambda l: tf.strings.length(l) > 0)
            return text.batch(batch).map(hub_preprocessor, num_parallel_calls=tf.data.AUTOTUNE)

        contestants = (("kbert pretraining_dataset (NSP)", kbert_data),
                       ("keras-hub BertMaskedLMPreprocessor", hub_data))
        results = {name: [] for name, _ in contestants}
        for r in range(rounds):
            for name, make in contestants:
                data = make()
                start = time.perf_counter()
                examples = tokens = 0
                for element in data:
                    mask = element[0]["padding_mask"]  # features (kbert) or x (keras-hub)
                    examples += int(tf.shape(mask)[0])
                    tokens += int(tf.reduce_sum(tf.cast(mask, tf.int64)))
                results[name].append((time.perf_counter() - start, examples, tokens))
            print(f"  round {r + 1}/{rounds} done", flush=True)

    print()
    print(f"{'pipeline':36s} {'examples':>9s} {'examples/s':>11s} {'lines/s':>9s} "
          f"{'real tokens/s':>14s}")
    rates = ratios.preprocess_rates(results, lines)
    for name, _ in contestants:
        examples = min(results[name])[1]
        print(f"{name:36s} {examples:9d} {rates[name][0]:11.0f} {rates[name][1]:9.0f} "
              f"{rates[name][2]:14.0f}")
    ours, theirs = rates[contestants[0][0]], rates[contestants[1][0]]
    by_examples, by_lines, by_tokens = ratios.ratios(ours, theirs)
    print(f"kbert / keras-hub: {by_examples:.2f} in examples/s, "
          f"{by_lines:.2f} in lines/s, {by_tokens:.2f} in real tokens/s "
          f"(a kbert example packs {ours[1] / ours[0]:.1f} lines)")
    keys = ("examples_per_second", "lines_per_second", "tokens_per_second")
    return {"lines": lines, "sequence_length": seq, "predictions": preds, "batch_size": batch,
            "vocabulary_size": len(vocabulary), "rounds": results,
            "rates": {name: dict(zip(keys, rate)) for name, rate in rates.items()},
            "ratios": dict(zip(keys, (by_examples, by_lines, by_tokens))),
            "lines_per_example": ours[1] / ours[0]}
