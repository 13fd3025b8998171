"""The host side of a TFLite token classifier (`pipe.export_tflite` of a token-classification
pipeline, or `kbert.export.export_tflite` of a `TokenClassifier`): the model returns every
token's tag, probabilities and UTF-8 byte span; `entities` turns one row of those outputs
into the pipeline's answer for any `aggregation_strategy`, by the pipeline's own rule
(`token_classification.decode`: Python and numpy only, about 60 lines an app can port).
Grouping is not in the model: it needs variable-length outputs per text (boolean masks,
segment reductions, ragged rows), which TFLite has no kernels for."""

import numpy as np

from kbert.tokenizers.decoding import DECODER_CLEAN_UP as _DECODER_CLEAN_UP
from kbert.tokenizers.decoding import replace_all as _replace_all
from kbert.pipelines.token_classification import STRATEGIES, decode


def char_offset(text, byte_offset):
    """A UTF-8 byte offset into `text` -> its character (code point) offset; -1 stays -1."""
    if byte_offset < 0:
        return -1
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def entities(text, outputs, row=0, label_names=None, aggregation_strategy="none",
             ignore_labels=("O",), unk_token="[UNK]"):
    """The token-classification pipeline's answer for `text` from row `row` of a TFLite
    token classifier's outputs (numpy; the rule is `kbert.pipelines.token_classification
    .decode`, Python only, which an app can port): a list of dicts as `pipe(text,
    aggregation_strategy=...)` gives (`entity`, `score`, `index`, `word`, `start`, `end`;
    grouped: `entity_group` instead of `entity` and no `index`)."""
    if aggregation_strategy not in STRATEGIES:
        raise ValueError(f"Unknown aggregation_strategy {aggregation_strategy!r}. Allowed: "
                         f"{', '.join(STRATEGIES)}.")
    if label_names is None:
        raise ValueError("entities needs the model's label_names (a name per tag).")
    starts = np.array([char_offset(text, b) for b in outputs["starts"][row]])
    ends = np.array([char_offset(text, b) for b in outputs["ends"][row]])
    tokens = [None if s < 0 else t.decode("utf-8")
              for s, t in zip(starts, outputs["tokens"][row])]
    ids = [-1 if t != unk_token else 0 for t in tokens]  # only "is it [UNK]" is read
    offsets = np.stack([np.maximum(starts, 0), np.maximum(ends, 0)], axis=1)

    def to_string(pieces):
        out = []
        for i, piece in enumerate(pieces):
            if i:
                piece = piece[2:] if piece.startswith("##") else " " + piece
            out.append(_replace_all(piece, _DECODER_CLEAN_UP))
        return "".join(out)

    return decode(text, tokens, ids, np.asarray(outputs["logits"][row]), offsets,
                  list(label_names), aggregation_strategy, list(ignore_labels), 0, True,
                  to_string)


def answer(context, outputs, row=0, top_k=1, handle_impossible_answer=False,
           max_answer_len=15, align_to_words=True):
    """The question-answering pipeline's answer from row `row` of a TFLite question
    answerer's outputs (`start_logits`, `end_logits`, `tokens`, `starts`, `ends`), by the
    pipeline's rule (`kbert.tasks.question_answering.decode.answer`, numpy only): on the
    one window the model reads, so it equals `pipe(question=..., context=context, ...)` when the context
    fits in it. Words (`align_to_words`) are WordPiece's: a piece and the "##" pieces
    after it."""
    from kbert.tasks.question_answering.decode import answer as decode_answer, word_spans

    starts = np.array([char_offset(context, b) for b in outputs["starts"][row]], np.int32)
    ends = np.array([char_offset(context, b) for b in outputs["ends"][row]], np.int32)
    allowed = (starts >= 0).astype(np.int64)
    allowed[0] = 1
    offsets = np.stack([np.maximum(starts, 0), np.maximum(ends, 0)], axis=1)
    inside = np.flatnonzero(starts >= 0)
    words = np.full(len(starts), -1, np.int64)
    words[inside] = np.cumsum([not t.startswith(b"##") for t in outputs["tokens"][row][inside]])
    word_starts, word_ends = word_spans(words, offsets)
    window = (np.asarray(outputs["start_logits"][row], np.float32),
              np.asarray(outputs["end_logits"][row], np.float32), allowed, offsets,
              word_starts, word_ends)
    return decode_answer(context, [window], top_k, handle_impossible_answer, max_answer_len,
                         align_to_words)
