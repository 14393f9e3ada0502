"""First contact: what a newcomer reads before the book (README.md, CITATION.cff, CHANGELOG.md, the version).

The README opens with what the book is, who it is for, where to read it (the site's
address, the one tools/set_repository.py manages), how to run it (Binder, Colab,
locally) and how to cite it, and only then the builders' material. CITATION.cff is
Citation File Format 1.2.0 (its required keys and the shapes used here; the full schema
is not vendored: it was validated against citation-file-format's schema.json when
written), cites the paper the book teaches, and gives the repository's and the site's
addresses. There is one version number, ``ssmheads.__version__``: the package
metadata reads it, and CITATION.cff, the BibTeX entries and the top of CHANGELOG.md
repeat it.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

import ssmheads

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import set_repository as sr  # noqa: E402  (tools/ is not a package)

README = (ROOT / "README.md").read_text(encoding="utf-8")
URL = sr.config_places(ROOT)["_config.yml repository.url"]
SITE = sr.site_address(ROOT)


def _section(text: str, heading: str) -> str:
    """The text of a ``## heading`` section, up to the next heading of level 1 or 2."""
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^#{{1,2}} |\Z)", text, re.M | re.S)
    assert m, f"no section '## {heading}'"
    return m.group(1)


def test_the_readme_opens_for_readers_and_then_for_builders():
    builders = README.index("make book")
    opening = README[:builders]
    assert README.startswith("# How Many Heads Make an SSM?\n")
    assert "executable textbook" in opening.lower()[:600], "the first paragraph says what the book is"
    for heading in ("Read it", "Run it", "Cite it"):
        assert f"\n## {heading}\n" in opening, f"'{heading}' comes before the builders' material"
    assert "**Who it is for.**" in opening
    assert opening.index("Read it") < opening.index("Run it") < opening.index("Cite it")


def test_the_readme_says_where_to_read_it():
    read = _section(README, "Read it")
    assert SITE in read, f"the site's address {SITE} (html.baseurl or the repository's Pages address)"
    assert sr.text_file_problems(ROOT) == [], "run: python tools/set_repository.py URL"
    for page in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"/notebooks/{page.name}" in read, f"no Colab link to notebooks/{page.name}"


def test_the_readme_says_how_to_run_it():
    run = _section(README, "Run it")
    org_repo = URL.removeprefix("https://github.com/")
    assert f"mybinder.org/v2/gh/{org_repo}/" in run
    assert "Colab" in run and f"git clone {URL}" in run
    assert "reload" in run, "what to do when an explorer shows text instead of sliders"


def bibtex_entries(text: str) -> dict[str, str]:
    """``{key: entry}`` of the ```bibtex blocks of a Markdown text."""
    blocks = re.findall(r"```bibtex\n(.*?)```", text, re.S)
    return {m.group(1): m.group(0) for block in blocks for m in re.finditer(r"@\w+\{([\w:-]+),.*?\n\}", block, re.S)}


@pytest.mark.parametrize("name", ["README.md", "book/intro.md"])
def test_bibtex_entries_for_the_book_and_the_paper(name):
    entries = bibtex_entries((ROOT / name).read_text(encoding="utf-8"))
    assert set(entries) >= {"howmanyheads2026book", "ghodsi2025heads"}, name
    book = entries["howmanyheads2026book"]
    assert f"version   = {{{ssmheads.__version__}}}" in book and SITE in book and URL in book
    assert "{{The How Many Heads authors}}" in book
    paper = entries["ghodsi2025heads"]
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    assert paper in bib, "the paper's entry is the one of book/references.bib"


def test_citation_cff_is_cff_1_2_0_and_cites_the_paper():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert cff.get(key), f"CITATION.cff: required key {key!r}"
    assert cff["type"] in ("software", "dataset")
    assert cff["authors"] == [{"name": "The How Many Heads authors"}]
    assert str(cff["version"]) == ssmheads.__version__
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(cff["date-released"]))
    assert cff["repository-code"] == URL and cff["url"] == SITE
    allowed = {"cff-version", "message", "type", "title", "abstract", "authors", "version", "date-released",
               "license", "repository-code", "url", "keywords", "preferred-citation", "references",
               "identifiers", "doi", "commit", "contact", "license-url", "repository", "repository-artifact"}
    assert set(cff) <= allowed, set(cff) - allowed
    (paper,) = [r for r in cff["references"] if "2512.15115" in str(r)]
    assert paper["type"] == "article" and paper["authors"][0]["family-names"] == "Ghodsi"
    assert paper["title"].startswith("How Many Heads Make an SSM?") and paper["year"] == 2025
    preferred = cff["preferred-citation"]
    assert preferred["type"] == "book" and str(preferred["version"]) == ssmheads.__version__
    for reference in [preferred, *cff["references"]]:
        assert reference["title"] and reference["authors"]


def test_one_version_number():
    version = ssmheads.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'attr = "ssmheads.__version__"' in pyproject
    project = pyproject[pyproject.index("[project]"):].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M), "pyproject.toml states a version of its own"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## (\d+\.\d+\.\d+)", changelog, re.M)
    assert first and first.group(1) == version, "CHANGELOG.md's newest entry is not the current version"
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert f"version {version}" in " ".join(intro.split()), "the introduction gives the version"
