"""`pipeline.export` of the summarization pipeline: its `serving_default` takes documents and
returns the summaries of `serving.summarizer` (the sentences as the splitter cleaned them,
their scores, their indices among the document's sentences, `num_sentences` and
`summary_text`), with the pipeline's `num_sentences` and `trigram_blocking` fixed in the
graph. Character offsets into the document are the Python pipeline's alone."""

from kbert.tasks.extractive_summarization.decode import summary_options
from kbert.tasks.extractive_summarization.serving import summarizer
from kbert.tasks.graph.signatures import STRINGS


def summarization(pipe, model, opts, given):
    count, blocking = summary_options(opts)
    return {"serving_default": (summarizer(model, pipe.tokenizer, pipe.max_length, count,
                                           blocking), [STRINGS])}


PIPELINES = {"summarization": summarization}
