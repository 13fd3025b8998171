"""Checkpoint conversion: Hugging Face, original TF1 and keras-hub checkpoints of BERT, ALBERT,
DistilBERT, ELECTRA and RoBERTa in and out of kbert, and their fine-tuned task models.

    checkpoint = kbert.convert.read("path/to/bert-base-uncased")  # format detected
    model = checkpoint.build(head=None)                            # a kbert BertBackbone
    tokenizer = checkpoint.tokenizer()
    kbert.convert.save_hugging_face(model, "out/", vocabulary=tokenizer)

    classifier = kbert.convert.load("path/to/distilbert-sst2")  # a TextClassifier with labels
    kbert.convert.save_hugging_face(classifier, "out/", vocabulary=tokenizer)

Every reader gives a `Checkpoint` in one common form (Hugging Face names, numpy arrays), so a
model converts from any format to any other through it. Every format finds a family's names,
config translations and hooks in one record, `kbert.convert.families.get(name)`.
"""

from pathlib import Path

from kbert.convert import families, hugging_face, kbert_format, keras_hub, task_heads, tf1
from kbert.convert._checks import CheckpointError
from kbert.convert.checkpoint import Checkpoint
from kbert.convert.task_heads import TaskHead

FORMATS = ("hf", "tf1", "keras_hub", "kbert")
_READERS = {"hf": hugging_face.read, "tf1": tf1.read, "keras_hub": keras_hub.read,
            "kbert": kbert_format.read}


def detect_format(path):
    """"hf", "tf1", "keras_hub" or "kbert" for a checkpoint directory (or a TF1 prefix)."""
    path = Path(path)
    if not path.exists() and not Path(f"{path}.index").exists():
        raise FileNotFoundError(f"Checkpoint {str(path)!r} does not exist.")
    if kbert_format.is_kbert(path):
        return "kbert"
    if keras_hub.is_keras_hub(path):
        return "keras_hub"
    if hugging_face.is_hugging_face(path):
        return "hf"
    if tf1.is_tf1(path):
        return "tf1"
    raise ValueError(
        f"{path} is not a checkpoint kbert can read. Expected a Hugging Face directory "
        "(config.json + model.safetensors or pytorch_model.bin), an original TF1 release "
        "(*.ckpt.index with bert_config.json or albert_config.json; ELECTRA's needs none), a "
        "keras-hub preset directory or a kbert "
        "directory (model.keras + vocab.txt)."
    )


def read(path, format="auto", **kwargs):  # noqa: A002 - "format" is the CLI flag's name too
    """Reads a checkpoint into a `Checkpoint`.

    Args:
        path: the checkpoint directory (or a TF1 checkpoint prefix).
        format: "auto" (detect), or one of `FORMATS`.
        **kwargs: passed to the reader, e.g. `config_path=` for "tf1".
    """
    if format == "auto":
        format = detect_format(path)
    if format not in _READERS:
        raise ValueError(f"Unknown format {format!r}. Allowed: 'auto', {', '.join(FORMATS)}.")
    return _READERS[format](path, **kwargs)


def load(path, head="auto", format="auto", dtype=None, task="auto",  # noqa: A002
         **config_overrides):
    """The kbert model of a checkpoint.

    A fine-tuned checkpoint (a Hugging Face `*ForSequenceClassification`,
    `*ForTokenClassification` or `*ForQuestionAnswering`, a sentence-transformers directory, a
    kbert task model) gives its task model: a `TextClassifier` (with `label_names` from
    `id2label` and the `problem_type`; `problem_type_declared=False` where config.json has
    none), `TokenClassifier`, `QuestionAnswerer` or `TextEmbedder` (the directory's pooling,
    normalization and `max_seq_length` as `max_length`). A head tensor that the task model
    does not use is an error. Any other checkpoint gives the backbone or pretrainer that `head`
    asks for: `read(path, format).build(head, ...)`.

    Args:
        path: the checkpoint directory (or a TF1 checkpoint prefix).
        head: "auto" (every pretraining head the checkpoint has), "pretrainer", "mlm" or
            `None`; a `head` other than "auto" asks for the pretraining model, also of a
            fine-tuned checkpoint.
        format: "auto" (detect), or one of `FORMATS`.
        dtype: a Keras dtype policy, e.g. "mixed_bfloat16".
        task: "auto" (the checkpoint's task model, if it holds one); a task that the
            checkpoint must hold: a key of `kbert.tasks.TASKS` or a transformers pipeline
            name ("text-classification", "ner", "question-answering", "sentence-embeddings"),
            else ValueError naming the architecture found and the task it serves; or `None`
            (never a task model: the encoder of a fine-tuned checkpoint).
        **config_overrides: `dropout`, `attention_dropout`, `initializer_range`,
            `activation`, or a `max_sequence_length` no longer than the checkpoint's.

    The tokenizer: `load_tokenizer(path)` (or `read(path).tokenizer()`).
    """
    checkpoint = read(path, format)
    if task is None or (task == "auto" and (checkpoint.task is None or head != "auto")):
        return checkpoint.build(head=head, dtype=dtype, **config_overrides)
    if head != "auto":
        raise ValueError(f"head={head!r} asks for a pretraining model and task={task!r} for a "
                         "task model: give one of them.")
    return checkpoint.build_task(task, dtype=dtype, **config_overrides)


def load_tokenizer(path, format="auto"):  # noqa: A002
    """The checkpoint's tokenizer: WordPiece (its vocab.txt and casing), ALBERT's
    SentencePiece (spiece.model) or RoBERTa's byte-level BPE (vocab.json + merges.txt)."""
    return read(path, format).tokenizer()


def save_kbert(model, path, vocabulary=None, lowercase=True):
    """Writes a kbert model (also a task model) as a kbert directory (model.keras, vocab.txt)."""
    return kbert_format.write(Checkpoint.from_model(model, vocabulary, lowercase), path)


def save_hugging_face(model, path, vocabulary=None, lowercase=True):
    """Writes a kbert model as a Hugging Face directory (config.json, model.safetensors, vocab).

    A task model is written as transformers' class of it (`BertForSequenceClassification`
    with `id2label`, `label2id` and, where declared, `problem_type`;
    `*ForTokenClassification`; `*ForQuestionAnswering`), a `TextEmbedder` as a
    sentence-transformers directory (modules.json, 1_Pooling/, 2_Normalize/ around the base
    model; its `max_length` as `max_seq_length`). `vocabulary` is a
    `WordPieceTokenizer`, `SentencePieceTokenizer` or `BytePairTokenizer`, a vocab.txt path
    or a list of tokens.
    """
    return hugging_face.write(Checkpoint.from_model(model, vocabulary, lowercase), path)


__all__ = ["FORMATS", "Checkpoint", "CheckpointError", "TaskHead", "detect_format", "load", "load_tokenizer",
           "read", "save_hugging_face", "save_kbert", "task_heads"]
