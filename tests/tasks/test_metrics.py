"""kbert.tasks.metrics (scikit-learn, scipy and seqeval calls) against hand-worked cases,
the libraries, and numbers written down from scikit-learn 1.9.1 and seqeval 1.2.2, e.g.
`seqeval.metrics.classification_report(y_true, y_pred, output_dict=True, mode="strict",
scheme=IOB2)`: the written numbers catch a library update that changes them, and kbert
passing the wrong options. Also the edges kbert promises where the libraries warn or raise."""

import ast
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from kbert.tasks import metrics

ROOT = Path(__file__).resolve().parents[2]

# --- GLUE --------------------------------------------------------------------------------

Y_TRUE = [0, 1, 1, 0, 1, 1, 0, 0, 1, 1]
Y_PRED = [0, 1, 0, 0, 1, 1, 1, 0, 1, 0]  # tp 4, fp 1, fn 2, tn 3
M_TRUE = [0, 1, 2, 2, 1, 0, 2, 1, 0, 2, 2, 1]
M_PRED = [0, 2, 2, 2, 1, 0, 1, 1, 0, 0, 2, 2]


def test_accuracy_and_f1():
    assert metrics.accuracy(Y_TRUE, Y_PRED) == 0.7
    assert metrics.f1_score(Y_TRUE, Y_PRED) == pytest.approx(8 / 11)  # 2tp / (2tp + fp + fn)
    assert metrics.f1_score(Y_TRUE, Y_PRED, pos_label=0) == pytest.approx(6 / 9)
    # scikit-learn's numbers.
    assert metrics.f1_score(Y_TRUE, Y_PRED, average="macro") == pytest.approx(0.696969696969697)
    assert metrics.f1_score(M_TRUE, M_PRED, average="macro") == pytest.approx(0.6761904761904761)
    assert metrics.f1_score([0, 1, 2, 0], [0, 1, 3, 0], average="macro") == pytest.approx(0.5)
    assert metrics.f1_score([0, 0], [0, 0]) == 0.0  # no positives: zero_division 0
    with pytest.raises(ValueError, match="Unknown average 'weighted'"):
        metrics.f1_score(Y_TRUE, Y_PRED, average="weighted")
    with pytest.raises(ValueError, match="one length"):
        metrics.accuracy([0, 1], [0])


def test_matthews_corrcoef():
    # Binary by hand: (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)).
    by_hand = (4 * 3 - 1 * 2) / np.sqrt(5 * 6 * 4 * 5)
    assert metrics.matthews_corrcoef(Y_TRUE, Y_PRED) == pytest.approx(by_hand)
    assert by_hand == pytest.approx(0.408248290463863)  # scikit-learn
    assert metrics.matthews_corrcoef(M_TRUE, M_PRED) == pytest.approx(0.5)
    assert metrics.matthews_corrcoef([0, 1, 2, 0], [0, 1, 3, 0]) == pytest.approx(0.7)
    assert metrics.matthews_corrcoef([1, 1, 1], [1, 1, 1]) == 0.0  # undefined -> 0


def test_pearson_and_spearman_match_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    tied_x = np.round(x * 2) / 2  # many ties: average ranks
    tied_y = np.round(y)
    for a, b in ((x, y), (tied_x, tied_y), (x, x**3)):
        assert metrics.pearson(a, b) == pytest.approx(scipy.stats.pearsonr(a, b)[0], abs=1e-12)
        assert metrics.spearman(a, b) == pytest.approx(scipy.stats.spearmanr(a, b)[0],
                                                       abs=1e-12)
    assert metrics.spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert np.isnan(metrics.pearson([1, 1, 1], [1, 2, 3]))


def test_glue_metrics_are_scikit_learns():
    for y_true, y_pred in ((Y_TRUE, Y_PRED), (M_TRUE, M_PRED)):
        assert metrics.accuracy(y_true, y_pred) == sklearn.metrics.accuracy_score(y_true, y_pred)
        assert metrics.f1_score(y_true, y_pred, average="macro") == sklearn.metrics.f1_score(
            y_true, y_pred, average="macro")
        assert metrics.matthews_corrcoef(y_true, y_pred) == pytest.approx(
            sklearn.metrics.matthews_corrcoef(y_true, y_pred), abs=1e-12)
    for pos_label in (0, 1):
        assert metrics.f1_score(Y_TRUE, Y_PRED, pos_label=pos_label) == pytest.approx(
            sklearn.metrics.f1_score(Y_TRUE, Y_PRED, pos_label=pos_label), abs=1e-12)
    # "binary" on three labels: the F1 of label 2 against the rest (scikit-learn's
    # average="binary" refuses them): tp 3, fp 2, fn 2.
    assert metrics.f1_score(M_TRUE, M_PRED, pos_label=2) == pytest.approx(0.6)
    assert metrics.f1_score(["no", "yes", "yes"], ["yes", "yes", "no"],
                            pos_label="yes") == pytest.approx(0.5)
    assert metrics.accuracy(["a", "b"], ["a", "a"]) == 0.5


def test_glue_edges_give_numbers_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn and scipy warn on all of these
        assert metrics.matthews_corrcoef([1, 1, 1], [1, 1, 1]) == 0.0
        assert metrics.f1_score([0, 0], [0, 0]) == 0.0
        assert metrics.f1_score([0, 2, 0], [0, 2, 2]) == 0.0  # no pos_label at all
        assert np.isnan(metrics.pearson([1, 2, 3], [2, 2, 2]))
        assert np.isnan(metrics.spearman([1, 1, 1], [1, 2, 3]))
        assert np.isnan(metrics.pearson([1.0], [2.0]))  # scipy raises on one point
        assert np.isnan(metrics.spearman([1.0], [2.0]))
    for function in (metrics.accuracy, metrics.pearson, metrics.spearman,
                     metrics.matthews_corrcoef, metrics.f1_score):
        with pytest.raises(ValueError, match="non-empty"):
            function([], [])


def test_glue_scores():
    assert metrics.glue_scores("MRPC", Y_TRUE, Y_PRED) == {
        "accuracy": 0.7, "f1": pytest.approx(8 / 11)}
    assert set(metrics.glue_scores("sts-b", [1.0, 2.0, 4.0], [1.5, 2.0, 3.0])) == {
        "pearson", "spearman"}
    assert list(metrics.glue_scores("cola", Y_TRUE, Y_PRED)) == ["matthews_corrcoef"]
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad'"):
        metrics.glue_scores("squad", Y_TRUE, Y_PRED)


# --- Entities (seqeval) --------------------------------------------------------------------

def _check(y_true, y_pred, scheme, expected):
    """`expected`: seqeval's classification_report, {type or "micro avg": (p, r, f1, n)}."""
    got = metrics.entity_scores(y_true, y_pred, scheme=scheme)
    rows = {t: got["per_type"][t] for t in got["per_type"]}
    rows["micro avg"] = got
    assert set(rows) == set(expected)
    for name, (p, r, f1, support) in expected.items():
        row = rows[name]
        assert (row["precision"], row["recall"], row["f1"]) == pytest.approx((p, r, f1)), name
        assert row["support"] == support, name


def test_seqeval_readme_examples():
    y_true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    y_pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    _check(y_true, y_pred, None, {"MISC": (0, 0, 0, 1), "PER": (1, 1, 1, 1),
                                  "micro avg": (0.5, 0.5, 0.5, 2)})
    # seqeval's get_entities(["B-PER", "I-PER", "O", "B-LOC"]): PER 0-1, LOC 3-3.
    tags = ["B-PER", "I-PER", "O", "B-LOC"]
    _check(tags, tags, None, {"PER": (1, 1, 1, 1), "LOC": (1, 1, 1, 1),
                              "micro avg": (1, 1, 1, 2)})
    _check(tags, ["B-PER", "I-PER", "I-PER", "B-LOC"], None,  # PER 0-2 is another entity
           {"PER": (0, 0, 0, 1), "LOC": (1, 1, 1, 1), "micro avg": (0.5, 0.5, 0.5, 2)})
    # An I- tag that opens an entity: conlleval (default) counts it, strict IOB2 does not.
    _check([["B-NP", "I-NP", "O"]], [["I-NP", "I-NP", "O"]], None,
           {"NP": (1, 1, 1, 1), "micro avg": (1, 1, 1, 1)})
    _check([["B-NP", "I-NP", "O"]], [["I-NP", "I-NP", "O"]], "IOB2",
           {"NP": (0, 0, 0, 1), "micro avg": (0, 0, 0, 1)})


THIRD = 0.3333333333333333
CASES = {  # name: (y_true, y_pred, {scheme: seqeval's report})
    "iob2": (
        [["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-LOC", "O", "B-ORG"],
         ["O", "B-MISC", "I-MISC", "O", "B-PER", "O"]],
        [["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "I-LOC", "O", "B-ORG"],
         ["O", "B-MISC", "I-PER", "O", "B-PER", "I-PER"]],
        {None: {"LOC": (1, 1, 1, 1), "MISC": (0, 0, 0, 1), "ORG": (1, 1, 1, 1),
                "PER": (THIRD, 0.5, 0.4, 2), "micro avg": (0.5, 0.6, 0.5454545454545454, 5)},
         "IOB1": {"LOC": (0, 0, 0, 1), "MISC": (0, 0, 0, 1), "PER": (THIRD, 1, 0.5, 1),
                  "micro avg": (0.25, THIRD, 0.28571428571428575, 3)},
         "IOB2": {"LOC": (0, 0, 0, 1), "MISC": (0, 0, 0, 1), "ORG": (1, 1, 1, 1),
                  "PER": (0.5, 0.5, 0.5, 2), "micro avg": (0.5, 0.4, 0.4444444444444445, 5)}},
    ),
    "iob1": (
        [["I-PER", "I-PER", "B-PER", "O", "I-LOC", "O", "I-ORG", "I-ORG"]],
        [["I-PER", "I-PER", "I-PER", "O", "I-LOC", "O", "B-ORG", "I-ORG"]],
        {None: {"LOC": (1, 1, 1, 1), "ORG": (1, 1, 1, 1), "PER": (0, 0, 0, 2),
                "micro avg": (0.6666666666666666, 0.5, 0.5714285714285715, 4)},
         "IOB1": {"LOC": (1, 1, 1, 1), "ORG": (0, 0, 0, 1), "PER": (0, 0, 0, 2),
                  "micro avg": (THIRD, 0.25, 0.28571428571428575, 4)},
         "IOB2": {"ORG": (0, 0, 0, 0), "PER": (0, 0, 0, 1), "micro avg": (0, 0, 0, 1)}},
    ),
    "iobes": (
        [["S-PER", "O", "B-LOC", "I-LOC", "E-LOC", "O", "B-ORG", "E-ORG"],
         ["S-MISC", "B-PER", "E-PER"]],
        [["S-PER", "O", "B-LOC", "E-LOC", "E-LOC", "O", "B-ORG", "I-ORG"],
         ["B-MISC", "B-PER", "E-PER"]],
        {None: {"LOC": (0, 0, 0, 1), "MISC": (1, 1, 1, 1), "ORG": (1, 1, 1, 1),
                "PER": (1, 1, 1, 2),
                "micro avg": (0.6666666666666666, 0.8, 0.7272727272727272, 5)},
         "IOBES": {"LOC": (0, 0, 0, 1), "MISC": (0, 0, 0, 1), "ORG": (0, 0, 0, 1),
                   "PER": (1, 1, 1, 2), "micro avg": (0.6666666666666666, 0.4, 0.5, 5)}},
    ),
    "bilou": (
        [["U-PER", "O", "B-LOC", "I-LOC", "L-LOC"]],
        [["U-PER", "O", "B-LOC", "L-LOC", "L-LOC"]],
        {"BILOU": {"LOC": (0, 0, 0, 1), "PER": (1, 1, 1, 1), "micro avg": (0.5, 0.5, 0.5, 2)}},
    ),
    "ioe2": (
        [["I-PER", "E-PER", "O", "E-LOC"]],
        [["E-PER", "E-PER", "O", "E-LOC"]],
        {None: {"LOC": (1, 1, 1, 1), "PER": (0, 0, 0, 1), "micro avg": (THIRD, 0.5, 0.4, 2)},
         "IOE2": {"LOC": (1, 1, 1, 1), "PER": (0, 0, 0, 1),
                  "micro avg": (THIRD, 0.5, 0.4, 2)}},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_entity_scores_match_seqeval(case):
    y_true, y_pred, reports = CASES[case]
    for scheme, expected in reports.items():
        _check(y_true, y_pred, scheme, expected)


# Random tag sequences (digits index the tag lists) and seqeval's micro (p, r, f1, support).
FUZZ = {
    "iob": (["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
            ["4321100004", "3423433224", "1430142033", "4004020122", "2000032313",
             "3124441343", "4331402342", "1122340421", "3211322131", "1411330014",
             "2311340031", "2042433130", "2240403241", "4340340130", "2334222402",
             "0243143402", "4322221302", "1333440003", "4434400404", "4410241414"],
            ["1211440441", "2232043043", "0320431003", "0244102430", "3112440231",
             "1114110031", "4242340221", "2224433431", "0212044042", "0440243244",
             "0001001321", "4334300420", "2122122433", "0141243402", "3124310014",
             "1413242443", "3441200303", "4031442232", "3032321024", "0220233422"],
            {None: (0.23622047244094488, 0.22900763358778625, 0.23255813953488372, 131),
             "IOB1": (0.18888888888888888, 0.2, 0.19428571428571428, 85),
             "IOB2": (0.13043478260869565, 0.11842105263157894, 0.12413793103448274, 76)}),
    "iobes": (["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"],
              ["8271365155", "8578004446", "2163806620", "2387245816", "8821501017",
               "6584012632", "1604646720", "0521678448", "4128075477", "3565487047",
               "0342683714", "0307807627", "8762576233", "6334518310", "3627113627",
               "0807032858", "3446481427", "1682265570", "2380440353", "2581282637"],
              ["5855401655", "1774274823", "7123667355", "6126128187", "1524588016",
               "1251862352", "5831245051", "5717056275", "3016368565", "2052155358",
               "6801356681", "1216382322", "7725748220", "5015314880", "6443725635",
               "1620235473", "7021381137", "0773046716", "4766763857", "0146807383"],
              {None: (0.33548387096774196, 0.32298136645962733, 0.3291139240506329, 161),
               "IOBES": (0.075, 0.057692307692307696, 0.06521739130434782, 52)}),
}


@pytest.mark.parametrize("alphabet", sorted(FUZZ))
def test_entity_scores_match_seqeval_on_random_tags(alphabet):
    tags, true, pred, expected = FUZZ[alphabet]
    y_true = [[tags[int(c)] for c in s] for s in true]
    y_pred = [[tags[int(c)] for c in s] for s in pred]
    for scheme, (p, r, f1, support) in expected.items():
        got = metrics.entity_scores(y_true, y_pred, scheme=scheme)
        assert (got["precision"], got["recall"], got["f1"]) == pytest.approx((p, r, f1)), scheme
        assert got["support"] == support, scheme


def test_entity_scores_edge_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # seqeval's zero_division="warn" would
        for scheme in (None, "IOB2"):
            # One flat sequence is one sentence; nothing predicted: 0, not a division error.
            got = metrics.entity_scores(["B-PER", "I-PER"], ["O", "O"], scheme=scheme)
            assert (got["precision"], got["recall"], got["f1"], got["support"]) == (
                0.0, 0.0, 0.0, 1)
            got = metrics.entity_scores([["O", "O"], []], [["O", "O"], []], scheme=scheme)
            assert got == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0,
                           "per_type": {}}
            assert metrics.entity_scores([], [], scheme=scheme)["support"] == 0
    with pytest.raises(ValueError, match="Invalid token is found: S-PER"):
        metrics.entity_scores([["S-PER"]], [["O"]], scheme="IOB2")
    with pytest.raises(ValueError, match="'X-PER' is not a tag"):
        metrics.entity_scores([["O"]], [["X-PER"]], scheme="IOB2")
    with pytest.raises(ValueError, match="Unknown tag scheme 'BIO'"):
        metrics.entity_scores([["O"]], [["O"]], scheme="BIO")
    with pytest.raises(ValueError, match="same number"):
        metrics.entity_scores([["O", "O"]], [["O"]])


def test_metrics_need_no_tensorflow():
    """The metrics are the libraries' (no hand-written copies) and need no TensorFlow or
    Keras: what metrics.py imports."""
    assert not (ROOT / "kbert" / "tasks" / "_seqeval.py").exists()
    imported = set()
    tree = ast.parse((ROOT / "kbert" / "tasks" / "metrics.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported == {"warnings", "numpy", "scipy", "sklearn", "seqeval"}
