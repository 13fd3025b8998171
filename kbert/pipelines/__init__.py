"""`kbert.pipeline(task, model=...)`: transformers' pipelines (calls, options and outputs)
on kbert models, so that code written for transformers' pipelines runs unchanged.

    classifier = kbert.pipeline("text-classification", model="path/to/checkpoint")
    classifier("A great movie!", top_k=None)
    # [{'label': 'POSITIVE', 'score': 0.98}, {'label': 'NEGATIVE', 'score': 0.02}]

Tasks: "text-classification" ("sentiment-analysis"), "token-classification" ("ner"),
"question-answering", "zero-shot-classification", "feature-extraction",
"sentence-embeddings", "fill-mask". See each pipeline class for its calls and options.
"""

from kbert.pipelines import batching, sources
from kbert.pipelines.base import InputTooLongError, Pipeline
from kbert.pipelines.feature_extraction import (
    FeatureExtractionPipeline,
    SentenceEmbeddingPipeline,
)
from kbert.pipelines.fill_mask import FillMaskPipeline
from kbert.pipelines.question_answering import QuestionAnsweringPipeline
from kbert.pipelines.text_classification import TextClassificationPipeline
from kbert.pipelines.token_classification import TokenClassificationPipeline
from kbert.pipelines.zero_shot import ZeroShotClassificationPipeline

TASKS = {
    "text-classification": TextClassificationPipeline,
    "token-classification": TokenClassificationPipeline,
    "question-answering": QuestionAnsweringPipeline,
    "zero-shot-classification": ZeroShotClassificationPipeline,
    "feature-extraction": FeatureExtractionPipeline,
    "sentence-embeddings": SentenceEmbeddingPipeline,
    "fill-mask": FillMaskPipeline,
}
# transformers' other names for the same tasks.
ALIASES = {"sentiment-analysis": "text-classification", "ner": "token-classification"}


def pipeline(task, model=None, tokenizer=None, *, trusted=False, **options):
    """A pipeline for `task` on `model`, called as transformers' pipeline of that task.

    Args:
        task: a key of `TASKS` (or of `ALIASES`).
        model: a kbert model object (a task model of `kbert.tasks`, a pretrainer with a
            masked-LM head, a backbone), a checkpoint directory of any format kbert reads
            (`kbert.convert`), a preset name (`kbert.presets`: fill-mask and
            feature-extraction), or an exported SavedModel directory.
        tokenizer: the kbert tokenizer (`kbert.tokenizers`); needed with a model object,
            else read from the checkpoint, preset or SavedModel.
        trusted: for a SavedModel: load it even where `kbert.untrusted.load_saved_model`
            finds operations that a kbert export does not hold.
        **options: the task's options (defaults for every call; a call's own override
            them), and for every task:
            batch_size: sequences per model call (default 32). Inputs run in batches of
                similar length, each padded only to its own longest sequence; results
                come back in input order.
            progress: True / False, or None (default): a Keras progress bar (one step per
                batch) on long lists, from 8 batches on.

    Returns:
        a `Pipeline`: call it on texts (see the task's class).
    """
    name = ALIASES.get(task, task)
    if name not in TASKS:
        raise ValueError(f"Unknown task {task!r}. Available: "
                         f"{', '.join([*TASKS, *ALIASES])}.")
    source = sources.resolve(name, model, tokenizer, trusted=trusted)
    return TASKS[name](source, **options)


__all__ = [
    "ALIASES", "FeatureExtractionPipeline", "FillMaskPipeline", "InputTooLongError",
    "Pipeline", "QuestionAnsweringPipeline", "SentenceEmbeddingPipeline", "TASKS",
    "TextClassificationPipeline", "TokenClassificationPipeline",
    "ZeroShotClassificationPipeline", "batching", "pipeline", "sources",
]
