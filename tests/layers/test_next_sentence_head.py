import numpy as np

from kbert.layers import NextSentenceHead
from tests.layers import _checks

X = np.random.default_rng(0).normal(size=(3, 6)).astype("float32")


def test_config_round_trip():
    _checks.check_config_round_trip(NextSentenceHead(num_classes=3, initializer_range=0.1))


def test_output_shape():
    assert tuple(NextSentenceHead()(X).shape) == (3, 2)


def test_fit_step():
    _checks.check_fit_step(NextSentenceHead, [X])


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(NextSentenceHead, [X])
