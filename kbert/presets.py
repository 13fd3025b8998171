"""Named architectures: `kbert.presets.load("bert_base")`, `kbert.presets.list()`.

Each preset is a JSON file in the repository's `presets/` folder (data only): the model
family, every architecture field, the tokenizer settings and the weight source.

`kbert.load(name)` (`kbert.loading`) takes a preset name like any other spec and builds its
model the way `load` here does, from the same `checkpoint(name, weights)`; `load` stays as the
short form of it for a preset's model alone.
"""

import json
import os
from pathlib import Path

from kbert import models

# A source checkout (or editable install) reads ../presets; a wheel carries kbert/preset_files.
_SEARCH_PATH = (
    Path(__file__).resolve().parent.parent / "presets",
    Path(__file__).resolve().parent / "preset_files",
)
HEADS = models.HEADS


def _preset_files():
    files = {}
    for folder in reversed(_SEARCH_PATH):
        if folder.is_dir():
            files.update({path.stem: path for path in folder.glob("*.json")})
    return files


def list():  # noqa: A001 - the public name is kbert.presets.list
    """Names of all presets, sorted."""
    return sorted(_preset_files())


def get(name):
    """The preset's JSON content as a dict. Unknown names raise a ValueError listing all."""
    files = _preset_files()
    if name not in files:
        raise ValueError(f"Unknown preset {name!r}. Available: {', '.join(sorted(files))}.")
    with open(files[name], encoding="utf-8") as f:
        return json.load(f)


def config(name, **config_overrides):
    """The architecture config of preset `name` with `config_overrides` applied, validated."""
    preset = get(name)
    return models.FAMILIES[preset["model"]].config.from_dict({**preset["config"], **config_overrides})


PRETRAINED = "pretrained"
# Fields that must agree between a preset and a checkpoint passed as weights="path".
_SHAPE_FIELDS = ("vocabulary_size", "num_layers", "hidden_size", "num_heads",
                 "intermediate_size", "type_vocab_size", "embedding_size", "num_groups",
                 "intra_bottleneck_size", "num_feedforward_networks", "layer_heads",
                 "layer_intermediate_sizes", "first_layer_norm",
                 "layer_feedforward_sizes")


def _check_pin(name, weights, sha256):
    if sha256 is not None and weights != PRETRAINED:
        raise ValueError(f"sha256= pins the hash of preset {name!r}'s release; weights="
                         f"{weights!r} does not download it. Pass sha256 only with "
                         f"weights={PRETRAINED!r}.")


def checkpoint(name, weights=PRETRAINED, sha256=None):
    """The `kbert.convert.Checkpoint` that `weights` names for preset `name`: its release
    ("pretrained", converted once into the cache) or a checkpoint directory of its
    architecture."""
    from kbert import convert
    from kbert.convert import download

    preset = get(name)
    _check_pin(name, weights, sha256)
    if weights == PRETRAINED:
        if not preset.get("weights"):
            raise ValueError(
                f"Preset {name!r} has no pretrained release; use weights=None (random) or "
                "weights='/path/to/checkpoint'."
            )
        return download.pretrained(name, preset["weights"], sha256=sha256)
    if not isinstance(weights, (str, os.PathLike)):
        raise ValueError(
            f"weights={weights!r}: expected {PRETRAINED!r} (the preset's release), None "
            "(random initialisation) or the path of a checkpoint directory."
        )
    found = convert.read(weights)
    expected = config(name)
    wrong = [f"{field}: preset {getattr(expected, field, None)}, checkpoint "
             f"{getattr(found.config, field, None)}"
             for field in _SHAPE_FIELDS
             if getattr(expected, field, None) != getattr(found.config, field, None)]
    if found.family != preset["model"] or wrong:
        raise ValueError(
            f"{weights} is not a {name} checkpoint ({found.family}; "
            f"{'; '.join(wrong) or 'family differs'}). Load it with "
            "kbert.convert.load(path) instead."
        )
    return found


def load(name, head="pretrainer", weights=PRETRAINED, dtype=None, sha256=None,
         **config_overrides):
    """Builds the model of preset `name`, by default with its pretrained weights.

    Args:
        name: a preset name, see `list()`.
        head: "pretrainer" (default) gives the pretraining model with every head the family
            uses (BERT: masked LM + next-sentence prediction); "mlm" the masked-LM pretrainer
            alone (RoBERTa style); `None` the bare backbone.
        weights: "pretrained" (default): the preset's official release, downloaded once into
            `$KBERT_CACHE_DIR` (default ~/.cache/kbert), checked against its sha256 and
            converted. A preset without a sha256 is trusted on first use: the first
            download's sha256 is recorded in the cache (known_sha256.json) and every later
            use must match it. A path: a local checkpoint directory (Hugging Face, original
            TF1 or keras-hub) of this architecture. `None`: random initialisation.
        dtype: a Keras dtype policy for the model, e.g. "mixed_bfloat16".
        sha256: pins the release's sha256 (64 hex digits; for a release of loose files a
            dict of file name -> sha256), over the preset's and the recorded one; so does
            `$KBERT_SHA256_<NAME>` (e.g. KBERT_SHA256_BERT_BASE) when this is `None`.
        **config_overrides: architecture fields to change, e.g. `max_sequence_length=128`
            or `dropout=0.0` (validated by the family's config class). With pretrained
            weights only `kbert.convert.checkpoint.FREE_FIELDS` (the dropouts, `activation`,
            `initializer_range`) and a shorter `max_sequence_length` may change.

    Returns:
        a `keras.Model`: e.g. `BertPretrainer` or `BertBackbone`.
    """
    preset = get(name)
    if head not in HEADS:
        raise ValueError(f"Unknown head {head!r}. Allowed: {', '.join(map(repr, HEADS))}.")
    if weights is None:
        _check_pin(name, weights, sha256)
        return models.build(preset["model"], config(name, **config_overrides), head=head,
                            dtype=dtype, name=name)
    return checkpoint(name, weights, sha256).build(head=head, dtype=dtype, name=name,
                                                   **config_overrides)


def load_tokenizer(name, weights=PRETRAINED, sha256=None):
    """The tokenizer of preset `name`'s release (or of the checkpoint at `weights`): a
    `WordPieceTokenizer`, for ALBERT a `SentencePieceTokenizer`, for RoBERTa a
    `BytePairTokenizer`. `sha256`: as in `load`."""
    return checkpoint(name, weights, sha256).tokenizer()


__all__ = ["HEADS", "PRETRAINED", "checkpoint", "config", "get", "list", "load",
           "load_tokenizer"]
