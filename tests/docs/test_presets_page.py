"""docs/presets.md: its catalogue is what tests/docs/presets_page.py makes from presets/*.json
(every preset, with its parameter count, languages and licence), and its advice names only
presets that exist."""

import re

import kbert
from kbert import models
from tests.docs import presets_page


def test_the_catalogue_is_made_from_the_presets():
    for name in kbert.presets.list():
        preset = kbert.presets.get(name)
        assert preset.get("languages") and preset.get("license"), name
    assert set(presets_page.FAMILY_NAMES) == set(models.FAMILIES)
    text = presets_page.PAGE.read_text(encoding="utf-8")
    assert text == presets_page.render(text), (
        "docs/presets.md is out of date: python -m tests.docs.presets_page")
    for name in kbert.presets.list():
        assert f"| `{name}` |" in text


def test_the_advice_names_presets_that_exist():
    text = presets_page.PAGE.read_text(encoding="utf-8")
    advice = text.split("## Which model should I use", 1)[1].split("## All presets", 1)[0]
    named = set(re.findall(r"`([a-z0-9_]+)`", advice))
    patterns = {n for n in re.findall(r"`([a-z_]+)_\*`", advice)}
    presets = set(kbert.presets.list())
    assert named and named <= presets, named - presets
    for prefix in patterns:
        assert any(p.startswith(prefix + "_") for p in presets), prefix


def test_each_family_has_its_page_with_its_presets_and_classes():
    """docs/families/NAME.md for every family of kbert.models.FAMILIES, in the site's
    navigation, its presets table current and its classes named."""
    navigation = (presets_page.ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for family, record in models.FAMILIES.items():
        page = presets_page.family_page(family)
        assert page.is_file(), f"no page for {family}"
        assert f"families/{family}.md" in navigation, family
        text = page.read_text(encoding="utf-8")
        assert text.startswith(f"# {presets_page.FAMILY_NAMES[family]}\n"), family
        assert text == presets_page.render_family(family), (
            f"{page.name} is out of date: python -m tests.docs.presets_page")
        for cls in (record.config, record.backbone, record.pretrainer):
            assert f"`{cls.__name__}`" in text or f"models.{cls.__name__}`" in text, (
                family, cls.__name__)
