"""The question answerer's preprocessor: questions and contexts -> windows of token ids,
SQuAD-form answers -> each window's start and end positions."""

import keras
import numpy as np

from kbert.layers import _utils
from kbert.tasks import preprocessor as base
from kbert.tasks.question_answering.data import QuestionExample, check_question
from kbert.tasks.question_answering.features import encode_questions

PREPROCESSOR = "QuestionAnswererPreprocessor"
QUESTION, CONTEXT = "question", "context"


def _answers(answer, i):
    """SQuAD's answer forms -> ((text, start), ...): {"text": [...], "answer_start": [...]}
    (SQuAD's and the `datasets` library's), {"text": str, "answer_start": int}, a list of
    such dicts, or None / an empty list (no answer: SQuAD 2.0)."""
    if answer is None:
        return ()
    if isinstance(answer, dict):
        texts, starts = answer.get("text"), answer.get("answer_start")
        if isinstance(texts, str):
            texts, starts = [texts], [starts]
        if texts is None or starts is None or len(texts) != len(starts):
            raise ValueError(f"answer {i}: expected {{'text': [...], 'answer_start': [...]}} "
                             f"of equal lengths, got {answer!r}.")
        return tuple(zip(texts, (int(s) for s in starts)))
    if isinstance(answer, (list, tuple)):
        return tuple(pair for item in answer for pair in _answers(item, i))
    raise ValueError(f"answer {i}: expected SQuAD's {{'text', 'answer_start'}}, got "
                     f"{answer!r}.")


@keras.saving.register_keras_serializable(package="kbert")
class QuestionAnswererPreprocessor(base.Preprocessor):
    """Questions with their contexts -> one row per window of the context (`encode_questions`:
    a context longer than a window is read in windows overlapping by `doc_stride` pieces).

    `x`: {"question": [...], "context": [...]} or a list of (question, context) pairs. `y`:
    per question, SQuAD's answers ({"text": [...], "answer_start": [...]}: characters into
    the context), or None / an empty list for no answer (SQuAD 2.0). A window that does not
    hold the whole answer is trained toward [CLS], as BERT's run_squad.py does. `predict`
    gives `start_logits` and `end_logits` per window (`encode(x).rows_of`: each window's
    question).

    Args:
        doc_stride: context pieces a window repeats from the one before; `None`: the
            default for the longest question (128 at sequence_length 384).
        max_question_length: questions keep their first this many pieces.
    """

    per_token = True
    default_sequence_length = 384  # SQuAD's, as BERT's run_squad.py

    def __init__(self, tokenizer=None, sequence_length=None, doc_stride=None,
                 max_question_length=64, **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        self.doc_stride = None if doc_stride is None else _utils.check_positive_int(
            "doc_stride", doc_stride)
        self.max_question_length = _utils.check_positive_int("max_question_length",
                                                             max_question_length)

    def encode(self, x, y=None, task=None):
        tokenizer = self._check_tokenizer()
        if isinstance(x, dict):
            if set(x) != {QUESTION, CONTEXT}:
                raise ValueError(f"Questions are given as {{{QUESTION!r}: [...], "
                                 f"{CONTEXT!r}: [...]}}; got the keys {sorted(x)}.")
            questions, contexts = base.as_list(x[QUESTION], QUESTION), base.as_list(
                x[CONTEXT], CONTEXT)
        else:
            pairs = base.as_list(x, "x")
            if not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
                raise ValueError("Give questions as {'question': [...], 'context': [...]} or "
                                 "a list of (question, context) pairs.")
            questions, contexts = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(questions) != len(contexts):
            raise ValueError(f"{len(questions)} questions but {len(contexts)} contexts.")
        if not questions:
            raise ValueError("No questions: give at least one question with its context.")
        if isinstance(y, dict):  # columns, as a tf.data dataset of SQuAD rows gives them
            y = [dict(zip(y, row)) for row in zip(*y.values())]
        answers = [None] * len(questions) if y is None else base.as_list(y, "y")
        if len(answers) != len(questions):
            raise ValueError(f"{len(questions)} questions but {len(answers)} answers: give "
                             "one (or None) per question.")
        examples = []
        for i, (question, context, answer) in enumerate(zip(questions, contexts, answers)):
            pairs = _answers(answer, i)
            example = QuestionExample(str(i), question, context, pairs,
                                      is_impossible=y is not None and not pairs,
                                      origin=f"question {i}")
            check_question(example, "x")
            examples.append(example)
        encoded = encode_questions(examples, tokenizer, self.sequence_length, self.doc_stride,
                                   self.max_question_length)
        encoded.version_2 = any(e.is_impossible for e in examples)
        labels = encoded.labels
        targets = None if labels is None else ({"start_logits": labels["start_positions"],
                                                "end_logits": labels["end_positions"]},)
        rows_of = np.asarray([w.example_index for w in encoded.windows], np.int32)
        return base.Encoded(encoded.features, targets, rows_of=rows_of, details=encoded)

    def get_config(self):
        return {**super().get_config(), "doc_stride": self.doc_stride,
                "max_question_length": self.max_question_length}
