"""The host side of the TFLite span models: `entities` (a token classifier's,
`kbert.tasks.token_classification.decode.entities`: the pipeline's answer for any
`aggregation_strategy` from one row of the model's outputs), `answer` (a question
answerer's, `kbert.tasks.question_answering.decode.tflite_answer`) and `char_offset` (a
UTF-8 byte offset, as the models give them, to a character offset;
`kbert.tokenizers.alignment.char_offset`)."""

from kbert.tasks.question_answering.decode import tflite_answer as answer
from kbert.tasks.token_classification.decode import entities
from kbert.tokenizers.alignment import char_offset

__all__ = ["answer", "char_offset", "entities"]
