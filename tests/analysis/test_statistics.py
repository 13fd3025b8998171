"""Clark et al.'s per-head statistics, checked against numbers worked out by hand on two
constructed texts."""

import math

import numpy as np
import pytest

from kbert.analysis import Inspection, head_statistics
from kbert.analysis.statistics import STATISTICS


def inspection(attentions, kinds):
    n = len(kinds)
    return Inspection("", ["t"] * n, kinds, np.full(n, -1, np.int32), np.zeros([n, 2], np.int32),
                      attentions=np.asarray(attentions, np.float32))


# Text 1: [CLS] a , [SEP]. Head 0 spreads evenly; head 1 puts everything on [SEP].
UNIFORM = np.full([4, 4], 0.25)
ON_SEP = np.zeros([4, 4])
ON_SEP[:, 3] = 1.0
FIRST = inspection([[UNIFORM, ON_SEP]], ["cls", "token", "punctuation", "sep"])
# Text 2: [CLS] x [SEP]. Head 0 looks at itself; head 1 puts everything on [CLS].
ON_CLS = np.zeros([3, 3])
ON_CLS[:, 0] = 1.0
SECOND = inspection([[np.eye(3), ON_CLS]], ["cls", "token", "sep"])

# By hand, per text (head 0, head 1):
#   text 1: entropy ln 4, 0; cls .25, 0; sep .25, 1; punctuation .25, 0;
#           previous 3 x .25 / 4 = .1875, 0; next .1875, a[2, 3] / 4 = .25; self .25, .25
#   text 2: entropy 0, 0; cls 1/3, 1; sep 1/3, 0; punctuation 0, 0;
#           previous 0, a[1, 0] / 3 = 1/3; next 0, 0; self 1, 1/3
EXPECTED = {
    "entropy": [math.log(4) / 2, 0.0],
    "cls": [(0.25 + 1 / 3) / 2, 0.5],
    "sep": [(0.25 + 1 / 3) / 2, 0.5],
    "punctuation": [0.125, 0.0],
    "previous": [0.1875 / 2, 1 / 6],
    "next": [0.1875 / 2, 0.125],
    "self": [(0.25 + 1) / 2, (0.25 + 1 / 3) / 2],
}


def test_statistics_equal_the_hand_computed_means_over_texts():
    statistics = head_statistics(iter([FIRST, SECOND]))
    assert statistics.texts == 2 and (statistics.num_layers, statistics.num_heads) == (1, 2)
    for name in STATISTICS:
        np.testing.assert_allclose(statistics.values[name][0], EXPECTED[name], atol=1e-6,
                                   err_msg=name)


def test_rows_table_and_json_carry_the_same_numbers():
    statistics = head_statistics([FIRST, SECOND])
    rows = statistics.rows()
    assert [(r["layer"], r["head"]) for r in rows] == [(0, 0), (0, 1)]
    assert rows[1]["sep"] == pytest.approx(0.5)
    table = statistics.table().splitlines()
    assert table[0].startswith("| layer | head | entropy") and len(table) == 4
    assert table[3].split("|")[3:5] == [f" {0.0:.3f} ", f" {0.5:.3f} "]
    assert statistics.to_dict()["statistics"]["cls"] == [[pytest.approx(EXPECTED["cls"][0]),
                                                           0.5]]
    assert statistics.share_of_heads("sep", above=0.4) == 0.5  # head 1 only
    assert statistics.share_of_heads("sep", above=0.2) == 1.0
    assert statistics.share_of_heads("entropy", above=0.5) == 0.5


def test_no_attentions_or_no_texts_are_refused():
    with pytest.raises(ValueError, match="attentions=True"):
        head_statistics([Inspection("", [], [], np.zeros(0), np.zeros([0, 2]))])
    with pytest.raises(ValueError, match="no texts"):
        head_statistics([])


def test_share_of_heads_names_a_bad_statistic_or_layer():
    statistics = head_statistics([FIRST, SECOND])
    with pytest.raises(ValueError, match="Unknown statistic 'mask'. Allowed: entropy"):
        statistics.share_of_heads("mask")
    with pytest.raises(ValueError, match=r"layers=\[1\]: the model has 1 layers"):
        statistics.share_of_heads("sep", layers=[1])
