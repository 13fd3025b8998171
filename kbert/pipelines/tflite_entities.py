"""The host side of the TFLite span models: `entities` (a token classifier's,
`kbert.tasks.token_classification.decode.entities`: the pipeline's answer for any
`aggregation_strategy` from one row of the model's outputs), `answer` (a question
answerer's) and `char_offset` (a UTF-8 byte offset, as the models give them, to a
character offset; `kbert.tokenizers.alignment.char_offset`)."""

import numpy as np

from kbert.tokenizers.alignment import char_offset
from kbert.tasks.token_classification.decode import entities

__all__ = ["answer", "char_offset", "entities"]


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
