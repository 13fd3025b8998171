"""Looking inside a model: attention pictures, per-head statistics, layer-wise probes and an
HTML view of attention (issue 34).

    import kbert
    from kbert import analysis

    loaded = kbert.load("bert_base", head=None)
    inspector = analysis.Inspector(loaded.model, loaded.tokenizer)
    seen = inspector.inspect(["The cat sat on the mat."])[0]
    analysis.attention_heatmap(seen, "head.png", layer=3, head=1)
    analysis.attention_grid(analysis.merge_words(seen), "grid.svg")
    statistics = analysis.head_statistics(inspector.iterate(corpus))
    analysis.attention_html(inspector.inspect(corpus[:5]), "attention.html")

`tools/analyze.py` does all of it from the command line (`kbert.analysis.run`).
"""

from kbert.analysis.html_view import attention_html
from kbert.analysis.inspection import KINDS, Inspection, Inspector, merge_words
from kbert.analysis.pictures import (
    attention_grid, attention_heatmap, plot_head_statistics, plot_probe,
)
from kbert.analysis.probing import (
    ProbeData, ProbeResult, probe_layers, sentence_probe_data, token_probe_data,
)
from kbert.analysis.statistics import STATISTICS, HeadStatistics, head_statistics

__all__ = ["KINDS", "STATISTICS", "HeadStatistics", "Inspection", "Inspector", "ProbeData",
           "ProbeResult", "attention_grid", "attention_heatmap", "attention_html",
           "head_statistics", "merge_words", "plot_head_statistics", "plot_probe",
           "probe_layers", "sentence_probe_data", "token_probe_data"]
