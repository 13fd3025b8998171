"""Question answering's fine-tuning hooks, as `kbert.training.finetuning_tasks` calls them:
read a split, encode it into windows, build the model, the labels `fit` takes, and the
SQuAD scores of the model's outputs; and its flags (`FLAGS`, checked by `check`). `config`
is a `kbert.training.FinetuningConfig` (read by its fields: `sequence_length` and this
task's flags)."""

from typing import Optional

from kbert.tasks.question_answering import TASK
from kbert.tasks.question_answering.data import read as read_split
from kbert.tasks.question_answering.features import default_doc_stride, encode_questions
from kbert.tasks.question_answering.metrics import squad_scores
from kbert.tasks.record import Flag

# How its batches are cut (`kbert.training.finetuning_tasks`): windows fill --sequence_length
# by construction (a question and as much context as fits), so no grouping by length.
BY_LENGTH = False
PER_TOKEN = True
# --train_data / --validation_data of this task.
DATA = ("squad/v1.1, squad/v2.0", "SQuAD JSON")
# Its flags (`kbert.tasks.record.Flag`).
FLAGS = {
    "doc_stride": Flag(
        Optional[int], None, "question_answerer: context pieces a window repeats from the one "
        "before, as transformers' doc_stride (an integer >= 0, smaller than --sequence_length "
        "minus --max_question_length minus 4); unset: min(--sequence_length // 2, 128), as "
        "transformers' pipeline, lowered under that bound.", minimum=0),
    "max_question_length": Flag(int, 64, "question_answerer: question pieces kept (an integer "
                                ">= 1).", minimum=1),
    "max_answer_length": Flag(int, 30, "question_answerer: longest answer in pieces (an "
                              "integer >= 1).", minimum=1),
    "n_best": Flag(int, 20, "question_answerer: start and end candidates searched per window "
                   "(an integer >= 1).", minimum=1),
    "null_threshold": Flag(float, 0.0, "question_answerer on SQuAD 2.0: answer nothing when the "
                           "[CLS] score beats the best span by more than this."),
}


def check(config):
    """A ValueError naming the flags where the question leaves no room for the context or
    --doc_stride does not fit the window."""
    if config.max_question_length > config.sequence_length - 4:
        raise ValueError(
            f"--max_question_length={config.max_question_length} leaves no room for the "
            f"context in --sequence_length={config.sequence_length}: it must be at most "
            f"{config.sequence_length - 4} ([CLS], two [SEP] and one context piece).")
    if config.doc_stride is not None:
        room = max(1, config.sequence_length - config.max_question_length - 4)
        if config.doc_stride >= room:
            raise ValueError(
                f"--doc_stride={config.doc_stride} (the context pieces a window repeats from "
                f"the one before) must be smaller than the window's context length after a "
                f"question of --max_question_length={config.max_question_length} pieces, "
                f"{room} (--sequence_length={config.sequence_length} minus the question and "
                "up to four special tokens). Lower --doc_stride or --max_question_length, or "
                "raise --sequence_length.")


def doc_stride(config):
    """--doc_stride, or its default for --sequence_length and --max_question_length: what
    the run's windows and its export use."""
    if config.doc_stride is not None:
        return config.doc_stride
    return default_doc_stride(config.sequence_length, config.max_question_length, 4)


def read(config, spec, split, label_names=None):
    """'tfds:squad/v1.1', 'tfds:squad/v2.0' (at `split`) or a SQuAD JSON file."""
    return read_split(spec, split)


def encode(config, data, tokenizer):
    return encode_questions(data, tokenizer, config.sequence_length, doc_stride(config),
                            config.max_question_length)


def build(config, backbone, train):
    return TASK.build(backbone)


def fit_labels(labels):
    """The encoded labels -> what follows the features in `fit`: the labels keyed by the
    model's outputs."""
    return ({"start_logits": labels["start_positions"],
             "end_logits": labels["end_positions"]},)


def scores(config, split, outputs):
    """SQuAD exact match and F1 (v1.1 or v2.0, as the split's data) of the model's
    `outputs` (`start_logits`, `end_logits`, a row per window of `split.encoded`)."""
    answers = split.encoded.decode(
        outputs["start_logits"], outputs["end_logits"], n_best=config.n_best,
        max_answer_length=config.max_answer_length, null_threshold=config.null_threshold)
    version = "v2.0" if split.data.version_2 else "v1.1"
    predictions = {qid: answer["text"] for qid, answer in answers.items()}
    references = {example.id: [] if example.is_impossible else [a[0] for a in example.answers]
                  for example in split.data.examples}
    return squad_scores(predictions, references, version=version)


def metric(config, train):
    """The metric that picks the best epoch."""
    return "f1"


def export_options(config, train):
    """The pipeline options fixed in `--export_dir`'s SavedModel (`model.export`): the run's
    windows and answer lengths; SQuAD 2.0 data allows the empty answer. (`--null_threshold`
    and `--n_best` are run_squad.py's scoring, which transformers' pipeline has no option
    for: the export answers by the pipeline's rule.)"""
    return {"handle_impossible_answer": bool(train.data.version_2),
            "doc_stride": doc_stride(config), "max_seq_len": config.sequence_length,
            "max_answer_len": config.max_answer_length,
            "max_question_len": config.max_question_length}
