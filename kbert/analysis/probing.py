"""Layer-wise probing (Tenney et al. 2019; Hewitt and Manning 2019): a linear classifier
(scikit-learn's `LogisticRegression` on standardised features) trained on each layer's hidden
states alone, and its held-out accuracy by layer, beside the majority-class baseline.

- a token task (tags per word, e.g. part of speech): a word's features are its first piece's
  hidden state (as BERT's tagger reads it);
- a sentence task (a label per text): a text's features are the mean of its tokens' hidden
  states ("mean") or the [CLS] token's ("cls").

Examples are split into a training and a held-out part by text (`test_fraction`, `seed`), so
that the words of one sentence are never on both sides.
"""

import dataclasses

import numpy as np

from kbert import _extras

POOLINGS = ("mean", "cls")


@dataclasses.dataclass
class ProbeData:
    """Features of every layer for a probe.

    Attributes:
        features: float32 [layers + 1, examples, H]: `hidden_states[i]` of each example.
        labels: int [examples]: class indices.
        groups: int [examples]: the text each example comes from (the split keeps a text's
            examples together).
        label_names: the classes' names (index = label), or None.
        unit: "token" or "text": what an example is.
        dropped: the words cut off with their text's end (`max_length`).
    """

    features: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    label_names: list = None
    unit: str = "token"
    dropped: int = 0


@dataclasses.dataclass
class ProbeResult:
    """Held-out accuracy of a linear probe on each `hidden_states[i]` (0: the embeddings)."""

    task: str
    accuracy: list
    majority: float
    train_count: int
    test_count: int
    unit: str
    label_names: list = None

    @property
    def best_layer(self):
        return int(np.argmax(self.accuracy))

    def table(self):
        """Accuracy by layer as a Markdown table."""
        lines = ["| hidden state | accuracy |", "| --- | --- |"]
        lines += [f"| {'embeddings' if i == 0 else f'layer {i}'} | {a:.3f} |"
                  for i, a in enumerate(self.accuracy)]
        lines.append(f"| majority class | {self.majority:.3f} |")
        return "\n".join(lines)

    def to_dict(self):
        return dataclasses.asdict(self)


def _indices(labels, label_names=None):
    """Labels (any hashable values, or indices into `label_names`) -> (int array, names)."""
    labels = list(labels)
    if label_names is not None:
        bad = [label for label in labels
               if not isinstance(label, (int, np.integer)) or not 0 <= label < len(label_names)]
        if bad:
            raise ValueError(f"Label {bad[0]!r} is no index into label_names (0 to "
                             f"{len(label_names) - 1}).")
        return np.asarray(labels, np.int64), list(label_names)
    names = sorted(set(labels), key=str)
    index = {name: i for i, name in enumerate(names)}
    return np.array([index[label] for label in labels], np.int64), names


def token_probe_data(inspector, sentences, tags, label_names=None, progress=False):
    """`ProbeData` of a tagging task: `sentences` as lists of words, `tags` a tag per word
    (names, or indices into `label_names`). The words are joined by spaces and each word's
    first piece is its example."""
    from kbert.tokenizers.alignment import align_words

    sentences = [list(words) for words in sentences]
    tags = [list(t) for t in tags]
    if len(sentences) != len(tags):
        raise ValueError(f"{len(sentences)} sentences but {len(tags)} tag lists.")
    for i, (words, t) in enumerate(zip(sentences, tags)):
        if len(words) != len(t) or not words:
            raise ValueError(f"Sentence {i} has {len(words)} words and {len(t)} tags; "
                             "expected as many tags as words, at least one.")
    alignments = align_words(sentences, inspector.tokenizer)
    encoded = [(a.piece_ids, a.piece_spans, a.piece_words) for a in alignments]
    features, labels, groups, dropped = [], [], [], 0
    inspections = inspector.iterate_encoded([a.text for a in alignments], encoded,
                                            hidden_states=True, attentions=False,
                                            progress=progress)
    for s, inspection in enumerate(inspections):
        words = inspection.words
        for w, tag in enumerate(tags[s]):
            where = np.flatnonzero(words == w)
            if not len(where):  # cut off with the end of a long text, or gave no piece
                dropped += 1
                continue
            features.append(inspection.hidden_states[:, where[0]])
            labels.append(tag)
            groups.append(s)
    labels, names = _indices(labels, label_names)
    return ProbeData(np.stack(features, 1), labels, np.asarray(groups), names, "token",
                     dropped)


def sentence_probe_data(inspector, texts, labels, label_names=None, pooling="mean",
                        progress=False):
    """`ProbeData` of a text classification task: a label per text (names, or indices into
    `label_names`); a text's features pooled from its tokens (`pooling`: "mean" or "cls")."""
    if pooling not in POOLINGS:
        raise ValueError(f"Unknown pooling {pooling!r}. Allowed: {', '.join(POOLINGS)}.")
    texts, labels = list(texts), list(labels)
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels.")
    features = [inspection.hidden_states.mean(1) if pooling == "mean"
                else inspection.hidden_states[:, 0]
                for inspection in inspector.iterate(texts, hidden_states=True,
                                                    attentions=False, progress=progress)]
    labels, names = _indices(labels, label_names)
    return ProbeData(np.stack(features, 1), labels, np.arange(len(texts)), names, "text")


def split(groups, test_fraction=0.25, seed=0):
    """Boolean [examples]: True for the held-out examples, whole groups at a time."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1 (exclusive), got "
                         f"{test_fraction!r}.")
    distinct = np.unique(groups)
    if len(distinct) < 2:
        raise ValueError(f"A probe needs examples from at least 2 texts to hold some out; "
                         f"got {len(distinct)}.")
    count = min(len(distinct) - 1, max(1, int(round(test_fraction * len(distinct)))))
    held = np.random.default_rng(seed).permutation(distinct)[:count]
    return np.isin(groups, held)


def probe_layers(data, test_fraction=0.25, seed=0, max_iter=1000):
    """Trains a linear probe on each layer of `data` (`ProbeData`) and returns its held-out
    accuracy by layer (`ProbeResult`)."""
    _extras.require("sklearn", "analysis", "A linear probe (kbert.analysis.probe_layers)")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    test = split(data.groups, test_fraction, seed)
    train_labels, test_labels = data.labels[~test], data.labels[test]
    if len(np.unique(train_labels)) < 2:
        raise ValueError("The training part holds one class only: a probe needs at least 2 "
                         "(more texts, or another seed).")
    majority = float(np.mean(test_labels == np.bincount(train_labels).argmax()))
    accuracy = []
    for layer in data.features:
        probe = make_pipeline(StandardScaler(),
                              LogisticRegression(max_iter=max_iter, random_state=seed))
        probe.fit(layer[~test], train_labels)
        accuracy.append(float(np.mean(probe.predict(layer[test]) == test_labels)))
    return ProbeResult("tagging" if data.unit == "token" else "text classification",
                       accuracy, majority, int((~test).sum()), int(test.sum()), data.unit,
                       data.label_names)
