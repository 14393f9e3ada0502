"""Fetch axe-core, the contrast checker of tools/site_check.py, without Node.

tools/node/package-lock.json pins axe-core's version and the sha512 of its package.
This script downloads that package from the npm registry (the tarball ``npm ci`` would
download), checks it against the lock's sha512, and unpacks it where ``npm ci --prefix
tools/node`` would: tools/node/node_modules/axe-core/ (site_check injects its axe.min.js
into each page from there; nothing is loaded from the network by the pages). So the
browser check needs Python and the npm registry, and no node or npm; with npm installed,
``npm ci --prefix tools/node`` gives the same files.

    python tools/fetch_axe.py            # fetch unless the pinned version is there
    python tools/fetch_axe.py --force    # fetch again

The registry is https://registry.npmjs.org unless ``npm_config_registry`` (or
``NPM_CONFIG_REGISTRY``) names another, as for npm. Exit status 1, with the reason, when
the package cannot be fetched or does not match the lock.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import time
import urllib.request
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "tools" / "node"
PACKAGE = "axe-core"
REGISTRY = "https://registry.npmjs.org"


def pinned(node: Path = NODE) -> dict:
    """The version, sha512 integrity and tarball address of axe-core in the lock."""
    lock = json.loads((node / "package-lock.json").read_text())
    entry = lock["packages"][f"node_modules/{PACKAGE}"]
    wanted = json.loads((node / "package.json").read_text())["dependencies"][PACKAGE]
    if wanted != entry["version"]:
        raise SystemExit(f"fetch_axe: package.json asks for {PACKAGE} {wanted}, the lock pins "
                         f"{entry['version']}; run `npm install --prefix tools/node` to update the lock")
    registry = (os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")
                or REGISTRY).rstrip("/")
    version = entry["version"]
    url = entry.get("resolved") or f"{registry}/{PACKAGE}/-/{PACKAGE}-{version}.tgz"
    return {"version": version, "integrity": entry["integrity"], "url": url}


def check_integrity(data: bytes, integrity: str) -> None:
    """Raise ValueError unless ``data`` has the sha512 of the lock's integrity string."""
    algo, _, digest = integrity.partition("-")
    if algo != "sha512":
        raise ValueError(f"the lock's integrity is {algo}, expected sha512")
    got = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if got != digest:
        raise ValueError(f"sha512 mismatch: the lock says {digest}, the download has {got}")


def unpack(data: bytes, dest: Path) -> list[Path]:
    """The package's regular files (``package/...`` in the tarball) written under ``dest``."""
    written = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = PurePosixPath(member.name).parts
            if len(parts) < 2 or parts[0] != "package" or ".." in parts or parts[1].startswith("/"):
                continue
            target = dest.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())  # mtime: now (make compares it)
            written.append(target)
    return written


def installed_version(dest: Path) -> str | None:
    try:
        return json.loads((dest / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def download(url: str, tries: int = 3) -> bytes:
    for attempt in range(1, tries + 1):
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return response.read()
        except OSError as error:
            if attempt == tries:
                raise SystemExit(f"fetch_axe: cannot download {url}: {error}")
            time.sleep(2 * attempt)
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="fetch even if the pinned version is there")
    parser.add_argument("--node", type=Path, default=NODE, help="the folder of package-lock.json")
    args = parser.parse_args(argv)
    pin = pinned(args.node)
    dest = args.node / "node_modules" / PACKAGE
    if not args.force and installed_version(dest) == pin["version"] and (dest / "axe.min.js").is_file():
        (dest / "axe.min.js").touch()  # up to date for make
        print(f"fetch_axe: {PACKAGE} {pin['version']} is already in {dest.relative_to(ROOT) if ROOT in dest.parents else dest}")
        return 0
    data = download(pin["url"])
    try:
        check_integrity(data, pin["integrity"])
    except ValueError as error:
        print(f"fetch_axe: {pin['url']}: {error}", file=sys.stderr)
        return 1
    written = unpack(data, dest)
    if not (dest / "axe.min.js").is_file() or installed_version(dest) != pin["version"]:
        print(f"fetch_axe: {pin['url']} holds no axe.min.js of version {pin['version']}", file=sys.stderr)
        return 1
    print(f"fetch_axe: {PACKAGE} {pin['version']} ({len(written)} files, sha512 checked) in "
          f"{dest.relative_to(ROOT) if ROOT in dest.parents else dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
