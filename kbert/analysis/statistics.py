"""Per-head attention statistics over a corpus, as Clark et al. 2019 ("What does BERT look
at?", section 3) compute them.

For each text and head, every query token's attention row gives a number; a text's number is
the mean over its query tokens, and the corpus's the mean over its texts (each text counts
once, as in the paper's code):

- `entropy`: -sum_k a_qk ln a_qk (nats; 0 ln 0 = 0): low for a head that looks at one token;
- `cls`, `sep`, `punctuation`: the attention on the [CLS] token (the first special token),
  on the separators ([SEP]; RoBERTa's </s>) and on tokens whose text is punctuation only;
- `previous`, `next`, `self`: the attention on the token before, after, and on itself (the
  first query has no token before it and the last none after: they count 0 there).

`head_statistics(inspections)` takes `Inspection`s (`kbert.analysis.Inspector`), one at a time,
so a corpus's attentions are never all held at once.
"""

import dataclasses

import numpy as np

STATISTICS = ("entropy", "cls", "sep", "punctuation", "previous", "next", "self")


def text_statistics(attentions, kinds):
    """{statistic: float [layers, heads]} of one text: `attentions` [layers, heads, S, S]
    (query, key), `kinds` per token (`kbert.analysis.inspection.KINDS`)."""
    attentions = np.asarray(attentions, np.float64)
    kinds = np.asarray(kinds)
    logs = np.log(np.where(attentions > 0, attentions, 1.0))
    on = {name: attentions[..., kinds == kind].sum(-1).mean(-1)
          for name, kind in (("cls", "cls"), ("sep", "sep"), ("punctuation", "punctuation"))}
    # (0.0 - x, not -x: a head with no uncertainty reads 0.000, not -0.000.)
    return {"entropy": (0.0 - (attentions * logs).sum(-1)).mean(-1), **on,
            "previous": np.diagonal(attentions, -1, -2, -1).sum(-1) / attentions.shape[-1],
            "next": np.diagonal(attentions, 1, -2, -1).sum(-1) / attentions.shape[-1],
            "self": np.diagonal(attentions, 0, -2, -1).mean(-1)}


@dataclasses.dataclass
class HeadStatistics:
    """The statistics of every head: `values[statistic]` is float [layers, heads], the mean
    over `texts` texts."""

    values: dict
    texts: int

    @property
    def num_layers(self):
        return self.values["entropy"].shape[0]

    @property
    def num_heads(self):
        return self.values["entropy"].shape[1]

    def rows(self):
        """One dict per head: layer, head and each statistic (layers and heads from 0)."""
        return [{"layer": layer, "head": head,
                 **{name: float(self.values[name][layer, head]) for name in STATISTICS}}
                for layer in range(self.num_layers) for head in range(self.num_heads)]

    def table(self, digits=3):
        """The rows as a Markdown table."""
        header = "| layer | head | " + " | ".join(STATISTICS) + " |"
        lines = [header, "|" + " --- |" * (2 + len(STATISTICS))]
        for row in self.rows():
            lines.append(f"| {row['layer']} | {row['head']} | "
                         + " | ".join(f"{row[name]:.{digits}f}" for name in STATISTICS) + " |")
        return "\n".join(lines)

    def to_dict(self):
        """JSON-ready: the texts counted and, per statistic, a list by layer of lists by
        head."""
        return {"texts": self.texts,
                "statistics": {name: self.values[name].tolist() for name in STATISTICS}}

    def share_of_heads(self, statistic, above=0.5, layers=None):
        """The share of heads (of `layers`, a range of layer indices; default all) whose
        `statistic` is above `above`: e.g. the heads that put most attention on [SEP]."""
        if statistic not in self.values:
            raise ValueError(f"Unknown statistic {statistic!r}. Allowed: "
                             f"{', '.join(STATISTICS)}.")
        values = self.values[statistic]
        if layers is not None:
            layers = list(layers)
            bad = [layer for layer in layers if not -self.num_layers <= layer < self.num_layers]
            if bad or not layers:
                raise ValueError(f"layers={layers!r}: the model has {self.num_layers} layers, "
                                 f"numbered 0 to {self.num_layers - 1}.")
            values = values[layers]
        return float((values > above).mean())


def head_statistics(inspections):
    """`HeadStatistics` over `inspections` (an iterable of `Inspection`s with attentions)."""
    totals, count = None, 0
    for inspection in inspections:
        if inspection.attentions is None:
            raise ValueError("head_statistics needs attentions: inspect the texts with "
                             "attentions=True.")
        values = text_statistics(inspection.attentions, inspection.kinds)
        totals = values if totals is None else {k: totals[k] + values[k] for k in totals}
        count += 1
    if not count:
        raise ValueError("head_statistics got no texts.")
    return HeadStatistics({k: v / count for k, v in totals.items()}, count)
