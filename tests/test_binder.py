"""binder/requirements.txt: the readers' runtime, consistent with requirements.txt.

Binder (repo2docker) installs binder/requirements.txt, not the root requirements.txt.
These tests keep it honest:

* every requirement is an exact pin (or the book's own package, ``-e .``);
* a package that requirements.txt also pins has the same version, so a reader's run
  reproduces the stored outputs;
* nothing of the book's build and test toolchain (jupyter-book, Sphinx, pytest,
  nbval, Playwright, ... and what only they pull in) is installed;
* everything the chapters import, everything the library imports, and the
  library's declared dependencies (pyproject.toml) is installed;
* binder/runtime.txt names the same Python as runtime.txt.
"""
from __future__ import annotations

import ast
import importlib.metadata as md
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder" / "requirements.txt"

# The book's build and test tools: the direct requirements of requirements.txt that
# no notebook needs, and everything in requirements-test.txt (added below).
BUILD_TOOLS = {"jupyter-book", "nbval", "pytest", "pytest-xdist", "sphinx-exercise",
               "sphinx-proof", "sphinx-mathjax-offline", "sphinxcontrib-bibtex"}
# What a reader's notebook needs in any case (JupyterLab-MyST renders the sources).
MUST_LIST = {"ipykernel", "jupyterlab-myst"}

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;]+)$")
_LOCAL = {"-e .", "."}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirements(text: str) -> tuple[dict[str, str], list[str], list[str]]:
    """(exact pins {name: version}, local requirements, other lines) of a requirements file."""
    pins, local, other = {}, [], []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line in _LOCAL:
            local.append(line)
        elif (m := _PIN.match(line)):
            name = canonical(m["name"])
            assert name not in pins, f"{name} is pinned twice"
            pins[name] = m["version"]
        else:
            other.append(line)
    return pins, local, other


def binder_pins() -> dict[str, str]:
    return parse_requirements(BINDER.read_text())[0]


def requirement_names(dist: str) -> set[str]:
    """Names of the unconditional requirements of an installed distribution."""
    names = set()
    for req in md.requires(dist) or []:
        if ";" in req and "extra ==" in req.split(";", 1)[1]:
            continue
        names.add(canonical(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0]))
    return names


def closure(tops: set[str]) -> set[str]:
    """The distributions ``tops`` pull in, as installed in this environment (tops included)."""
    seen, todo = set(), [canonical(t) for t in tops]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(requirement_names(name))
        except md.PackageNotFoundError:
            pass  # an optional dependency that is not installed here
    return seen


def module_distributions() -> dict[str, set[str]]:
    """Import name -> canonical distribution names, from the installed metadata."""
    return {mod: {canonical(d) for d in dists}
            for mod, dists in md.packages_distributions().items()}


def imported_modules(source: str) -> set[str]:
    """Top-level names of the absolute imports in Python source (IPython magics skipped)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    found = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def chapter_imports() -> set[str]:
    found = set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                found |= imported_modules("".join(cell["source"]))
    return found


def library_imports() -> set[str]:
    found = set()
    for path in sorted((ROOT / "lib" / "ssmheads").rglob("*.py")):
        found |= imported_modules(path.read_text())
    return found


def own_package() -> str:
    return canonical(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"])


def missing_distributions(modules: set[str], listed: set[str]) -> dict[str, set[str]]:
    """Third-party modules (not the standard library, not the book's package) whose
    distribution ``listed`` does not contain, with the distributions that provide them."""
    provided = module_distributions()
    missing = {}
    for mod in sorted(modules - set(sys.stdlib_module_names) - {"__future__", "ssmheads"}):
        dists = provided.get(mod)
        assert dists, f"no installed distribution provides the module {mod!r}"
        if not dists & listed:
            missing[mod] = dists
    return missing


# ------------------------------------------------------------------------------ tests

def test_every_requirement_is_an_exact_pin_or_the_book_itself():
    pins, local, other = parse_requirements(BINDER.read_text())
    assert other == [], f"binder/requirements.txt: lines that are not exact pins: {other}"
    assert local == ["-e ."], ("binder/requirements.txt must install the book's package from "
                               f"the repository exactly once (`-e .`), found {local}")
    assert pins, "binder/requirements.txt pins nothing"


def test_shared_pins_agree_with_requirements_txt():
    book = parse_requirements((ROOT / "requirements.txt").read_text())[0]
    binder = binder_pins()
    differ = {name: (version, book[name]) for name, version in binder.items()
              if name in book and book[name] != version}
    assert not differ, ("binder/requirements.txt and requirements.txt pin different "
                        f"versions (binder, requirements.txt): {differ}")
    runtime_closure = closure({own_package(), "ipykernel"})
    unpinned = sorted(n for n in runtime_closure - {own_package()} if n in book and n not in binder)
    assert not unpinned, ("the runtime pulls in packages that requirements.txt pins and "
                          f"binder/requirements.txt does not: {unpinned}")


def test_no_build_or_test_tool_is_installed():
    test_pins = parse_requirements((ROOT / "requirements-test.txt").read_text())[0]
    book = parse_requirements((ROOT / "requirements.txt").read_text())[0]
    tools = BUILD_TOOLS | set(test_pins)
    assert BUILD_TOOLS <= set(book), f"BUILD_TOOLS names packages requirements.txt lacks: {BUILD_TOOLS - set(book)}"
    binder = binder_pins()
    # What only the tools pull in (in this environment, where both are installed).
    tools_only = closure(tools) - closure(set(binder) | {own_package()})
    assert {"sphinx", "docutils", "myst-nb", "pytest", "playwright"} <= tools_only
    listed = sorted(set(binder) & tools_only)
    assert not listed, f"binder/requirements.txt installs build/test tools: {listed}"


def test_everything_the_chapters_and_the_library_import_is_installed():
    listed = set(binder_pins())
    imports = chapter_imports()
    assert {"numpy", "scipy", "matplotlib", "ssmheads"} <= imports  # the scan works
    missing = missing_distributions(imports | library_imports(), listed)
    assert not missing, f"imported but not in binder/requirements.txt: {missing}"


def test_the_library_declared_dependencies_and_the_kernel_are_installed():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {canonical(re.split(r"[\s;<>=!~\[(]", d, maxsplit=1)[0]) for d in declared}
    assert names, "pyproject.toml declares no dependencies"
    missing = sorted((names | MUST_LIST) - set(binder_pins()))
    assert not missing, f"not in binder/requirements.txt: {missing}"


def test_binder_python_is_the_books_python():
    binder = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.\d+", binder), binder
    assert binder == (ROOT / "runtime.txt").read_text().strip()


@pytest.mark.parametrize("text, problem", [
    ("numpy>=2\n-e .\n", "not exact"),
    ("numpy==2.4.6\n", "no local"),
])
def test_parser_flags_loose_or_missing_lines(text, problem):
    pins, local, other = parse_requirements(text)
    if problem == "not exact":
        assert other == ["numpy>=2"]
    else:
        assert local == [] and pins == {"numpy": "2.4.6"}


def test_missing_distributions_detects_an_unlisted_import():
    assert missing_distributions({"numpy", "os", "ssmheads"}, {"numpy"}) == {}
    assert missing_distributions({"scipy"}, {"numpy"}) == {"scipy": {"scipy"}}
