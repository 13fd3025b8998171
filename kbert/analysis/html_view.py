"""A self-contained HTML page of token-to-token attention, in the manner of bertviz's head
view: choose a text, a layer and a head (or the mean of the layer's heads); the tokens
attending stand on the left, the tokens attended to on the right, joined by lines whose
opacity is the weight; hovering a token keeps only its lines and lists its five largest
weights.

The page needs no network when it is viewed: its script and style are inline and the
attentions are embedded as JSON (rounded to 3 decimals), so it can be mailed or archived.
"""

import html
import json
import os
from importlib import resources

import numpy as np


def _template():
    return resources.files("kbert.analysis").joinpath("view.html").read_text(encoding="utf-8")


def page_data(inspections, digits=3):
    """The JSON the page embeds: layer and head counts, and per text its text, tokens and
    attentions [layers][heads][S][S] (rounded to `digits` decimals)."""
    inspections = list(inspections)
    if not inspections:
        raise ValueError("attention_html needs at least one Inspection.")
    shapes = set()
    for inspection in inspections:
        if inspection.attentions is None:
            raise ValueError("attention_html needs attentions: inspect with attentions=True.")
        shapes.add(inspection.attentions.shape[:2])
    if len(shapes) > 1:
        raise ValueError(f"The inspections come from different models (layers, heads): "
                         f"{sorted(shapes)}.")
    layers, heads = shapes.pop()
    return {"layers": int(layers), "heads": int(heads),
            "texts": [{"text": i.text, "tokens": list(i.tokens),
                       "attentions": np.round(i.attentions.astype(np.float64),
                                              digits).tolist()}
                      for i in inspections]}


def attention_html(inspections, path, title="Attention"):
    """Writes the page for `inspections` (`Inspection`s with attentions, e.g. a few texts of
    a corpus) to `path`. Returns `path`."""
    data = json.dumps(page_data(inspections), separators=(",", ":"))
    # "</" would end the <script> element that holds the data.
    data = data.replace("</", "<\\/")
    page = _template().replace("__TITLE__", html.escape(title)).replace("__DATA__", data)
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
