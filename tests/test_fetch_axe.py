"""tools/fetch_axe.py: axe-core at the version and sha512 of tools/node/package-lock.json,
unpacked where npm would put it, without node. Nothing is downloaded here: a package is
made in memory."""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("fetch_axe", ROOT / "tools" / "fetch_axe.py")
fetch_axe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fetch_axe)


def tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def node_folder(tmp_path: Path, version: str = "9.9.9", data: bytes = b"") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "package.json").write_text(json.dumps({"dependencies": {"axe-core": version}}))
    (tmp_path / "package-lock.json").write_text(json.dumps({"packages": {
        "node_modules/axe-core": {"version": version, "integrity": integrity(data)}}}))
    return tmp_path


def test_the_lock_pins_a_version_and_a_sha512():
    pin = fetch_axe.pinned()
    assert pin["integrity"].startswith("sha512-")
    assert pin["url"] == f"https://registry.npmjs.org/axe-core/-/axe-core-{pin['version']}.tgz"


def test_a_package_that_does_not_match_the_lock_is_refused():
    data = b"the package"
    fetch_axe.check_integrity(data, integrity(data))
    with pytest.raises(ValueError, match="sha512 mismatch"):
        fetch_axe.check_integrity(data + b"!", integrity(data))
    with pytest.raises(ValueError, match="expected sha512"):
        fetch_axe.check_integrity(data, "sha1-abc")


def test_package_json_and_lock_must_agree(tmp_path):
    node = node_folder(tmp_path)
    (node / "package.json").write_text(json.dumps({"dependencies": {"axe-core": "1.0.0"}}))
    with pytest.raises(SystemExit, match="package.json asks for axe-core 1.0.0"):
        fetch_axe.pinned(node)


def test_unpacks_where_npm_would_and_nothing_outside(tmp_path, monkeypatch):
    data = tarball({"package/axe.min.js": b"window.axe = {};", "package/package.json": b'{"version": "9.9.9"}',
                    "package/locales/de.json": b"{}", "../evil.js": b"no", "package/../../evil.js": b"no"})
    node = node_folder(tmp_path / "node", data=data)
    monkeypatch.setattr(fetch_axe, "download", lambda url: data)
    assert fetch_axe.main(["--node", str(node)]) == 0
    dest = node / "node_modules" / "axe-core"
    assert (dest / "axe.min.js").read_bytes() == b"window.axe = {};"
    assert (dest / "locales" / "de.json").is_file()
    assert not list(tmp_path.rglob("evil.js"))
    # Already there: not fetched again.
    monkeypatch.setattr(fetch_axe, "download", lambda url: pytest.fail("fetched again"))
    assert fetch_axe.main(["--node", str(node)]) == 0


def test_a_corrupt_download_fails(tmp_path, monkeypatch, capsys):
    data = tarball({"package/axe.min.js": b"x", "package/package.json": b'{"version": "9.9.9"}'})
    node = node_folder(tmp_path, data=data)
    monkeypatch.setattr(fetch_axe, "download", lambda url: data[:20] + bytes([data[20] ^ 1]) + data[21:])
    assert fetch_axe.main(["--node", str(node)]) == 1
    assert "sha512 mismatch" in capsys.readouterr().err
    assert not (node / "node_modules" / "axe-core" / "axe.min.js").exists()
