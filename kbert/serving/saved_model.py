"""SavedModels with the tokenizer inside: raw strings in, model outputs out.

The SavedModel needs only TensorFlow and tensorflow-text to load (`import tensorflow_text`
registers the tokenizer's ops); not kbert, not Keras, not keras-hub. Tokenization, packing
into [CLS] A [SEP] (B [SEP]), truncation and padding all run inside the graph.
"""

import re

import keras
import tensorflow as tf

from kbert.models.backbone import Backbone
from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.pretrainer import Pretrainer
from kbert.serving import metadata, writer
from kbert.tasks import registry
from kbert.tasks.task import Task

MASK_TOKEN = "[MASK]"
BACKBONE_OUTPUTS = ("sequence_output", "pooled_output")


def _check(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")


def tokenize_with_masks(tokenizer, text):
    """Wordpiece ids of `text` [batch], where each literal "[MASK]" becomes the mask id.

    The tokenizer's normaliser would split "[MASK]" into "[", "mask", "]", so the text is
    split on it first and the pieces are joined again around the mask id. A tokenizer whose
    mask takes the whitespace before it along (byte-level BPE: RoBERTa's "<mask>" is
    "Ġword"'s stand-in) gets the text before each mask without its trailing whitespace, or
    that space would be a token of its own ("Ġ") that training never put before a mask.
    """
    if getattr(tokenizer, "left_stripped", ()):
        text = tf.strings.regex_replace(
            text, f"{tokenizer.left_strip_class}+{re.escape(MASK_TOKEN)}", MASK_TOKEN)
    pieces = tf.strings.split(text, sep=MASK_TOKEN)  # [batch, (masks + 1)]
    ids = tokenizer.tokenize(pieces.flat_values)  # [pieces, (wordpieces)]
    per_row = pieces.row_lengths()
    index_in_row = tf.ragged.range(per_row).flat_values
    last_in_row = tf.repeat(per_row - 1, per_row)
    masks_after = tf.cast(index_in_row < last_in_row, tf.int64)  # 1 after all but the last
    mask_ids = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(masks_after)], tf.constant(tokenizer.mask_id, tf.int32)),
        masks_after,
    )
    joined = tf.concat([ids, mask_ids], axis=1)
    return tf.RaggedTensor.from_row_lengths(joined, per_row).merge_dims(1, 2)


def _backbone_of(model):
    if isinstance(model, Backbone):
        return model
    if isinstance(model, Pretrainer) and isinstance(getattr(model, "backbone", None),
                                                    Backbone):
        return model.backbone
    raise TypeError(
        f"export_saved_model takes a backbone (BertBackbone, AlbertBackbone, ...) or a "
        f"pretrainer with one (BertPretrainer, ElectraPretrainer, ...), or a task model "
        f"(kbert.tasks); got "
        f"{type(model).__name__}."
    )


def export_saved_model(model, path, tokenizer, sequence_length=None, top_k=5, max_masks=8,
                       write_vocabulary=True, *, label_names=None, tag_scheme=None,
                       version_2=None, null_threshold=None, doc_stride=None,
                       max_answer_length=None, max_question_length=None, n_best=None):
    """Writes a SavedModel for TensorFlow Serving and plain `tf.saved_model.load`.

    A fine-tuned task model (`kbert.tasks`) gets its own signatures instead, which return
    predictions (see `kbert.serving.task_signatures` and below); a backbone or a pretrainer
    gets these:

    Signatures (inputs -> outputs):
      - `serving_default`: `text` (string [batch]) -> the backbone's `sequence_output`
        [batch, sequence_length, hidden] and `pooled_output` [batch, hidden] (not for
        DistilBERT, which has no pooler), and the `padding_mask` [batch, sequence_length]
        that says which positions are text;
      - `serving_pairs`: `text_a`, `text_b` (string [batch] each) -> the same, for sentence
        pairs packed as [CLS] A [SEP] B [SEP];
      - `serving_ids`: `token_ids`, `segment_ids`, `padding_mask` (int32 [batch, length];
        no `segment_ids` for DistilBERT) -> the backbone's outputs (batched or TPU serving,
        ids made elsewhere);
      - `fill_mask` (a `BertPretrainer` or its subclasses: a masked-LM head on the
        backbone): `text` with "[MASK]" in it ->
        `tokens` (string [batch, max_masks, top_k]), `token_ids` (int32, same shape),
        `scores` (float32 softmax probabilities, same shape) for each mask in order, and
        `num_masks` (int32 [batch]). Rows past `num_masks` hold "", -1 and 0.

    Text longer than `sequence_length` wordpieces is truncated (pairs round-robin).

    Task models (strings [batch] in; padded outputs hold "", -1 or 0):
      - `TextClassifier`: `serving_default` (`text`) and `serving_pairs` (`text_a`,
        `text_b`; any classifier takes both: use the form it was trained on) ->
        `label` (string [batch], the most probable class's name), `label_id` (int32),
        `probabilities` ([batch, classes]: softmax, or a sigmoid per class for
        "multi_label"), `logits`; "multi_label" adds `labels` (string [batch, classes]: the
        names of the classes over 0.5 in class order, then "") and `num_labels`;
        "regression" gives only `score` (float32 [batch]). `serving_ids` gives the same.
      - `TokenClassifier`: `serving_default` (`text`) -> the entities (`entity_types`,
        `entity_texts` string [batch, entities], `entity_starts` / `entity_ends` int32
        code-point offsets into the text, `entity_scores` (the mean over the entity's
        words of the winning tag's probability), `num_entities` [batch]) and the words
        (`words`, `word_starts`, `word_ends`, `word_tags`, `word_scores` [batch, words],
        `num_words`); a word cut off by `sequence_length` has the tag "".
        `serving_ids` -> `logits` [batch, length, tags].
      - `QuestionAnswerer`: `serving_default` (`question`, `context`) -> `answer` (string
        [batch], `context[start:end]`), `score` (start + end logit), `start`, `end`
        (int32 code points); with `version_2`, `null_score`, and "" (0, 0) when the null
        score wins. `serving_ids` -> `start_logits`, `end_logits` [batch, length].
      - `TextEmbedder`: `serving_default` (`text`) -> `embedding` [batch, hidden];
        `serving_ids` the same.
      - `ExtractiveSummarizer`: `serving_default` (`text`: documents) -> `sentences`,
        `scores`, `sentence_ids`, `num_sentences`, `summary_text`
        (`kbert.tasks.extractive_summarization.serving`); `serving_ids` -> `logits` and
        `scores` (their sigmoid) [batch, length], read at each sentence's [CLS].

    Args:
        model: a backbone, or a pretrainer: its backbone is exported (for
            `ElectraPretrainer` the discriminator), and a `BertPretrainer`'s masked-LM head
            adds `fill_mask`; or a task model (`TextClassifier`, `TokenClassifier`,
            `QuestionAnswerer`, `TextEmbedder`).
        path: the SavedModel directory.
        tokenizer: the model's `kbert.tokenizers.WordPieceTokenizer`, ALBERT's
            `SentencePieceTokenizer` or RoBERTa's `BytePairTokenizer`.
        sequence_length: padded length of the string signatures (default: the model's
            `max_sequence_length`).
        top_k, max_masks: the shape of `fill_mask`'s outputs.
        write_vocabulary: also write the tokenizer's `vocab.txt` (`spiece.model` for a
            `SentencePieceTokenizer`, `vocab.json` + `merges.txt` for a `BytePairTokenizer`)
            beside `saved_model.pb`.
        label_names: `TextClassifier` and `TokenClassifier`: the class / tag names (default:
            the model's `label_names`; a classifier without them says "LABEL_<i>").
        tag_scheme: `TokenClassifier`: "IOB2" (the default), "BIO", "IOB1", "BIOES",
            "IOBES" or "BILOU", as `kbert.tasks.token_classification.decode.decode_entities`.
        version_2, null_threshold, doc_stride, max_answer_length, max_question_length, n_best:
            `QuestionAnswerer`: as `kbert.tasks.question_answering`'s
            `encode_questions` and `decode_answers` (defaults False, 0.0, 128, 30, 64, 20).
    """
    task_options = dict(label_names=label_names, tag_scheme=tag_scheme, version_2=version_2,
                        null_threshold=null_threshold, doc_stride=doc_stride,
                        max_answer_length=max_answer_length,
                        max_question_length=max_question_length, n_best=n_best)
    is_task = isinstance(model, Task)
    backbone = model.backbone if is_task else _backbone_of(model)
    config = backbone.config
    sequence_length = config.max_sequence_length if sequence_length is None else sequence_length
    _check("sequence_length", sequence_length, 4)
    if sequence_length > config.max_sequence_length:
        raise ValueError(
            f"sequence_length={sequence_length} is longer than the model's "
            f"max_sequence_length={config.max_sequence_length}."
        )
    _check("top_k", top_k, 1)
    _check("max_masks", max_masks, 1)
    if tokenizer.vocabulary_size != config.vocabulary_size:
        raise ValueError(
            f"The tokenizer has {tokenizer.vocabulary_size} tokens but the model's "
            f"vocabulary_size is {config.vocabulary_size}."
        )
    top_k = min(top_k, config.vocabulary_size)
    files = tokenizer if write_vocabulary else None
    if is_task:
        from kbert.serving.task_signatures import task_archive

        archive = task_archive(model, tokenizer, sequence_length, **task_options)
        return writer.saved_model(archive, path, task_metadata(
            model, tokenizer, sequence_length, label_names,
            {k: v for k, v in task_options.items() if v is not None}), files)
    given = [name for name, value in task_options.items() if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)}: for task models (kbert.tasks), not a "
                         f"{type(model).__name__}.")

    def encode(inputs):
        outputs = backbone({name: inputs[name] for name in backbone.input}, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in BACKBONE_OUTPUTS
                if name in outputs}

    def serve_text(text):
        inputs = tokenizer.pack([tokenizer.tokenize(text)], sequence_length)
        return {**encode(inputs), "padding_mask": inputs["padding_mask"]}

    def serve_pairs(text_a, text_b):
        inputs = tokenizer.pack([tokenizer.tokenize(text_a), tokenizer.tokenize(text_b)],
                      sequence_length)
        return {**encode(inputs), "padding_mask": inputs["padding_mask"]}

    def serve_ids(token_ids, segment_ids, padding_mask):
        return encode({"token_ids": token_ids, "segment_ids": segment_ids,
                       "padding_mask": padding_mask})

    def serve_ids_without_segments(token_ids, padding_mask):
        return encode({"token_ids": token_ids, "padding_mask": padding_mask})

    string_batch = tf.TensorSpec([None], tf.string)
    ids_batch = tf.TensorSpec([None, None], tf.int32)
    archive = keras.export.ExportArchive()
    archive.track(backbone)
    archive.track(tokenizer)
    archive.add_endpoint("serving_default", serve_text, [string_batch])
    archive.add_endpoint("serving_pairs", serve_pairs, [string_batch, string_batch])
    if "segment_ids" in backbone.input:
        archive.add_endpoint("serving_ids", serve_ids, [ids_batch, ids_batch, ids_batch])
    else:
        archive.add_endpoint("serving_ids", serve_ids_without_segments, [ids_batch, ids_batch])

    if isinstance(model, BertPretrainer):
        vocabulary = tf.constant(tokenizer.vocabulary)

        def fill_mask(text):
            inputs = tokenizer.pack([tokenize_with_masks(tokenizer, text)], sequence_length)
            is_mask = tf.equal(inputs["token_ids"], tokenizer.mask_id)
            positions = tf.ragged.boolean_mask(
                tf.broadcast_to(tf.range(sequence_length), tf.shape(is_mask)), is_mask
            )
            num_masks = tf.minimum(tf.cast(positions.row_lengths(), tf.int32), max_masks)
            positions = positions[:, :max_masks].to_tensor(0, shape=[None, max_masks])
            features = {name: inputs[name] for name in model.input if name in inputs}
            outputs = model({**features, "mask_positions": positions}, training=False)
            probabilities = tf.nn.softmax(tf.cast(outputs["mlm_logits"], tf.float32))
            scores, ids = tf.math.top_k(probabilities, k=top_k)
            present = tf.sequence_mask(num_masks, max_masks)[:, :, None]
            ids = tf.where(present, ids, -1)
            return {
                "tokens": tf.where(present, tf.gather(vocabulary, tf.maximum(ids, 0)), ""),
                "token_ids": ids,
                "scores": tf.where(present, scores, 0.0),
                "num_masks": num_masks,
            }

        archive.track(model)
        archive.add_endpoint("fill_mask", fill_mask, [string_batch])

    meta = metadata.describe(
        runtime="saved_model", task=getattr(registry.of_model(model), "name", "backbone"),
        model="backbone",
        max_length=config.max_sequence_length, tokenizer=tokenizer,
        options={"top_k": top_k, "max_masks": max_masks}
        if isinstance(model, BertPretrainer) else {}, sequence_length=sequence_length)
    return writer.saved_model(archive, path, meta, files)


def task_metadata(model, tokenizer, sequence_length, label_names=None, options=None):
    """The export.json of a task model's kbert signatures (`task_archive`): its task, its
    label names and problem type (None where a one-output classifier states none, which
    transformers' pipeline scores by a sigmoid), the longest input (the model's; an
    extractive summarizer's the export's `sequence_length`, the windows its documents are
    laid out in, with its `windows` and `segments`)."""
    from kbert.tasks.graph.signatures import label_names_of

    record = registry.of_model(model)
    problem_type = getattr(model, "problem_type", None)
    if problem_type == "regression" and not model.problem_type_declared:
        problem_type = None
    names = None
    if record.labelled and getattr(model, "problem_type", None) != "regression":
        names = label_names_of(model, label_names)
    extra = {}
    max_length = model.backbone.config.max_sequence_length
    if record.name == "extractive_summarizer":
        extra = {"windows": getattr(model, "windows", "all"),
                 "segments": getattr(model, "segments", "sentence")}
        max_length = sequence_length
    return metadata.describe(runtime="saved_model", task=record.name, model=record.name,
                             label_names=names, problem_type=problem_type,
                             max_length=max_length, options=options, tokenizer=tokenizer,
                             sequence_length=sequence_length, **extra)
