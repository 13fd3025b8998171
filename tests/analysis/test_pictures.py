"""Pictures and the HTML view of a constructed `Inspection`: files written, not blank, the
tokens as labels; word merging as Clark et al. do it; the page needs no network."""

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from kbert import analysis
from kbert.analysis import Inspection, merge_words

TEXT = "the cats sat."
TOKENS = ["[CLS]", "the", "cat", "##s", "sat", ".", "[SEP]"]
WORDS = np.array([-1, 0, 1, 1, 2, 3, -1], np.int32)
OFFSETS = np.array([[0, 0], [0, 3], [4, 7], [7, 8], [9, 12], [12, 13], [0, 0]], np.int32)
KINDS = ["cls", "token", "token", "token", "token", "punctuation", "sep"]


def attentions(layers=2, heads=3, size=len(TOKENS), seed=0):
    scores = np.random.default_rng(seed).normal(size=[layers, heads, size, size]) * 2
    weights = np.exp(scores)
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def seen():
    hidden = np.random.default_rng(1).normal(size=[3, len(TOKENS), 4]).astype(np.float32)
    return Inspection(TEXT, TOKENS, KINDS, WORDS, OFFSETS, attentions(), hidden)


def svg_texts(path):
    """The text of every <text> element of an SVG file."""
    root = ElementTree.parse(path).getroot()
    return ["".join(node.itertext()).strip() for node in root.iter("{http://www.w3.org/2000/svg}text")]


def assert_not_blank(path, minimum_bytes):
    import matplotlib.image

    assert path.stat().st_size > minimum_bytes, path.stat().st_size
    pixels = matplotlib.image.imread(path)[..., :3]
    # A blank picture is one colour; a heatmap has many.
    assert pixels.std() > 0.05 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50


def test_heatmap_png_and_svg_with_the_tokens_as_labels(seen, tmp_path):
    png = analysis.attention_heatmap(seen, tmp_path / "head.png", layer=1, head=2)
    assert_not_blank(png, 10_000)
    labels = svg_texts(analysis.attention_heatmap(seen, tmp_path / "head.svg", layer=-1,
                                                  head=-1))
    for token in TOKENS:  # each token twice: on the queries' axis and on the keys'
        assert labels.count(token) == 2, (token, labels)
    assert "layer 1, head 2" in labels


def test_grid_has_a_thumbnail_per_layer_and_head(seen, tmp_path):
    assert_not_blank(analysis.attention_grid(seen, tmp_path / "grid.png"), 10_000)
    labels = svg_texts(analysis.attention_grid(seen, tmp_path / "grid.svg"))
    assert {"layer 0", "layer 1", "head 0", "head 1", "head 2", TEXT} <= set(labels)
    assert "head 3" not in labels and "layer 2" not in labels


def test_bad_layer_head_or_extension_are_named(seen, tmp_path):
    with pytest.raises(ValueError, match=r"layer=2 is out of range: the model has 2 layers"):
        analysis.attention_heatmap(seen, tmp_path / "x.png", layer=2)
    with pytest.raises(ValueError, match=r"head=-4 is out of range: .* 3 heads"):
        analysis.attention_heatmap(seen, tmp_path / "x.png", head=-4)
    with pytest.raises(ValueError, match=r"'.*x.jpg'.*\.png, \.svg"):
        analysis.attention_grid(seen, tmp_path / "x.jpg")


def test_merge_words_sums_attention_to_a_word_and_averages_attention_from_it(seen):
    merged = merge_words(seen)
    assert merged.tokens == ["[CLS]", "the", "cats", "sat", ".", "[SEP]"]
    assert merged.kinds == ["cls", "token", "token", "token", "punctuation", "sep"]
    np.testing.assert_array_equal(merged.offsets[2], [4, 8])
    a = seen.attentions[1, 0]
    m = merged.attentions[1, 0]
    # to "cats": the sum of the columns of "cat" and "##s"; from it: the mean of their rows.
    assert m[0, 2] == pytest.approx(a[0, 2] + a[0, 3])
    assert m[2, 4] == pytest.approx((a[2, 5] + a[3, 5]) / 2)
    assert m[2, 2] == pytest.approx((a[2, 2] + a[2, 3] + a[3, 2] + a[3, 3]) / 2)
    np.testing.assert_allclose(merged.attentions.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(merged.hidden_states[:, 2],
                               seen.hidden_states[:, 2:4].mean(1), atol=1e-6)


def test_statistics_and_probe_plots(tmp_path):
    statistics = analysis.head_statistics([
        Inspection(TEXT, TOKENS, KINDS, WORDS, OFFSETS, attentions(seed=s)) for s in range(3)])
    labels = svg_texts(analysis.plot_head_statistics(statistics, tmp_path / "heads.svg"))
    assert {"attention on [SEP]", "attention on [CLS]", "entropy (nats)", "layer"} <= set(labels)
    assert_not_blank(analysis.plot_head_statistics(statistics, tmp_path / "heads.png"), 10_000)
    result = analysis.ProbeResult("tagging", [0.5, 0.8, 0.9], 0.4, 30, 10, "token")
    assert_not_blank(analysis.plot_probe(result, tmp_path / "probe.png"), 5_000)
    assert {"emb", "1", "2", "majority class"} <= set(svg_texts(
        analysis.plot_probe(result, tmp_path / "probe.svg")))


def page_data(path):
    page = path.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    return page, json.loads(found.group(1))


def test_html_view_is_self_contained_and_holds_the_attentions(seen, tmp_path):
    other = Inspection("a </script> b", ["[CLS]", "a", "</", "script", ">", "b", "[SEP]"],
                       KINDS, WORDS, OFFSETS, attentions(seed=3))
    path = analysis.attention_html([seen, other], tmp_path / "view.html", title="Tiny <model>")
    page, data = page_data(path)
    # Nothing is fetched when the page is viewed: no external script, style, font or image.
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", page)
    assert "@import" not in page and "url(" not in page
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "<title>Tiny &lt;model&gt;</title>" in page
    assert (data["layers"], data["heads"]) == (2, 3)
    assert data["texts"][0]["tokens"] == TOKENS and data["texts"][1]["text"] == other.text
    np.testing.assert_allclose(data["texts"][1]["attentions"], other.attentions, atol=5e-4)


VIEW_SCRIPT_CHECK = r"""
// A minimal DOM: enough for the page's script, recording what it draws.
const fs = require("fs");
const page = fs.readFileSync(process.argv[2], "utf8");
const data = page.match(/<script type="application\/json" id="data">([\s\S]*?)<\/script>/)[1];
const script = page.match(/<script>([\s\S]*?)<\/script>/)[1];
function node(tag) {
  return {tag, children: [], attributes: {}, listeners: {}, textContent: "", value: "",
    set innerHTML(v) { this.children = []; }, appendChild(c) { this.children.push(c); },
    setAttribute(k, v) { this.attributes[k] = String(v); },
    addEventListener(e, f) { this.listeners[e] = f; }};
}
const nodes = {data: {textContent: data}};
for (const id of ["text", "layer", "head", "view", "source", "details"]) nodes[id] = node(id);
global.document = {getElementById: id => nodes[id], createElement: node,
                   createElementNS: (ns, tag) => node(tag)};
eval(script);
const lines = () => nodes.view.children.filter(c => c.tag === "line")
  .map(c => c.attributes["data-weight"]).join(",");
const labels = () => nodes.view.children.filter(c => c.tag === "text").map(c => c.textContent);
const first = lines();
nodes.head.listeners.change({target: {value: "1"}});
const second = lines();
nodes.layer.listeners.change({target: {value: "1"}});
const third = lines();
const hovered = nodes.view.children.find(c => c.tag === "text" && c.attributes["data-index"] === "2");
hovered.listeners.mouseenter();
const hover = nodes.view.children.filter(c => c.tag === "line").length;
console.log(JSON.stringify({first, second, third, hover, labels: labels(),
  head: nodes.view.attributes["data-head"], details: nodes.details.textContent,
  heads: nodes.head.children.map(c => c.textContent)}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run the page's script")
def test_html_view_script_redraws_when_a_head_layer_or_token_is_chosen(seen, tmp_path):
    """The page's own script on a minimal DOM (no browser here): choosing another head or
    layer draws other lines; hovering a token keeps its lines only and lists its weights."""
    path = analysis.attention_html([seen], tmp_path / "view.html")
    (tmp_path / "check.js").write_text(VIEW_SCRIPT_CHECK)
    result = subprocess.run(["node", str(tmp_path / "check.js"), str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    drawn = json.loads(result.stdout)
    assert drawn["first"] and drawn["first"] != drawn["second"] != drawn["third"]
    assert drawn["head"] == "1" and drawn["heads"] == ["0", "1", "2", "mean of all"]
    assert drawn["labels"] == TOKENS * 2
    # A query's lines: one per key with weight >= 0.005, at most all 7.
    weights = seen.attentions[1, 1, 2]
    assert drawn["hover"] == int((weights >= 0.005).sum())
    top = TOKENS[int(weights.argmax())]
    assert drawn["details"].splitlines()[0] == f"cat -> {top}: {weights.max():.3f}"
