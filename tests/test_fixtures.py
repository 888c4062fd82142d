"""The shipped copy of the published G10 inputs (tests/fixtures) is the artifact's content."""
import gzip
import hashlib
import json

from conftest import ARTIFACT_MANIFEST, FIXTURES, _is_artifact, artifact_path, unpack_artifact_fixture


def _content(path):
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def _check_against_manifest(root):
    manifest = json.loads(ARTIFACT_MANIFEST.read_text())
    for name, entry in manifest.items():
        assert hashlib.sha256(_content(root / name)).hexdigest() == entry["sha256"], name
    return manifest


def test_unpacked_fixture_is_what_the_manifest_lists():
    root = unpack_artifact_fixture()
    manifest = _check_against_manifest(root)
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert files == set(manifest)
    assert len([n for n in manifest if n.endswith("kernels.config.gz")]) == 30


def test_the_artifact_in_use_matches_the_manifest():
    # the full artifact when one is configured or beside the checkout, else the fixture itself
    root = artifact_path()
    assert _is_artifact(root)
    _check_against_manifest(root)


def test_license_and_notice_travel_with_the_fixture():
    assert "Apache License" in (FIXTURES / "LICENSE").read_text()
    assert (FIXTURES / "LICENSE").read_bytes() == (unpack_artifact_fixture() / "LICENSE").read_bytes()
    notice = (FIXTURES / "NOTICE").read_text()
    for words in ("platformxlab/G10", "MICRO 2023", "Apache License, Version 2.0", "What was changed"):
        assert words in notice
