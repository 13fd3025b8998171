"""Named architectures: `kbert.presets.load("bert_base")`, `kbert.presets.list()`.

Each preset is a JSON file in the repository's `presets/` folder (data only): the model
family, every architecture field, the tokenizer settings and the weight source.
"""

import json
from pathlib import Path

from kbert.models import BertBackbone, BertConfig, BertPretrainer

# A source checkout (or editable install) reads ../presets; a wheel carries kbert/preset_files.
_SEARCH_PATH = (
    Path(__file__).resolve().parent.parent / "presets",
    Path(__file__).resolve().parent / "preset_files",
)
HEADS = ("pretrainer", "mlm", None)
_FAMILIES = {"bert": (BertConfig, BertBackbone, BertPretrainer)}


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
    return _FAMILIES[preset["model"]][0].from_dict({**preset["config"], **config_overrides})


def load(name, head="pretrainer", weights=None, dtype=None, **config_overrides):
    """Builds the model of preset `name`.

    Args:
        name: a preset name, see `list()`.
        head: "pretrainer" (default) gives the pretraining model with every head the family
            uses (BERT: masked LM + next-sentence prediction); "mlm" the masked-LM pretrainer
            alone (RoBERTa style); `None` the bare backbone.
        weights: `None` initialises at random. Pretrained weights are not available yet; any
            other value is an error.
        dtype: a Keras dtype policy for the model, e.g. "mixed_bfloat16".
        **config_overrides: architecture fields to change, e.g. `max_sequence_length=128`
            or `dropout=0.0` (validated by the family's config class).

    Returns:
        a `keras.Model`: e.g. `BertPretrainer` or `BertBackbone`.
    """
    preset = get(name)
    if head not in HEADS:
        raise ValueError(f"Unknown head {head!r}. Allowed: {', '.join(map(repr, HEADS))}.")
    if weights is not None:
        raise ValueError(
            f"weights={weights!r}: kbert cannot load pretrained weights yet; "
            "use weights=None for a random initialisation."
        )
    _, backbone_class, pretrainer_class = _FAMILIES[preset["model"]]
    backbone = backbone_class.from_bert_config(config(name, **config_overrides), dtype=dtype,
                                               name=f"{name}_backbone")
    if head is None:
        return backbone
    return pretrainer_class(backbone, next_sentence_prediction=(head == "pretrainer"), name=name)


__all__ = ["HEADS", "config", "get", "list", "load"]
