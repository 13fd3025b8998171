"""Token classification in TFLite (`kbert.tasks.graph.tflite_serving` says what a task
folder's `tflite.py` gives): text in, every position's tag with its UTF-8 byte span out.
Grouping tokens into entities (`aggregation_strategy`) needs variable-length outputs per
text (boolean masks, segment reductions and ragged rows, without TFLite kernels), so the
host does it: `decode.entities` applies the pipeline's rule (`decode.decode`, numpy only) to
one row of the outputs.
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph.tflite_packing import pack_text, pieces_with_offsets, placed
from kbert.tasks.token_classification.decode import strategy_and_ignored


def token_classification(pipe, model, opts, given):
    """A token-classification pipeline's TFLite graph: `text` string [B] -> every position's
    tag and its characters: `token_ids`, `tokens` (the vocabulary's pieces), `logits`,
    `probabilities` [B, S, tags], `label_id`, `label` [B, S], `starts`, `ends` (UTF-8 bytes
    of the text; -1 at [CLS], [SEP] and padding), `padding_mask` [B, S]. Every token comes
    back, so `aggregation_strategy` and `ignore_labels` are refused."""
    tflite_serving.word_piece_only(pipe, "token classifier",
                                   "its character spans come from FastBertTokenizer")
    strategy, ignore = strategy_and_ignored(opts)
    if strategy != "none" or ignore != ["O"]:
        raise ValueError(
            f"aggregation_strategy={strategy!r}, ignore_labels={ignore!r}: a TFLite token "
            f"classifier returns every token (grouping needs ops TFLite has no kernel for); "
            f"export without them and group on the host with kbert.pipelines"
            f".tflite_entities.entities(text, outputs, row, label_names, aggregation_strategy=...).")
    tokenizer, length = pipe.tokenizer, pipe.max_length
    fast = tokenizer.tflite_tokenizer()
    vocabulary = tf.constant(list(tokenizer.vocabulary))
    names = tf.constant(list(pipe.source.label_names))

    def serve(text):
        ids, starts, ends = pieces_with_offsets(fast, text)
        features = pack_text(tokenizer, ids, length)
        count = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), length - 2)[:, None]
        logits = run_model(model, features)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"token_ids": features["token_ids"],
                "tokens": tf.gather(vocabulary, features["token_ids"]),
                "logits": logits, "probabilities": tf.nn.softmax(logits),
                "label_id": label_id, "label": tf.gather(names, label_id),
                "starts": placed(starts, 1, count, length),
                "ends": placed(ends, 1, count, length),
                "padding_mask": features["padding_mask"]}

    return fast, {"serving_default": (serve, [STRINGS])}, length


PIPELINES = {"token-classification": token_classification}
