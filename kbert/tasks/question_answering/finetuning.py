"""Question answering's fine-tuning hooks, as `kbert.training.finetuning_tasks` calls them:
read a split, encode it into windows, build the model, the labels `fit` takes, and the
SQuAD scores of the model's outputs. `config` is a `kbert.training.FinetuningConfig` (read
by its fields: `sequence_length`, `qa_doc_stride()`, `max_question_length`, `n_best`,
`max_answer_length`, `null_threshold`)."""

from kbert.tasks.question_answering import TASK
from kbert.tasks.question_answering.data import read as read_split
from kbert.tasks.question_answering.features import encode_questions
from kbert.tasks.question_answering.metrics import squad_scores

# How its batches are cut (`kbert.training.finetuning_tasks`): windows fill --sequence_length
# by construction (a question and as much context as fits), so no grouping by length.
BY_LENGTH = False
PER_TOKEN = True


def read(config, spec, split, label_names=None):
    """'tfds:squad/v1.1', 'tfds:squad/v2.0' (at `split`) or a SQuAD JSON file."""
    return read_split(spec, split)


def encode(config, data, tokenizer):
    return encode_questions(data, tokenizer, config.sequence_length, config.qa_doc_stride(),
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
            "doc_stride": config.qa_doc_stride(), "max_seq_len": config.sequence_length,
            "max_answer_len": config.max_answer_length,
            "max_question_len": config.max_question_length}
