"""kbert.tasks.text_classification.metrics (scikit-learn and scipy calls) against
hand-worked cases, the libraries, and numbers written down from scikit-learn 1.9.1: the
written numbers catch a library update that changes them, and kbert passing the wrong options.
Also the edges kbert promises where the libraries warn or raise."""

import warnings

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from kbert.tasks.text_classification import metrics

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
