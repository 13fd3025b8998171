"""Pictures of what a model does, drawn with matplotlib (no display needed: figures are made
without pyplot and written straight to PNG or SVG, chosen by the file's extension).

- `attention_heatmap`: one head's attention over one text, the tokens as labels;
- `attention_grid`: every layer x head of one text as thumbnails;
- `plot_head_statistics`: Clark et al.'s per-head statistics, the heads of each layer as dots;
- `plot_probe`: a layer-wise probe's accuracy by layer, beside the majority-class baseline.

Layers and heads are numbered from 0, as transformers' `attentions[layer][:, head]`. SVG files
keep their text as text (`svg.fonttype: none`), so the labels can be searched.
"""

import os

import numpy as np

from kbert import _extras

FORMATS = ("png", "svg")


def _matplotlib(module="matplotlib"):
    return _extras.require(module, "analysis", "Drawing pictures (kbert.analysis)")


def _figure(width, height):
    return _matplotlib("matplotlib.figure").Figure(figsize=(width, height), layout="constrained")


def _save(figure, path, dpi=100):
    """Writes `figure` to `path` (.png or .svg); returns `path`."""
    extension = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if extension not in FORMATS:
        raise ValueError(f"Cannot write a picture to {os.fspath(path)!r}: the extension must "
                         f"be one of {', '.join('.' + f for f in FORMATS)}.")
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with _matplotlib().rc_context({"svg.fonttype": "none"}):
        figure.savefig(path, dpi=dpi)
    return path


def check_head(layer, head, layers, heads):
    """(`layer`, `head`) as indices from 0, or a ValueError naming the one out of range of
    a model with `layers` layers of `heads` heads."""
    for name, value, count in (("layer", layer, layers), ("head", head, heads)):
        if not isinstance(value, (int, np.integer)) or not -count <= value < count:
            raise ValueError(f"{name}={value!r} is out of range: the model has {count} "
                             f"{name}s, numbered 0 to {count - 1} (negative counts from the "
                             "end).")
    return layer % layers, head % heads


def _heads(inspection, layer, head):
    if inspection.attentions is None:
        raise ValueError("This Inspection holds no attentions: inspect with attentions=True.")
    return check_head(layer, head, *inspection.attentions.shape[:2])


def attention_heatmap(inspection, path, layer=-1, head=0, title=None):
    """Draws the attention of `head` of `layer` over `inspection`'s tokens (rows: the
    tokens attending, columns: the tokens attended to) into `path` (.png or .svg).
    Returns `path`."""
    layer, head = _heads(inspection, layer, head)
    weights = inspection.attentions[layer, head]
    tokens = inspection.tokens
    size = 2.5 + 0.28 * len(tokens)
    # Room for the longest label (9 pt: ~0.08 inch a character) on both axes, so that the
    # matrix keeps its size beside a long merged word.
    labels = 0.08 * max(len(token) for token in tokens)
    figure = _figure(size + 1.0 + labels, size + labels)
    axes = figure.add_subplot()
    image = axes.imshow(weights, cmap="viridis", vmin=0.0, vmax=max(float(weights.max()), 1e-6))
    axes.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=9)
    axes.set_yticks(range(len(tokens)), tokens, fontsize=9)
    axes.set_xlabel("attended to (key)")
    axes.set_ylabel("attending (query)")
    axes.set_title(title or f"layer {layer}, head {head}")
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention")
    return _save(figure, path)


def attention_grid(inspection, path, title=None):
    """Draws every layer (rows) x head (columns) of `inspection` as thumbnails into `path`
    (.png or .svg), each head on its own colour scale from 0 to 1. Returns `path`."""
    _heads(inspection, 0, 0)
    layers, heads = inspection.attentions.shape[:2]
    cell = 1.3
    figure = _figure(0.6 + cell * heads, 0.8 + cell * layers)
    grid = figure.subplots(layers, heads, squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            axes = grid[layer, head]
            axes.imshow(inspection.attentions[layer, head], cmap="viridis", vmin=0.0,
                        vmax=1.0)
            axes.set_xticks([])
            axes.set_yticks([])
            if layer == 0:
                axes.set_title(f"head {head}", fontsize=9)
            if head == 0:
                axes.set_ylabel(f"layer {layer}", fontsize=9)
    figure.suptitle(title or _short(inspection.text))
    return _save(figure, path)


def _short(text, limit=80):
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Each statistic's panel title.
_PANELS = {"entropy": "entropy (nats)", "cls": "attention on [CLS]", "sep": "attention on [SEP]",
           "punctuation": "attention on punctuation", "previous": "on the previous token",
           "next": "on the next token", "self": "on the token itself"}


def plot_head_statistics(statistics, path, names=None):
    """Draws `statistics` (`HeadStatistics`) into `path`: a panel per statistic (`names`,
    default all), the layers along x, a dot per head. Returns `path`."""
    from kbert.analysis.statistics import STATISTICS

    names = list(names or STATISTICS)
    unknown = [n for n in names if n not in STATISTICS]
    if unknown:
        raise ValueError(f"Unknown statistic {unknown[0]!r}. Allowed: "
                         f"{', '.join(STATISTICS)}.")
    columns = min(4, len(names))
    rows = -(-len(names) // columns)
    figure = _figure(3.2 * columns, 2.6 * rows)
    grid = figure.subplots(rows, columns, squeeze=False)
    layers, heads = statistics.num_layers, statistics.num_heads
    # Heads spread a little across their layer's column, so that equal values stay visible.
    spread = (np.arange(heads) - (heads - 1) / 2) * (0.5 / max(heads, 1))
    for k, axes in enumerate(grid.flat):
        if k >= len(names):
            axes.set_visible(False)
            continue
        values = statistics.values[names[k]]
        for layer in range(layers):
            axes.scatter(layer + spread, values[layer], s=14, alpha=0.8,
                         c=np.arange(heads), cmap="tab20", vmin=0, vmax=19)
        axes.set_title(_PANELS[names[k]], fontsize=10)
        axes.set_xticks(range(layers))
        axes.set_xlabel("layer")
        if names[k] == "entropy":  # from 0, so that low-entropy heads look low
            axes.set_ylim(bottom=0)
        else:
            axes.set_ylim(-0.03, 1.03)
    colours = heads <= 20  # tab20's colours: more heads would share them
    if colours:  # which colour is which head
        Line2D = _matplotlib("matplotlib.lines").Line2D
        cmap = _colormap("tab20")  # as the dots: c=head, vmin=0, vmax=19
        handles = [Line2D([], [], linestyle="", marker="o", color=cmap(h / 19)) for h in range(heads)]
        figure.legend(handles, [str(h) for h in range(heads)], title="head",
                      loc="outside lower center", ncols=min(heads, 12), fontsize=9,
                      handletextpad=0.1, columnspacing=1.0)
    figure.suptitle(f"Attention statistics per head ({statistics.texts} texts; a dot per "
                    f"head{', coloured by head' if colours else ''})")
    return _save(figure, path)


def _colormap(name):
    return _matplotlib().colormaps[name]


def plot_probe(result, path, title=None):
    """Draws a `ProbeResult`'s accuracy by layer, with the majority-class baseline, into
    `path`. Returns `path`."""
    figure = _figure(5.5, 3.6)
    axes = figure.add_subplot()
    layers = np.arange(len(result.accuracy))
    axes.plot(layers, result.accuracy, marker="o", label="linear probe")
    axes.axhline(result.majority, color="gray", linestyle="--", label="majority class")
    axes.set_xticks(layers, ["emb"] + [str(i) for i in layers[1:]])
    axes.set_xlabel("hidden_states[i] (emb: the embeddings; i: the i-th layer's output)")
    axes.set_ylabel(f"held-out accuracy ({result.test_count} {result.unit}s)")
    axes.set_ylim(0, 1.02)
    axes.legend(loc="lower right")
    axes.set_title(title or f"{result.task} probe by layer")
    return _save(figure, path)
