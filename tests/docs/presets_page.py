"""docs/presets.md's catalogue, made from presets/*.json: `python -m tests.docs.presets_page`
rewrites the table between the page's catalogue markers (tests/docs/test_presets_page.py
checks that the page holds what this makes). The parameters are counted on each preset's
backbone built with shapes only (tests.helpers.shapes_only: no weights drawn)."""


from tests.docs.blocks import ROOT

PAGE = ROOT / "docs" / "presets.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"
# kbert.models.FAMILIES' names as the papers write them.
FAMILY_NAMES = {"bert": "BERT", "albert": "ALBERT", "distil_bert": "DistilBERT",
                "electra": "ELECTRA", "roberta": "RoBERTa", "deberta_v3": "DeBERTa-v3",
                "mobile_bert": "MobileBERT", "modern_bert": "ModernBERT"}
TOKENIZERS = {"wordpiece": "WordPiece", "sentencepiece": "SentencePiece",
              "bpe": "byte-level BPE", "tokenizer_json": "BPE (tokenizer.json)"}


def parameters(name):
    """The backbone's parameter count of preset `name`."""
    import kbert
    from tests.helpers import shapes_only

    return shapes_only(lambda: kbert.presets.load(name, head=None, weights=None)).count_params()


def _millions(count):
    return f"{count / 1e6:,.0f}M" if count >= 1e8 else f"{count / 1e6:,.1f}M"


def rows():
    """One line of the table per preset, in kbert.presets.list() order; a licence that is the
    repository's (the preset's `license` ends in " (repository)") is marked with a star."""
    import kbert

    lines = ["| preset | family | layers / hidden / heads | parameters | vocabulary | "
             "max tokens | languages | licence |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in kbert.presets.list():
        preset = kbert.presets.get(name)
        config, tokenizer = preset["config"], preset["tokenizer"]
        case = "uncased" if tokenizer.get("lowercase") else "cased"
        lines.append(
            f"| `{name}` | {FAMILY_NAMES[preset['model']]} | {config['num_layers']} / "
            f"{config['hidden_size']} / {config['num_heads']} | {_millions(parameters(name))} | "
            f"{config['vocabulary_size']:,} {TOKENIZERS[tokenizer['type']]}, {case} | "
            f"{config['max_sequence_length']:,} | {preset['languages']} | "
            f"{preset['license'].replace(' (repository)', '*')} |")
    return lines


def render(text):
    """`text` (the page) with its catalogue made again."""
    before, rest = text.split(START + "\n", 1)
    _, after = rest.split(END, 1)
    return before + START + "\n" + "\n".join(rows()) + "\n" + END + after


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
