"""One place for the repository URL: every use agrees, and tools/set_repository.py changes them all.

The URL is used by ``repository.url`` in _config.yml (repository and launch buttons), by
``html.baseurl`` when it is the repository's GitHub Pages address, by the set-up cell of
every chapter (``pip install git+URL`` in Colab or a download) and by the portable
notebooks in notebooks/ (which copy that cell). ``set_repository`` is only ever run
here on a temporary copy of the files it edits.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import set_repository as sr  # noqa: E402  (tools/ is not a package)

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
NEW = "https://github.com/New-Org/heads-book"


def test_every_place_uses_the_configured_url():
    places = sr.repository_places(ROOT)
    assert len(places) >= 1 + len(CHAPTERS)  # repository.url and one set-up cell per chapter
    assert sr.disagreements(ROOT) == [], "run: python tools/set_repository.py URL"
    url = places["_config.yml repository.url"]
    assert sr.normalise(url) == url, "repository.url is not of the form https://github.com/ORG/REPO"


@pytest.fixture
def book_copy(tmp_path):
    """The files set_repository edits, copied into a temporary book."""
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters")
    return tmp_path


def _differing_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.split("\n"), after.split("\n")
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b) if x != y]


def test_set_repository_changes_every_place_and_nothing_else(book_copy):
    old = sr.config_places(book_copy)["_config.yml repository.url"]
    config_before = (book_copy / "_config.yml").read_text()
    notebooks_before = {p.name: p.read_text() for p in (book_copy / "chapters").glob("*.ipynb")}
    report = sr.set_repository(NEW + ".git/", book_copy, portable=False)
    assert "_config.yml: repository.url" in report
    # _config.yml: the url line only, indentation kept
    (line,) = _differing_lines(config_before, (book_copy / "_config.yml").read_text())
    assert line[0].replace(old, NEW) == line[1] and line[1].strip() == f"url: {NEW}"
    # each chapter: one line of the set-up cell, nothing else (outputs, ids, metadata unchanged)
    for path in sorted((book_copy / "chapters").glob("*.ipynb")):
        (line,) = _differing_lines(notebooks_before[path.name], path.read_text())
        assert f"git+{old}" in line[0] and line[0].replace(old, NEW) == line[1]
        before, after = json.loads(notebooks_before[path.name]), json.loads(path.read_text())
        assert before["cells"][1:] == after["cells"][1:]
    places = sr.repository_places(book_copy)
    assert set(places.values()) == {NEW} and sr.disagreements(book_copy) == []
    assert sr.main(["--check", "--root", str(book_copy)]) == 0


def test_a_derived_base_url_follows_and_a_custom_one_stays(book_copy):
    config = book_copy / "_config.yml"
    text = config.read_text()
    assert "baseurl" not in text or "github.io" in text
    old = sr.config_places(book_copy)["_config.yml repository.url"]
    with_base = text.replace("\nhtml:\n", f"\nhtml:\n  baseurl: {sr.pages_address(old)}   # the site\n", 1)
    assert with_base != text
    config.write_text(with_base)
    assert sr.disagreements(book_copy) == []
    sr.set_repository(NEW, book_copy, portable=False)
    assert sr.config_places(book_copy)["_config.yml html.baseurl"] == "https://new-org.github.io/heads-book/"
    assert "baseurl: https://new-org.github.io/heads-book/   # the site" in config.read_text()
    config.write_text(config.read_text().replace("https://new-org.github.io/heads-book/", "https://heads.example.org/"))
    sr.set_repository(NEW + "-2", book_copy, portable=False)
    assert sr.config_places(book_copy)["_config.yml html.baseurl"] == "https://heads.example.org/"
    assert sr.disagreements(book_copy) == []


def test_disagreement_is_reported(book_copy):
    path = sorted((book_copy / "chapters").glob("*.ipynb"))[1]
    old = sr.setup_cell_url(path)
    path.write_text(path.read_text().replace(f"git+{old}", f"git+{NEW}"))
    (wrong,) = sr.disagreements(book_copy)
    assert path.name in wrong and NEW in wrong
    assert sr.main(["--check", "--root", str(book_copy)]) == 1


@pytest.mark.parametrize("bad, message", [
    ("", "give the repository's URL"),
    ("github.com/org/repo", "not a GitHub repository URL"),
    ("http://github.com/org/repo", "use https://"),
    ("https://gitlab.com/org/repo", "not a GitHub repository URL"),
    ("https://github.com/org", "not of the form"),
    ("https://github.com/org/repo/tree/main", "not of the form"),
    ("https://github.com/-org/repo", "not of the form"),
    ("https://github.com/org/re po", "not of the form"),
    ("https://github.com/org/..", "not a repository name"),
])
def test_garbage_is_refused_and_nothing_is_written(book_copy, bad, message):
    before = {p: p.read_text() for p in [book_copy / "_config.yml", *(book_copy / "chapters").glob("*.ipynb")]}
    with pytest.raises(sr.RepositoryError, match=message):
        sr.set_repository(bad, book_copy, portable=False)
    assert sr.main([bad, "--root", str(book_copy), "--no-portable"]) == 2
    assert all(p.read_text() == text for p, text in before.items())


@pytest.mark.parametrize("url", ["https://github.com/org/repo", "https://github.com/org/repo/",
                                 "https://github.com/org/repo.git", " https://github.com/o-r-g/re_po.2 "])
def test_good_urls_are_normalised(url):
    assert sr.normalise(url) in ("https://github.com/org/repo", "https://github.com/o-r-g/re_po.2")


def test_set_repository_regenerates_the_portable_notebooks(tmp_path):
    """With tools/portable.py present, the portable notebooks follow the URL (set-up cell and site links)."""
    if not (ROOT / "tools" / "portable.py").exists():
        pytest.skip("no tools/portable.py: set_repository leaves notebooks/ alone")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ("chapters", "book"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("_build", "__pycache__"))
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "portable.py", tmp_path / "tools" / "portable.py")
    if (ROOT / "tools" / "bookkit").is_dir():   # the tooling's core, which tools/portable.py imports
        shutil.copytree(ROOT / "tools" / "bookkit", tmp_path / "tools" / "bookkit",
                        ignore=shutil.ignore_patterns("__pycache__"))
    old = sr.config_places(tmp_path)["_config.yml repository.url"]
    report = sr.set_repository(NEW, tmp_path, portable=True)
    assert "notebooks/: regenerated by tools/portable.py --all" in report
    portable = sorted((tmp_path / "notebooks").glob("*.ipynb"))
    assert [p.name for p in portable] == [p.name for p in CHAPTERS]
    for path in portable:
        assert sr.setup_cell_url(path) == NEW
        text = path.read_text()
        assert old not in text and sr.pages_address(old) not in text
        assert sr.pages_address(NEW) in text, f"{path.name}: no link to the site at its new address"
    assert sr.disagreements(tmp_path) == []


# --------------------------------------------------------------------------- the set-up cell's text


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_setup_cell_is_the_tools_and_fits_76_columns(path):
    assert sr.setup_cell_problems(path) == [], "run: python tools/set_repository.py --setup-cells"
    source = sr.setup_cell_source(path)
    assert max(len(line) for line in source.split("\n")) <= sr.MAX_LINE
    assert sr.setup_block(sr.setup_cell_url(path)) in source + "\n"


def test_the_setup_block_fits_and_prints_one_line_after_installing(capsys):
    block = sr.setup_block("https://github.com/example-org/how-many-heads")
    assert max(len(line) for line in block.split("\n")) <= sr.MAX_LINE
    assert len(sr.RELOAD) <= sr.MAX_LINE and "reload" in sr.RELOAD and "sliders" in sr.RELOAD
    calls = []

    class Util:
        @staticmethod
        def find_spec(name, installed=False):
            return object() if installed else None

    namespace = {"importlib": type("M", (), {"util": Util}), "os": __import__("os"), "sys": sys,
                 "subprocess": type("S", (), {"run": staticmethod(lambda *a, **k: calls.append((a, k)))})}
    exec(compile(block, "set-up cell", "exec"), namespace)
    assert capsys.readouterr().out == sr.RELOAD + "\n"
    ((args, kwargs),) = calls
    assert args[0][-1] == "git+https://github.com/example-org/how-many-heads" and kwargs == {"check": True}
    # with ssmheads importable (Binder, the book's own environment) it does and prints nothing
    Util.find_spec = staticmethod(lambda name: object())
    exec(compile(block, "set-up cell", "exec"), namespace)
    assert capsys.readouterr().out == "" and len(calls) == 1


OLD_SETUP = (
    "# Set-up for running this notebook on its own (Colab, a downloaded copy):\n"
    "import importlib.util, os, subprocess, sys\n"
    'if importlib.util.find_spec("ssmheads") is None:\n'
    '    source = os.environ.get("SSMHEADS_SOURCE",\n'
    '                            "git+https://github.com/example-org/how-many-heads")\n'
    '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source],\n'
    "                   check=True)\n"
    'if importlib.util.find_spec("jax") is None:\n'
    '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",\n'
    "                    *jax_req], check=True)"
)


def test_setup_cells_are_rewritten_in_cell_0_only(book_copy):
    import nbformat

    path = sorted((book_copy / "chapters").glob("*.ipynb"))[0]
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = OLD_SETUP
    nbformat.write(nb, path)
    before = nbformat.read(path, as_version=4)
    assert any("80 characters" in p for p in sr.setup_cell_problems(path))
    assert sr.main(["--check", "--root", str(book_copy)]) == 1
    changed = sr.rewrite_setup_cells(book_copy)
    assert str(path.relative_to(book_copy)) in changed
    after = nbformat.read(path, as_version=4)
    assert after.cells[1:] == before.cells[1:] and after.cells[0].metadata == before.cells[0].metadata
    source = after.cells[0].source
    assert source.startswith("# Set-up for running this notebook on its own (Colab, a downloaded copy):\n"
                             "import importlib.util, os, subprocess, sys\n")
    assert sr.setup_block("https://github.com/example-org/how-many-heads") in source + "\n"
    assert source.endswith('if importlib.util.find_spec("jax") is None:\n'
                           '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",\n'
                           "                    *jax_req], check=True)")    # a chapter's own lines stay
    assert sr.setup_cell_problems(path) == []
    assert sr.rewrite_setup_cells(book_copy) == []            # twice changes nothing
    # and set_repository still finds and changes the one URL
    sr.set_repository(NEW, book_copy, portable=False)
    assert sr.setup_cell_url(path) == NEW and sr.setup_cell_problems(path) == []


def test_the_first_contact_files_follow_the_repository(book_copy):
    """README.md, CITATION.cff and book/intro.md: links to the repository, the site, Binder and Colab."""
    (book_copy / "book").mkdir()
    names = sr.TEXT_FILES
    for name in names:
        shutil.copy(ROOT / name, book_copy / name)
    assert sr.text_file_problems(book_copy) == []
    old = sr.config_places(book_copy)["_config.yml repository.url"]
    old_forms = sr.address_forms(old, sr.site_address(book_copy))
    before = {name: (book_copy / name).read_text() for name in names}
    report = sr.set_repository(NEW, book_copy, portable=False)
    new_forms = sr.address_forms(NEW, "https://new-org.github.io/heads-book/")
    assert new_forms == sr.address_forms(NEW, sr.site_address(book_copy))
    for name in names:
        after = (book_copy / name).read_text()
        assert f"{name}: links and citation" in report
        for kind, form in old_forms.items():
            assert form not in after, (name, kind)
        assert NEW in after and "https://new-org.github.io/heads-book/" in after
        # nothing else changed: each changed line differs only in its addresses
        for a, b in _differing_lines(before[name], after):
            assert sr.new_text(a, old_forms, new_forms) == b
    assert sr.text_file_problems(book_copy) == [] and sr.main(["--check", "--root", str(book_copy)]) == 0
    # a link left to another repository is reported
    readme = book_copy / "README.md"
    readme.write_text(readme.read_text() + "\nhttps://mybinder.org/v2/gh/someone/else/main\n")
    assert any("binder address /gh/someone/else/" in p for p in sr.text_file_problems(book_copy))
