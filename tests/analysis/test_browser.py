"""The HTML view in a real browser engine: Chromium's, as Qt WebEngine ships it in the
PySide6-Addons wheel (the test extra), run headless (QT_QPA_PLATFORM=offscreen) in a
subprocess of its own, away from TensorFlow. Choosing a head redraws the lines with that
head's weights, hovering a token keeps its lines, and the page asks for nothing but itself."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kbert import analysis
from kbert.analysis import Inspection

TOKENS = ["[CLS]", "the", "cat", "##s", "sat", ".", "[SEP]"]

# Loads the page, records every request it makes, and reads what is drawn before and after
# choosing layer 1 / head 2 and hovering the third query token; a screenshot last.
BROWSE = r"""
import json, os, sys
from PySide6.QtCore import QEventLoop, QTimer, QUrl
from PySide6.QtWebEngineCore import QWebEngineUrlRequestInterceptor
from PySide6.QtWebEngineWidgets import QWebEngineView
from PySide6.QtWidgets import QApplication

class Requests(QWebEngineUrlRequestInterceptor):
    seen = []
    def interceptRequest(self, info):
        self.seen.append(info.requestUrl().toString())

app = QApplication([])
view = QWebEngineView()
requests = Requests()
view.page().profile().setUrlRequestInterceptor(requests)
view.resize(800, 600)
loop = QEventLoop()
view.loadFinished.connect(lambda ok: loop.exit(0 if ok else 1))
view.load(QUrl.fromLocalFile(sys.argv[1]))
view.show()
if loop.exec():
    sys.exit("the page did not load")

def run(code):
    out, done = [], QEventLoop()
    view.page().runJavaScript(code, 0, lambda result: (out.append(result), done.quit()))
    done.exec()
    return out[0]

DRAWN = '''JSON.stringify({
  lines: Array.from(document.querySelectorAll("#view line")).map(l => [
    +l.getAttribute("y1"), +l.getAttribute("y2"), +l.getAttribute("data-weight")]),
  labels: Array.from(document.querySelectorAll("#view text")).map(t => t.textContent),
  head: document.getElementById("view").getAttribute("data-head"),
  details: document.getElementById("details").textContent})'''
CHOOSE = '''for (const [id, value] of [["layer", "1"], ["head", "2"]]) {
  const s = document.getElementById(id); s.value = value;
  s.dispatchEvent(new Event("change")); }'''
HOVER = '''document.querySelectorAll("#view text.query")[2]
  .dispatchEvent(new MouseEvent("mouseenter"));'''
first = json.loads(run(DRAWN))
run(CHOOSE)
chosen = json.loads(run(DRAWN))
run(HOVER)
hovered = json.loads(run(DRAWN))
run('document.querySelectorAll("#view text.query")[2].dispatchEvent(new MouseEvent("mouseleave"))')
wait = QEventLoop()
QTimer.singleShot(300, wait.quit)
wait.exec()
view.grab().save(sys.argv[2])
print(json.dumps({"first": first, "chosen": chosen, "hovered": hovered,
                  "requests": requests.seen}))
"""


def drawn_matrix(lines, size):
    """[query][key] weights of the drawn lines (rows at y = 12 + 20 q + 10)."""
    m = np.zeros([size, size])
    for y1, y2, w in lines:
        m[int((y1 - 22) // 20), int((y2 - 22) // 20)] = w
    return m


def expected(weights):
    return np.where(weights >= 0.005, np.round(weights, 3), 0.0)


def test_choosing_a_head_in_a_browser_redraws_its_attention(tmp_path):
    pytest.importorskip("PySide6.QtWebEngineWidgets",
                        reason="PySide6-Addons (the test extra) brings Qt WebEngine")
    scores = np.random.default_rng(0).normal(size=[2, 3, 7, 7]) * 2
    weights = (np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)).astype(np.float32)
    seen = Inspection("the cats sat.", TOKENS, ["cls"] + ["token"] * 4 + ["punctuation", "sep"],
                      np.array([-1, 0, 1, 1, 2, 3, -1]), np.zeros([7, 2], np.int32), weights)
    page = analysis.attention_html([seen], tmp_path / "view.html")
    shot = tmp_path / "view.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QTWEBENGINE_DISABLE_SANDBOX": "1",
           "QTWEBENGINE_CHROMIUM_FLAGS": "--disable-gpu"}
    result = subprocess.run([sys.executable, "-c", BROWSE, str(page), str(shot)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    first, chosen, hovered = out["first"], out["chosen"], out["hovered"]
    # Nothing but the page itself was requested.
    assert out["requests"] == [page.as_uri()]
    assert first["labels"] == TOKENS * 2 and first["head"] == "0"
    # Drawn: layer 0 head 0, then layer 1 head 2, each line's opacity its weight.
    np.testing.assert_allclose(drawn_matrix(first["lines"], 7), expected(weights[0, 0]),
                               atol=1e-3)
    assert chosen["head"] == "2"
    np.testing.assert_allclose(drawn_matrix(chosen["lines"], 7), expected(weights[1, 2]),
                               atol=1e-3)
    # Hovering query 2 ("cat") keeps its lines only and lists its largest weights.
    np.testing.assert_allclose(drawn_matrix(hovered["lines"], 7)[2], expected(weights[1, 2, 2]),
                               atol=1e-3)
    assert len(hovered["lines"]) == int((weights[1, 2, 2] >= 0.005).sum())
    top = TOKENS[int(weights[1, 2, 2].argmax())]
    assert hovered["details"].splitlines()[0] == f"cat -> {top}: {weights[1, 2, 2].max():.3f}"
    # The screenshot shows the page: text and lines, not a blank.
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (600, 800)
    assert (pixels.min(-1) < 0.5).mean() > 0.005 and pixels.std() > 0.05
