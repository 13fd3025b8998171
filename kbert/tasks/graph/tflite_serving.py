"""What the task folders' TFLite graphs (`kbert/tasks/<task>/tflite.py`) share: the
pipelines' rules on truncation, the endpoint of one text per row and the WordPiece-only rule
of the graphs that read FastBertTokenizer's offsets.

Each folder's `tflite.py` gives `PIPELINES`: pipeline name -> (pipe, model, opts, given,
**export-only options) -> (the TFLite tokenizer, its endpoints {name: (function, input
specs)}, the length its texts are packed to: the length of `serving_ids`' token ids), which
`kbert.pipelines.exporting` converts and checks. The tokenizer is the pipeline's TFLite twin
(`pipe.tokenizer.tflite_tokenizer()`): a special-token literal typed in a text is text.
"""

from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph.tflite_packing import pack_text


def truncating(pipe, truncation):
    """TFLite cannot fail a call: a pipeline exports with `truncation=True` only."""
    if truncation in (False, None, "do_not_truncate", "only_second"):
        raise ValueError(
            f"truncation={truncation!r}: a TFLite model cannot refuse a text longer "
            f"than the model (TFLite has no assertion op); export with truncation=True, and "
            f"texts longer than {pipe.max_length} tokens are cut.")


def length(pipe, max_length):
    """The tokens a TFLite model cuts texts to: `max_length`, at most the model's."""
    return pipe.max_length if max_length is None else min(max_length, pipe.max_length)


def single_texts(pipe, model, truncation, outputs, max_length=None):
    """(fast, endpoints, length) of a pipeline on single texts (feature extraction, sentence
    embeddings): `text` -> `outputs(model outputs, features)`, cut at `length` tokens."""
    truncating(pipe, truncation)
    fast = pipe.tokenizer.tflite_tokenizer()
    cut = length(pipe, max_length)

    def serve(text):
        features = pack_text(pipe.tokenizer, fast.tokenize(text), cut)
        return outputs(run_model(model, features), features)

    return fast, {"serving_default": (serve, [STRINGS])}, cut


def word_piece_only(pipe, what, why):
    """The pipelines whose TFLite graph reads FastBertTokenizer's offsets take WordPiece
    alone."""
    if not pipe.tokenizer.tflite_offsets:
        raise ValueError(f"Only a WordPiece {what} goes into TFLite ({why}), not one with a "
                         f"{type(pipe.tokenizer).__name__}: export a SavedModel "
                         f"(format='saved_model'), or token ids in "
                         f"(kbert.serving.export_tflite).")
