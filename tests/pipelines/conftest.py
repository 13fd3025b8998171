"""Pipelines on the fixtures' checkpoints, built once per test session: loading a checkpoint
builds a Keras model, the slowest step of these tests."""

import pytest

from tests.pipelines.reference import FIXTURES

_PIPELINES = {}


def load_pipeline(task, model):
    """`kbert.pipeline(task, model=<fixture directory>)`, cached for the session."""
    import kbert

    key = (task, model)
    if key not in _PIPELINES:
        _PIPELINES[key] = kbert.pipeline(task, model=str(FIXTURES / model))
    return _PIPELINES[key]


def ids_of(pipe):
    """kbert's ids of a text as transformers' tokenizer(text) gives them: [CLS] ... [SEP]."""
    tokenizer = pipe.tokenizer

    def ids(text):
        if not pipe.tokenizer.bert_words:  # RoBERTa: ids without character offsets (`encode`'s)
            tokens = pipe.encoder.ids([text], pipe.specials)[0].tolist()
        else:
            tokens = pipe.encoder.encode([text], pipe.specials)[0].ids.tolist()
        return [tokenizer.cls_id] + tokens + [tokenizer.sep_id]

    return ids


@pytest.fixture(scope="session")
def pipelines():
    return load_pipeline
