"""docs/presets.md's catalogue and each family page's presets (docs/families/NAME.md), made
from presets/*.json: `python -m tests.docs.presets_page` rewrites the tables between the
pages' markers (tests/docs/test_presets_page.py checks that the pages hold what this makes).
The parameters are counted on each preset's backbone built with shapes only
(tests.helpers.shapes_only: no weights drawn)."""

import functools

from tests.docs.blocks import ROOT

PAGE = ROOT / "docs" / "presets.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"
FAMILY_PAGES = ROOT / "docs" / "families"
FAMILY_START, FAMILY_END = "<!-- family-presets:start -->", "<!-- family-presets:end -->"
# kbert.models.FAMILIES' names as the papers write them.
FAMILY_NAMES = {"bert": "BERT", "albert": "ALBERT", "distil_bert": "DistilBERT",
                "electra": "ELECTRA", "roberta": "RoBERTa", "deberta_v3": "DeBERTa-v3",
                "mobile_bert": "MobileBERT", "modern_bert": "ModernBERT"}
TOKENIZERS = {"wordpiece": "WordPiece", "sentencepiece": "SentencePiece",
              "bpe": "byte-level BPE", "tokenizer_json": "BPE (tokenizer.json)"}


@functools.lru_cache(maxsize=None)
def parameters(name):
    """The backbone's parameter count of preset `name`."""
    import kbert
    from tests.helpers import shapes_only

    return shapes_only(lambda: kbert.presets.load(name, head=None, weights=None)).count_params()


def _millions(count):
    return f"{count / 1e6:,.0f}M" if count >= 1e8 else f"{count / 1e6:,.1f}M"


def rows(family=None):
    """One line of the table per preset, in kbert.presets.list() order (`family`: only its
    presets, without the family column); a licence that is the repository's (the preset's
    `license` ends in " (repository)") is marked with a star."""
    import kbert

    columns = ["preset", "family", "layers / hidden / heads", "parameters", "vocabulary",
               "max tokens", "languages", "licence"]
    if family is not None:
        columns.remove("family")
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for name in kbert.presets.list():
        preset = kbert.presets.get(name)
        if family is not None and preset["model"] != family:
            continue
        config, tokenizer = preset["config"], preset["tokenizer"]
        case = "uncased" if tokenizer.get("lowercase") else "cased"
        cells = [f"`{name}`", FAMILY_NAMES[preset["model"]],
                 f"{config['num_layers']} / {config['hidden_size']} / {config['num_heads']}",
                 _millions(parameters(name)),
                 f"{config['vocabulary_size']:,} {TOKENIZERS[tokenizer['type']]}, {case}",
                 f"{config['max_sequence_length']:,}", preset["languages"],
                 preset["license"].replace(" (repository)", "*")]
        if family is not None:
            del cells[1]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render(text, family=None, markers=(START, END)):
    """`text` (the page) with its table made again (`family`: a family page's)."""
    start, end = markers
    before, rest = text.split(start + "\n", 1)
    _, after = rest.split(end, 1)
    return before + start + "\n" + "\n".join(rows(family)) + "\n" + end + after


def family_page(family):
    return FAMILY_PAGES / f"{family}.md"


def render_family(family):
    """The family page of `family` with its presets table made again; a star marks a
    licence that is the repository's, as on the catalogue."""
    return render(family_page(family).read_text(encoding="utf-8"), family,
                  (FAMILY_START, FAMILY_END))


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    for family in FAMILY_NAMES:
        family_page(family).write_text(render_family(family), encoding="utf-8")
        print(f"wrote {family_page(family).relative_to(ROOT)}")
