"""`kbert.pipeline(task, model=...)`: transformers' pipelines (calls, options and outputs)
on kbert models, so that code written for transformers' pipelines runs unchanged.

    classifier = kbert.pipeline("text-classification", model="path/to/checkpoint")
    classifier("A great movie!", top_k=None)
    # [{'label': 'POSITIVE', 'score': 0.98}, {'label': 'NEGATIVE', 'score': 0.02}]

Tasks: "text-classification" ("sentiment-analysis"), "token-classification" ("ner"),
"question-answering", "zero-shot-classification", "feature-extraction" (the backbone's
hidden states, as transformers), "sentence-embeddings" (a `TextEmbedder`'s vector per text),
"fill-mask"; kbert's task names ("text_classifier", ...) open their task's first pipeline.
The names are `kbert.tasks.registry`'s, the one table of tasks. See each pipeline class for
its calls and options.
"""

from kbert.pipelines import batching, sources
from kbert.pipelines.base import InputTooLongError, Pipeline
from kbert.pipelines.feature_extraction import (
    FeatureExtractionPipeline,
    SentenceEmbeddingPipeline,
)
from kbert.pipelines.fill_mask import FillMaskPipeline
from kbert.pipelines.question_answering import QuestionAnsweringPipeline
from kbert.pipelines.summarization import SummarizationPipeline
from kbert.pipelines.text_classification import TextClassificationPipeline
from kbert.pipelines.token_classification import TokenClassificationPipeline
from kbert.pipelines.zero_shot import ZeroShotClassificationPipeline
from kbert.tasks import registry

_CLASSES = {cls.task: cls for cls in (
    TextClassificationPipeline, TokenClassificationPipeline, QuestionAnsweringPipeline,
    ZeroShotClassificationPipeline, FeatureExtractionPipeline, SentenceEmbeddingPipeline,
    FillMaskPipeline, SummarizationPipeline)}
# Pipeline name -> class, for every pipeline of the task table (a KeyError here: a task
# record names a pipeline that has no class).
TASKS = {name: _CLASSES[name] for name in registry.pipeline_names()}
# Every other task name -> the pipeline it opens ("ner" -> "token-classification",
# "text_classifier" -> "text-classification").
ALIASES = {name: registry.pipeline_task(name) for name in registry.names() if name not in TASKS}


def pipeline(task, model=None, tokenizer=None, *, trusted=False, runtime=None, quantize=None,
             **options):
    """A pipeline for `task` on `model`, called as transformers' pipeline of that task.

    Args:
        task: a pipeline name (a key of `TASKS`) or another name of its task
            (`ALIASES`: "sentiment-analysis", "ner", "text_classifier", ...).
        model: a kbert model object (a task model of `kbert.tasks`, a pretrainer with a
            masked-LM head, a backbone), a checkpoint directory of any format kbert reads
            (`kbert.convert`), a preset name (`kbert.presets`: fill-mask and
            feature-extraction), an exported SavedModel directory (the options its
            export fixed are the pipeline's defaults on it) or an ONNX export's directory
            (`kbert.export(..., format="onnx")`, run by ONNX Runtime).
        tokenizer: the kbert tokenizer (`kbert.tokenizers`); needed with a model object,
            else read from the checkpoint, preset, SavedModel or ONNX export.
        trusted: for a SavedModel: load it even where `kbert.untrusted.load_saved_model`
            finds operations that a kbert export does not hold.
        runtime: None (default): the model's own, ONNX Runtime for an ONNX export, else
            TensorFlow; "tensorflow": the Keras model (or a SavedModel); "onnxruntime": a
            kbert model converted to ONNX when the pipeline is made (tf2onnx: seconds for a
            small model, about 45 s for all-MiniLM-L6-v2 on 2 cores) and run by ONNX
            Runtime (`kbert.pipelines.onnx_source`), the tokenizer and the options as on the
            Keras model but `output_hidden_states` / `output_attentions` and
            `jit_compile`. The graph holds the whole attention matrix: no query blocks for
            long inputs (memory quadratic in the length). Needs the extra `onnx`.
        quantize: with ONNX Runtime: None (float32) or "int8" (ONNX Runtime's dynamic
            quantization: faster, answers within a small error of float32's).
        **options: the task's options (defaults for every call; a call's own override
            them), and for every task:
            batch_size: sequences per model call (default 32). Inputs run in batches of
                similar length, each padded only to its own longest sequence; results
                come back in input order.
            progress: True / False, or None (default): a Keras progress bar (one step per
                batch) on long lists, from 8 batches on.
            jit_compile: True: the model's call compiled by XLA, each batch padded up to a
                multiple of 16 tokens (`model_source.CompiledRunner`); each new [batch,
                length] shape compiles once (seconds), then runs faster (all-MiniLM-L6-v2
                on short sentences: about 1.8x). For long-running or repeated calls on a
                Keras model; False (default): graphs of open shapes (one for short
                batches, one for long), no compiling.

    Returns:
        a `Pipeline`: call it on texts (see the task's class).
    """
    name = registry.pipeline_task(task)  # ValueError naming the known ones
    source = sources.resolve(name, model, tokenizer, trusted=trusted, runtime=runtime,
                             quantize=quantize)
    # An export's fixed options (export.json) are the defaults of the same pipeline on it.
    return TASKS[name](source, **{**source.options, **options})


def export(subject, path, format="saved_model", quantize=None, *, task=None, tokenizer=None,
           **options):
    """Exports a model or a pipeline as the pipeline answers: `kbert.export`.

    `model.export(path)` of a task model, `pipeline.export(path)` and the tools call it. What
    is written is `kbert.pipelines.exporting`'s: a SavedModel directory whose
    `serving_default` takes raw strings and returns the pipeline's answers (transformers'
    keys and ranking) and whose `serving_ids` takes token ids and returns the model's raw
    outputs, or a `.tflite` file; with an `export.json` (in the file's metadata for TFLite)
    that says what it is, which `kbert.pipeline(task, model=path)` reads.

    Args:
        subject: a pipeline (`kbert.pipeline`), or a kbert model: a task model (with its
            preprocessor's tokenizer), a pretrainer with a masked-LM head (fill-mask) or a
            backbone (feature-extraction), exported as the pipeline `task` on it. (A
            backbone's own `backbone.export(path)` is Keras': token ids in; a task model's
            `model.export` is this function.)
        path: the SavedModel directory, the `.tflite` file, or the ONNX export's directory.
        format: "saved_model", "tflite" or "onnx" (`kbert.serving.onnx`: the model of token
            ids, its raw outputs out; the tokenizer's files and export.json beside it, which
            `kbert.pipeline(task, model=path)` runs on ONNX Runtime).
        quantize: TFLite: None (float32), "dynamic" (int8 weights) or "float16"; ONNX: None
            or "int8" (ONNX Runtime's dynamic quantization).
        task: for a model, which of its task's pipelines (default: the first,
            "text-classification" for a `TextClassifier`; pass
            "zero-shot-classification" for an NLI classifier).
        tokenizer: for a model without a preprocessor (a backbone), its tokenizer.
        **options: the pipeline's call options, fixed in the graph (`top_k`,
            `aggregation_strategy`, `truncation`, ...; an ONNX export keeps them in
            export.json as the pipeline's defaults), and TFLite fill-mask's `max_masks`.

    Returns:
        `path`.
    """
    from kbert.pipelines import exporting

    if isinstance(subject, Pipeline):
        if task is not None or tokenizer is not None:
            raise ValueError("A pipeline has its task and tokenizer: pass only its call "
                             "options (and format, quantize).")
        pipe = subject
    else:
        record = registry.of_model(subject)
        if record is None:
            raise TypeError(f"kbert.export takes a pipeline or a kbert model (a task model, a "
                            f"pretrainer with a masked-LM head, a backbone), not "
                            f"{type(subject).__name__}.")
        pipe = pipeline(task or record.pipelines[0], model=subject, tokenizer=tokenizer)
    return exporting.write(pipe, path, format, quantize, options)


__all__ = [
    "ALIASES", "FeatureExtractionPipeline", "FillMaskPipeline", "InputTooLongError",
    "Pipeline", "QuestionAnsweringPipeline", "SentenceEmbeddingPipeline", "SummarizationPipeline",
    "TASKS",
    "TextClassificationPipeline", "TokenClassificationPipeline",
    "ZeroShotClassificationPipeline", "batching", "export", "pipeline", "sources",
]
