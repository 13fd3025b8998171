"""Every file under tests/fixtures/ has the sha256 that the script which made it recorded
(tests/fixtures/SHA256SUMS, written by tests/fixtures/fixture_checksums.py): a fixture edited
by hand, or one left half-regenerated, fails here, naming the files."""

import importlib.util
from pathlib import Path

_FILE = Path(__file__).resolve().parent / "fixtures" / "fixture_checksums.py"
_SPEC = importlib.util.spec_from_file_location("fixture_checksums", _FILE)
checksums = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(checksums)


def test_fixtures_match_their_recorded_sha256():
    recorded, found = checksums.read(), checksums.compute()
    changed = sorted(p for p in set(recorded) & set(found) if recorded[p] != found[p])
    missing = sorted(set(recorded) - set(found))
    unrecorded = sorted(set(found) - set(recorded))
    assert not (changed or missing or unrecorded), (
        f"tests/fixtures differ from SHA256SUMS: changed {changed}, missing {missing}, not "
        f"recorded {unrecorded}. Regenerate them with their tests/fixtures/make_*.py script "
        "(it records the new hashes), or after a deliberate change run "
        "python tests/fixtures/fixture_checksums.py.")


def test_every_fixture_script_records_the_hashes():
    scripts = sorted(_FILE.parent.glob("make_*.py"))
    assert scripts
    silent = [s.name for s in scripts if "fixture_checksums" not in s.read_text()]
    assert not silent, f"{silent} write fixtures without updating SHA256SUMS"
