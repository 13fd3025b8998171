"""`tools/analyze.py`'s engine: a model and texts in; attention pictures, per-head statistics,
a layer-wise probe and the HTML view out, in one folder.

    config = AnalysisConfig(model="bert_base", input="sentences.txt", output_dir="analysis")
    summary = run_analysis(config)

What it writes into `output_dir` (FORMAT: each of `formats`):

- `attention_text<i>_layer<l>_head<h>.FORMAT` and `attention_grid_text<i>.FORMAT`: the
  heatmap of `layer` / `head` and the grid of every head, for each of the first `pictures`
  texts;
- `head_statistics.FORMAT` and `head_statistics.md`: Clark et al.'s statistics per head over
  all texts (`kbert.analysis.statistics`);
- `attention.html`: the first `html_texts` texts in the self-contained view;
- `probe.FORMAT` and `probe.md` with `probe_input`: accuracy of a linear probe by layer;
- `analysis.json`: the numbers of all of it, and the files written.
"""

import dataclasses
import json
import os
from typing import Optional

from kbert.analysis import pictures as drawing
from kbert.analysis.html_view import attention_html
from kbert.analysis.inspection import Inspector, merge_words
from kbert.analysis.probing import POOLINGS, probe_layers, sentence_probe_data, token_probe_data
from kbert.analysis.statistics import head_statistics
from kbert.training import config_fields
from kbert.training.config_fields import ConfigError, setting

PROBE_TASKS = ("tagging", "classification")


@dataclasses.dataclass
class AnalysisConfig:
    """An analysis run: the model, the texts, the probe's data, what to draw."""

    model: str = setting(help="What kbert.load takes: a preset name, a tools/pretrain.py or "
                         "tools/finetune.py run directory, or a checkpoint directory (not a "
                         "SavedModel: its layers are out of reach).", group="Model")
    input: Optional[str] = setting(None, "A text file, one text per line (blank lines are "
                                   "skipped).", group="Data")
    text: Optional[str] = setting(None, "One more text, given on the command line (drawn "
                                  "first).", group="Data")
    max_length: int = setting(128, "Tokens per text, special tokens included (an integer >= "
                              "3, at most the model's); longer texts are cut.",
                              group="Data", minimum=3)
    max_texts: int = setting(1000, "The most texts read from --input (an integer >= 1).",
                             group="Data", minimum=1)
    probe_input: Optional[str] = setting(
        None, "Labelled data for the layer-wise probe: a CoNLL file (a word and a tag per "
        "line) for --probe_task=tagging, a .csv / .tsv / .jsonl file for classification.",
        group="Data")
    probe_task: str = setting("tagging", "tagging (a tag per word) or classification (a "
                              "label per text).", group="Data", choices=PROBE_TASKS)
    text_column: str = setting("sentence", "classification: the text's column (JSON key).",
                               group="Data")
    label_column: str = setting("label", "classification: the label's column (JSON key).",
                                group="Data")
    pooling: str = setting("mean", "classification: a text's features, the mean of its "
                           "tokens' hidden states or its [CLS] token's.", group="Data",
                           choices=POOLINGS)
    test_fraction: float = setting(0.25, "The share of the probe's texts held out to "
                                   "measure it (between 0 and 1).", group="Data", minimum=0)
    seed: int = setting(0, "Seed of the probe's held-out split.", group="Data")
    batch_size: int = setting(16, "Texts per model call (an integer >= 1).",
                              group="Schedule", minimum=1)
    output_dir: str = setting(help="The folder written (required).", group="Output")
    layer: int = setting(-1, "The heatmap's layer, from 0 (negative counts from the end).",
                         group="Output")
    head: int = setting(0, "The heatmap's head, from 0 (negative counts from the end).",
                        group="Output")
    words: bool = setting(False, "Merge each word's pieces into the word in the pictures "
                          "and the HTML view.", group="Output")
    formats: list = setting(default_factory=lambda: ["png", "svg"], group="Output",
                            help="Picture formats, comma-separated: "
                            f"{', '.join(drawing.FORMATS)}.")
    pictures: int = setting(1, "Texts drawn as a heatmap and a grid (the first ones; an "
                            "integer >= 0).", group="Output", minimum=0)
    html_texts: int = setting(10, "Texts in the HTML view (the first ones; an integer >= "
                              "0).", group="Output", minimum=0)

    def validate(self):
        """Everything that can be checked without loading the model."""
        config_fields.check(self)
        if not 0 < self.test_fraction < 1:
            raise ConfigError(f"--test_fraction={self.test_fraction!r} must be between 0 and "
                              "1 (exclusive).")
        bad = [f for f in self.formats if f not in drawing.FORMATS]
        if bad or not self.formats:
            raise ConfigError(f"--formats={','.join(self.formats)!r}: each must be one of "
                              f"{', '.join(drawing.FORMATS)}.")
        if not (self.input or self.text or self.probe_input):
            raise ConfigError("Nothing to analyse: give --input (a text file), --text or "
                              "--probe_input.")
        for name in ("input", "probe_input"):
            path = getattr(self, name)
            if path and not os.path.isfile(path):
                raise ConfigError(f"--{name}={path!r}: no such file.")

    def texts(self):
        """The texts to analyse: --text, then --input's non-blank lines."""
        texts = [self.text] if self.text else []
        if self.input:
            with open(self.input, encoding="utf-8") as f:
                lines = (line.strip() for line in f)
                texts += [line for line in lines if line][: self.max_texts]
            if len(texts) == bool(self.text):
                raise ConfigError(f"--input={self.input!r} holds no text (only blank lines).")
        return texts


def define_flags(flag_values=None):
    """`tools/analyze.py`'s flags (a flag per field of `AnalysisConfig`, and `--dry_run`);
    returns their help by group."""
    from absl import flags

    return config_fields.define_program(AnalysisConfig, flag_values or flags.FLAGS)


def main(argv):
    """`tools/analyze.py`'s main: the config from the parsed flags, then `run_analysis`;
    a bad flag is a usage error naming it, a bad data file stops with its message."""
    from kbert.tasks.datasets import DataError

    config_fields.run_program(AnalysisConfig, run_analysis, argv,
                              message_errors=(DataError, FileNotFoundError))


def _load(config):
    import kbert
    from kbert.loading import kind_of

    try:
        kind = kind_of(config.model)
    except ValueError as e:
        raise ConfigError(f"--model: {e}") from None
    if kind == "saved_model":
        raise ConfigError(f"--model={config.model!r} is an exported SavedModel, whose layers "
                          "are out of reach: give the checkpoint, run directory or preset it "
                          "came from.")
    loaded = kbert.load(config.model, head=None)
    if loaded.tokenizer is None:
        raise ConfigError(f"--model={config.model!r} has no tokenizer to read text with.")
    longest = loaded.max_sequence_length or config.max_length
    architecture = loaded.model.config
    heads = getattr(architecture, "layer_heads", None)
    if heads is not None and len(set(heads)) > 1:
        raise ConfigError(f"--model={config.model!r} is pruned: its layers have {list(heads)} "
                          "attention heads, and the analysis draws the same heads in every "
                          "layer.")
    try:
        layer, head = drawing.check_head(config.layer, config.head, architecture.num_layers,
                                         architecture.num_heads)
    except ValueError as e:
        raise ConfigError(f"--layer={config.layer} / --head={config.head}: {e}") from None
    return loaded, min(config.max_length, longest), (layer, head)


def _probe(config, inspector):
    from kbert.tasks.text_classification.data import read_classification_file
    from kbert.tasks.token_classification.data import read_conll

    print(f"Probe: {config.probe_task} on {config.probe_input}")
    if config.probe_task == "tagging":
        data = read_conll(config.probe_input)
        features = token_probe_data(inspector, [e.words for e in data.examples],
                                    [e.tags for e in data.examples], data.label_names,
                                    progress=True)
    else:
        data = read_classification_file(config.probe_input, config.text_column,
                                        label_column=config.label_column)
        if data.regression:
            raise ConfigError(f"--probe_input={config.probe_input!r}: its labels are numbers "
                              "(regression); a probe takes class labels.")
        features = sentence_probe_data(inspector, [e.text_a for e in data.examples],
                                       [e.label for e in data.examples], data.label_names,
                                       config.pooling, progress=True)
    try:
        return probe_layers(features, config.test_fraction, config.seed)
    except ValueError as e:
        raise ConfigError(f"--probe_input={config.probe_input!r}: {e}") from None


def run_analysis(config):
    """Runs `config` (an `AnalysisConfig`) and returns the summary written to
    `analysis.json`."""
    config.validate()
    texts = config.texts() if (config.input or config.text) else []
    loaded, max_length, (layer, head) = _load(config)
    inspector = Inspector(loaded.model, loaded.tokenizer, max_length, config.batch_size)
    out = config.output_dir
    os.makedirs(out, exist_ok=True)
    files, summary = [], {"model": loaded.description, "max_length": max_length}

    def write(draw, item, name):
        for extension in config.formats:
            files.append(draw(item, os.path.join(out, f"{name}.{extension}")))

    if texts:
        print(f"Attention statistics over {len(texts)} texts")
        shown = max(config.pictures, config.html_texts)
        kept, truncated = [], 0

        def counted(inspections):
            nonlocal truncated
            for i, inspection in enumerate(inspections):
                truncated += inspection.truncated
                if i < shown:
                    kept.append(merge_words(inspection) if config.words else inspection)
                yield inspection

        statistics = head_statistics(counted(inspector.iterate(texts, hidden_states=False,
                                                               progress=True)))
        for i, inspection in enumerate(kept[: config.pictures]):
            write(lambda x, p: drawing.attention_heatmap(x, p, layer, head), inspection,
                  f"attention_text{i}_layer{layer}_head{head}")
            write(drawing.attention_grid, inspection, f"attention_grid_text{i}")
        write(drawing.plot_head_statistics, statistics, "head_statistics")
        files.append(_text(os.path.join(out, "head_statistics.md"), statistics.table()))
        if config.html_texts:
            files.append(attention_html(kept[: config.html_texts],
                                        os.path.join(out, "attention.html"),
                                        title=f"Attention of {loaded.description}"))
        summary.update(texts=len(texts), truncated=truncated, heads=statistics.to_dict())
    if config.probe_input:
        result = _probe(config, inspector)
        write(drawing.plot_probe, result, "probe")
        files.append(_text(os.path.join(out, "probe.md"), result.table()))
        summary["probe"] = result.to_dict()
        print(result.table())
    summary["files"] = [os.path.basename(f) for f in files]
    _text(os.path.join(out, "analysis.json"), json.dumps(summary, indent=1))
    print(f"Wrote {len(files) + 1} files to {out}")
    return summary


def _text(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    return path
