"""Texts through a backbone, with every layer's hidden states and attention probabilities
kept per text (`Inspection`), as transformers' `output_hidden_states` / `output_attentions`
give them, trimmed to the text's own tokens.

    inspector = Inspector(loaded.model, loaded.tokenizer)
    seen = inspector.inspect(["The cat sat on the mat."])[0]
    seen.tokens, seen.attentions.shape   # ["[CLS]", "the", ...], (layers, heads, S, S)

Each text is packed as the task models pack one text ([CLS] text [SEP]; RoBERTa's <s> ...
</s>) and cut to `max_length` tokens. Tokens come with their characters in the text (the
tokenizer's `tokenize_with_offsets`), so a label is the text the token covers and the pieces
of a word can be merged back into the word (`merge_words`, as Clark et al. 2019 do: the
attention *to* a word is the sum over its pieces, the attention *from* a word the mean).
"""

import dataclasses
import unicodedata
from typing import Optional

import numpy as np

from kbert.tokenizers.packing import packed_row

# What each token is, for the statistics: the first special token, the separators, a token
# whose text is punctuation only, any other token.
KINDS = ("cls", "sep", "punctuation", "token")


def is_punctuation(text):
    """Whether `text` is one or more Unicode punctuation characters (categories P*)."""
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


@dataclasses.dataclass
class Inspection:
    """One text as the model saw it.

    Attributes:
        text: the text.
        tokens: a label per token: the special token's literal, else the characters of the
            text the token covers ("##" before a piece that continues a word).
        kinds: per token one of `KINDS`.
        words: int32 [S]: the index of each token's word in the text; -1 for a special token.
        offsets: int32 [S, 2]: each token's (start, end) characters in `text` ((0, 0) for a
            special token).
        attentions: float32 [layers, heads, S, S] (query, key) or None: each layer's
            attention probabilities, every row summing to 1.
        hidden_states: float32 [layers + 1, S, H] or None: the embeddings' output, then
            each layer's.
        truncated: whether the text was cut to fit `max_length` tokens.
    """

    text: str
    tokens: list
    kinds: list
    words: np.ndarray
    offsets: np.ndarray
    attentions: Optional[np.ndarray] = None
    hidden_states: Optional[np.ndarray] = None
    truncated: bool = False

    @property
    def num_layers(self):
        source = self.attentions if self.attentions is not None else self.hidden_states
        return len(source) - (self.attentions is None)

    @property
    def num_heads(self):
        return self.attentions.shape[1]


def _labels(text, ids, offsets, words, vocabulary):
    """Per text token: the characters it covers, "##" first where it continues the word of
    the token before; the vocabulary's token where it covers no character."""
    labels = []
    for i, (start, end) in enumerate(offsets):
        label = text[start:end] or vocabulary[ids[i]]
        labels.append(("##" + label) if i and words[i] == words[i - 1] and words[i] >= 0
                      else label)
    return labels


class Inspector:
    """Runs texts through `backbone` (any kbert backbone) with its internals.

    Args:
        backbone: a kbert backbone (`kbert.load(spec, head=None).model`).
        tokenizer: its kbert tokenizer.
        max_length: the most tokens a text keeps, special tokens included (default: the
            backbone's `max_sequence_length`); longer texts are cut (`Inspection.truncated`).
        batch_size: texts per model call (grouped by length).
    """

    def __init__(self, backbone, tokenizer, max_length=None, batch_size=16):
        if not hasattr(backbone, "with_internals") or hasattr(backbone, "backbone"):
            raise TypeError(f"Inspector takes a kbert backbone (kbert.load(spec, head=None)"
                            f".model); got a {type(backbone).__name__}, which "
                            + ("is built on one: pass its .backbone."
                               if hasattr(backbone, "backbone") else "has no with_internals."))
        self.backbone, self.tokenizer = backbone, tokenizer
        limit = getattr(getattr(backbone, "config", None), "max_sequence_length", None)
        self.max_length = int(max_length or limit or 512)
        if self.max_length < 3:
            raise ValueError(f"max_length={max_length!r} leaves no room for a token beside "
                             "the 2 special tokens; it must be at least 3.")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}.")
        self.batch_size = int(batch_size)
        self._models = {}

    def _model(self, hidden_states, attentions):
        key = (hidden_states, attentions)
        if key not in self._models:
            self._models[key] = self.backbone.with_internals(hidden_states=hidden_states,
                                                             attentions=attentions)
        return self._models[key]

    def encode(self, texts):
        """Per text: (ids, offsets, words) of its tokens, no special tokens yet."""
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"Expected a list of texts (strings); got {texts!r:.80}.")
        return [(e.ids, e.offsets, e.words)
                for e in self.tokenizer.tokenize_with_offsets(list(texts))]

    def inspect(self, texts, hidden_states=True, attentions=True, progress=False):
        """`texts` (strings) -> one `Inspection` each, in order."""
        return list(self.iterate(texts, hidden_states, attentions, progress))

    def iterate(self, texts, hidden_states=True, attentions=True, progress=False):
        """`inspect` one batch at a time (an `Inspection` per text, in order), so that a
        corpus's attentions need not all be held at once."""
        if isinstance(texts, str):
            raise TypeError(f"Expected a list of texts (strings); got the string "
                            f"{texts!r:.80}: wrap it in a list.")
        texts = list(texts)
        return self.iterate_encoded(texts, self.encode(texts), hidden_states, attentions,
                                    progress)

    def iterate_encoded(self, texts, encoded, hidden_states=True, attentions=True,
                        progress=False):
        """`iterate` for texts already tokenized: `encoded` holds per text (ids, offsets,
        words) of its tokens (words: each token's word index)."""
        if not (hidden_states or attentions):
            raise ValueError("Ask for hidden_states, attentions or both.")
        model = self._model(hidden_states, attentions)
        bar = None
        if progress:
            import keras

            bar = keras.utils.Progbar(len(texts), unit_name="text")
        for begin in range(0, len(texts), self.batch_size):
            chunk = range(begin, min(begin + self.batch_size, len(texts)))
            yield from self._batch(model, [texts[i] for i in chunk],
                                   [encoded[i] for i in chunk], hidden_states, attentions)
            if bar is not None:
                bar.add(len(chunk))

    def _batch(self, model, texts, encoded, hidden_states, attentions):
        import keras

        room = self.max_length - 2
        cut = [(np.asarray(ids)[:room], np.asarray(offsets)[:room], np.asarray(words)[:room],
                len(ids) > room) for ids, offsets, words in encoded]
        length = max(len(ids) for ids, _, _, _ in cut) + 2
        tok = self.tokenizer
        rows = [packed_row(ids, None, length, tok.cls_id, tok.sep_id, tok.pad_id)[:3]
                for ids, _, _, _ in cut]
        features = {"token_ids": np.stack([r[0] for r in rows]),
                    "segment_ids": np.stack([r[1] for r in rows]),
                    "padding_mask": np.stack([r[2] for r in rows])}
        outputs = model({name: features[name] for name in model.input}, training=False)
        heads = getattr(getattr(self.backbone, "config", None), "layer_heads", None)
        if "attentions" in outputs and heads is not None and len(set(heads)) > 1:
            raise ValueError(f"The attention analysis lays every layer's heads side by side; "
                             f"this model's layers have {list(heads)} heads (a pruned "
                             f"model's layer_heads). Its hidden states can be inspected.")
        layers = {key: np.stack([keras.ops.convert_to_numpy(x) for x in outputs[key]], 1)
                  for key in ("attentions", "hidden_states") if key in outputs}
        vocabulary = tok.vocabulary
        for row, (text, (ids, offsets, words, truncated)) in enumerate(zip(texts, cut)):
            n = len(ids) + 2
            words = np.concatenate([[-1], words, [-1]]).astype(np.int32)
            offsets = np.concatenate([np.zeros([1, 2]), np.reshape(offsets, [-1, 2]),
                                      np.zeros([1, 2])]).astype(np.int32)
            labels = _labels(text, rows[row][0][:n], offsets, words, vocabulary)
            kinds = ["cls" if i == 0 else "sep" if rows[row][0][i] == tok.sep_id and
                     words[i] < 0 else "punctuation" if is_punctuation(text[s:e]) else "token"
                     for i, (s, e) in enumerate(offsets)]
            yield Inspection(
                text, labels, kinds, words, offsets,
                attentions=(layers["attentions"][row][:, :, :n, :n].astype(np.float32)
                            if attentions else None),
                hidden_states=(layers["hidden_states"][row][:, :n].astype(np.float32)
                               if hidden_states else None),
                truncated=truncated)


def merge_words(inspection):
    """The `Inspection` with the pieces of each word merged into the word (Clark et al.
    2019): attention to a word is the sum of the attention to its pieces, attention from a
    word the mean of its pieces' rows (rows still sum to 1); a word's hidden state is the
    mean of its pieces'. Special tokens stay tokens of their own."""
    groups, previous = [], None
    for i, word in enumerate(inspection.words):
        if word >= 0 and word == previous:
            groups[-1].append(i)
        else:
            groups.append([i])
        previous = word
    # [tokens, groups]: 1 where the token belongs to the group.
    member = np.zeros([len(inspection.words), len(groups)], np.float32)
    for g, indices in enumerate(groups):
        member[indices, g] = 1.0
    mean = member / member.sum(0, keepdims=True)
    text = inspection.text
    offsets = np.array([[inspection.offsets[g[0], 0], inspection.offsets[g[-1], 1]]
                        for g in groups], np.int32).reshape([-1, 2])
    tokens = [inspection.tokens[g[0]] if inspection.words[g[0]] < 0 else text[s:e]
              for g, (s, e) in zip(groups, offsets)]
    kinds = [inspection.kinds[g[0]] if inspection.words[g[0]] < 0 else
             "punctuation" if is_punctuation(label) else "token"
             for g, label in zip(groups, tokens)]
    attentions = hidden = None
    if inspection.attentions is not None:
        # from: mean over the group's rows; to: sum over its columns.
        attentions = np.einsum("qg,lnqk,kh->lngh", mean, inspection.attentions, member)
    if inspection.hidden_states is not None:
        hidden = np.einsum("sg,lsh->lgh", mean, inspection.hidden_states)
    return Inspection(text, tokens, kinds, inspection.words[[g[0] for g in groups]], offsets,
                      attentions, hidden, inspection.truncated)
