"""Pipelines on the fixtures' checkpoints, built once per test session: loading a checkpoint
builds a Keras model, the slowest step of these tests."""

import keras
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
        tokens = pipe.encoder.encode([text], pipe.specials)[0].ids.tolist()
        return [tokenizer.cls_id] + tokens + [tokenizer.sep_id]

    return ids


@pytest.fixture(scope="session")
def pipelines():
    return load_pipeline


@pytest.fixture(autouse=True)
def _seed_and_policy():
    """Replaces tests/conftest.py's: no `keras.utils.set_random_seed` here. Pipelines draw no
    random numbers, and TensorFlow's seeding clears the eager resources that tensorflow-text's
    SentencePiece tokenizer holds, which would break the session's ALBERT pipelines."""
    yield
    keras.config.set_dtype_policy("float32")
