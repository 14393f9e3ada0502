#!/usr/bin/env python3
"""Make the student versions of the chapters, and a copy of the site without solutions.

Usage: python tools/make_assignments.py [--out DIR] [--no-site]   (default DIR: _build/assignments)

1. Student notebooks, DIR/<chapter>.ipynb, one per notebook in chapters/:

   * every gated solution is removed, from the ``{solution-start}`` cell through
     the ``{solution-end}`` cell inclusive;
   * every ``{solution}`` directive block is removed from the markdown cells;
   * the stub of each exercise (the indented Python block inside the
     ``{exercise}`` directive, ending in a ``check_...(...)`` call) is moved out of
     the markdown into a new code cell right after the exercise cell, where the
     student fills it in; the markdown keeps the prompt;
   * every exercise without a stub gets an empty code cell after it instead,
     ``# Exercise 1.5: your work (not auto-checked)``, so each exercise has its cell;
   * all outputs and execution counts are cleared, except the listings of the library's
     source (cells tagged ``source-listing``, which show the code of a construction next
     to its proof); everything else (the chapter
     text, the verification cells, the set-up cell that installs ``ssmheads`` in
     Colab or Binder) is kept;
   * the markdown is rendered portable by tools/portable.py (MyST directives and
     roles to plain Markdown and LaTeX, numbered as on the site), so the notebook
     reads as a textbook in any Jupyter front end (``--myst`` keeps the MyST). Its
     references link to the site at ``--site-url``: give the address where the
     students' site (part 2) will be published. Without it they link to the full
     site, where every solution is a click away (the script says so).

2. The site without solutions, built from the stored outputs (no notebook is
   executed). ``hide_solutions`` of sphinx-exercise cannot do this on its own: it
   only drops the ``{solution-start}`` directive, so the gated cells after it
   would still be shown, and the build of sphinx-exercise 1.2 crashes on the
   orphaned ``{solution-end}`` ("departing unknown node type: solution_end_node";
   executablebooks/sphinx-exercise#89). So the book is staged in a temporary
   folder with the solutions stripped from the chapters (outputs kept) and without the
   guide for instructors (its table is computed by a cell, and nothing is executed
   here), and built with a configuration derived from _config.yml
   (DIR/student_config.yml: ``hide_solutions: true``, ``execute_notebooks: "off"``,
   ``portable_notebooks: student`` (the download button gives the portable student
   notebook, see book/_ext/portable_downloads.py, linking to ``--site-url`` as the
   notebooks do: ``portable_site_url``), and no launch buttons, which would
   open the repository's notebooks with their solutions) into DIR/site; jupyter-book
   puts the pages in DIR/site/_build/html.

   The site is sealed from the repository, which holds the solutions and the hidden
   tests: no repository, issues, edit or launch button, no repository address for the
   theme, no line of a page that names the repository. With ``--site-url`` the set-up
   cell of every student notebook (written here, offered by the site, or by ``make otter``)
   installs the library from ``<site>/ssmheads-<version>.tar.gz``, a source archive of
   lib/ssmheads alone that is written next to the notebooks and into the site's root,
   instead of from the repository; without it, it still installs from the repository
   (the script says so). The student PDFs of ``make pdf-student`` (and ``make
   pdf-chapters STUDENT=1``), when built, are offered from the introduction.

   When ``make otter`` has written Otter assignments (``--otter``, default _build/otter:
   tools/make_otter.py), the download button gives those student notebooks instead, the
   ones the instructor hands out and grades (``portable_notebooks: otter``). They must be
   current: made from the chapters as they are now and linking to the same ``--site-url``;
   otherwise this stops and says to run ``make otter`` again (or ``--no-otter``).

The notebook part is importable (``make_student_notebooks``; ``student_notebook``, from
tools/bookkit/student.py, gives the MyST student version) and needs nbformat, PyYAML and
pybtex (for tools/portable.py); the site part (``build_student_site``) also needs jupyter-book.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

import portable
from bookkit.core import directive_blocks, exercise_numbers, file_hash  # noqa: F401  (this module's interface)
from bookkit.student import (  # noqa: F401  (this module's interface: the MyST student version)
    LayoutError, Stats, remove_solution_directives, split_exercise_stubs, strip_solutions,
    student_notebook)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "_build" / "assignments"
# The set-up cell's install source (tools/set_repository.py writes it): git+<repository URL>.
_SETUP_SOURCE = re.compile(r'"git\+https?://[^"\s]+"')
# The student PDFs of `make pdf-student` / `make pdf-chapters STUDENT=1`, which the students' site offers.
STUDENT_PDFS = ("how-many-heads-student.pdf", "chapters/*-student.pdf")
# The guide for instructors is not part of the students' site.
INSTRUCTOR_PAGES = {"book/instructors"}
# Never copied into the staged site source.
_NOT_STAGED = {".git", ".venv", ".venv-otter", "_build", ".pytest_cache", "__pycache__", ".ipynb_checkpoints",
               ".mypy_cache", ".ruff_cache"}


# --------------------------------------------------------------------------- notebooks

def make_student_notebooks(chapters: Path = ROOT / "chapters", out: Path = DEFAULT_OUT,
                           verbose: bool = True, myst: bool = False,
                           site_url: str | None = None) -> dict[Path, Stats]:
    """Write ``out/<chapter>.ipynb`` for every notebook in ``chapters``; return their stats.

    The notebooks are portable (tools/portable.py) unless ``myst`` is true, with links
    to the site at ``site_url`` (default: the book's own site). The book they belong to
    (for numbers and references) is the folder above ``chapters`` if it has a _toc.yml,
    else this repository.
    """
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    chapters = Path(chapters)
    root = chapters.resolve().parent
    book = portable.Book(root if (root / "_toc.yml").exists() else ROOT, base_url=site_url)
    numbers = exercise_numbers(book)
    for path in sorted(chapters.glob("*.ipynb")):
        nb, stats = student_notebook(nbformat.read(path, as_version=4), where=path.name, numbers=numbers)
        if site_url:
            seal_setup_cell(nb, site_url, root if (root / "_toc.yml").exists() else ROOT, where=path.name)
        if not myst:
            nb = portable.render_notebook(nb, book.docname_of(path), book, kind="student")[0]
        nbformat.validate(nb)
        target = out / path.name
        nbformat.write(nb, target)
        results[target] = stats
        if verbose:
            print(stats.line(str(_shown(target))))
    if not results:
        raise FileNotFoundError(f"no notebooks in {chapters}")
    if site_url:    # what their set-up cells install, to publish at the root of the students' site
        write_library_archive(out, root if (root / "_toc.yml").exists() else ROOT)
    return results


# --------------------------------------------------------------------------- sealing

def repository_url(root: Path = ROOT) -> str:
    """``repository.url`` of the book's _config.yml (where the solutions and hidden tests live), or ''."""
    import yaml

    config = yaml.safe_load((Path(root) / "_config.yml").read_text()) or {}
    return str((config.get("repository") or {}).get("url") or "").rstrip("/")


def repository_marks(root: Path = ROOT) -> list[str]:
    """What a link or a URL into the repository contains: ``ORG/REPO`` of github.com/ORG/REPO.

    That string is in every address that leads there: the repository itself, its files,
    ``git+https://...``, Binder's ``gh/ORG/REPO`` and Colab's ``github/ORG/REPO``. The
    full site's GitHub Pages address (``ORG.github.io/REPO``) does not contain it.
    """
    url = repository_url(root)
    path = re.sub(r"^[a-z+]+://[^/]+/", "", url).removesuffix(".git").strip("/")
    return [path] if path.count("/") >= 1 else ([url] if url else [])


def library_archive_name(root: Path = ROOT) -> str:
    """The file name of the library's source archive that the students' site offers: ``ssmheads-1.0.0.tar.gz``."""
    init = (Path(root) / "lib" / "ssmheads" / "__init__.py").read_text()
    version = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", init, re.M).group(1)
    return f"ssmheads-{version}.tar.gz"


def library_archive_url(site_url: str, root: Path = ROOT) -> str:
    """Where the students' site at ``site_url`` offers the library's source archive."""
    return site_url.rstrip("/") + "/" + library_archive_name(root)


LIBRARY_README = """\
# ssmheads

The library of the executable textbook *How Many Heads Make an SSM?*: attention and
state-space models as interaction operators. This archive is the copy offered by the
course's site; the student notebooks' first cell installs it with pip.
"""


def write_library_archive(folder: Path, root: Path = ROOT) -> Path:
    """Write ``folder/ssmheads-<version>.tar.gz``: the library as a source archive that pip installs.

    It holds ``pyproject.toml``, a short README and ``lib/ssmheads`` (no caches), nothing
    else of the repository: no chapter, solution or hidden test, and no repository
    address. The files' times are fixed, so the same library gives the same archive.
    """
    import io
    import tarfile

    root, folder = Path(root), Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / library_archive_name(root)
    top = target.name.removesuffix(".tar.gz")
    files = [(root / "pyproject.toml", "pyproject.toml")]
    files += [(p, p.relative_to(root).as_posix()) for p in sorted((root / "lib" / "ssmheads").rglob("*"))
              if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")]
    when = 1767225600   # 2026-01-01: fixed (a wheel cannot hold times before 1980)

    def add(archive, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(f"{top}/{name}")
        info.size, info.mtime, info.mode = len(data), when, 0o644
        archive.addfile(info, io.BytesIO(data))

    import gzip

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        add(archive, "README.md", LIBRARY_README.encode())
        for path, name in files:
            add(archive, name, path.read_bytes())
    with open(target, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=when, filename="") as z:
        z.write(raw.getvalue())
    return target


def seal_setup_cell(nb, site_url: str, root: Path = ROOT, where: str = "notebook"):
    """``nb`` (changed in place) with its set-up cell installing ``ssmheads`` from the students' site.

    The chapters' set-up cell (cell 0) installs the library from the repository
    (``git+https://github.com/ORG/REPO``), which holds the solutions and the hidden tests;
    the students' notebooks install it from the archive the students' site offers
    (:func:`write_library_archive`) instead. ``SSMHEADS_SOURCE`` still overrides it.
    """
    cell = nb.cells[0] if nb.cells else None
    if cell is None or cell.cell_type != "code" or len(_SETUP_SOURCE.findall(cell.source)) != 1:
        raise LayoutError(f"{where}: the first cell is not the set-up cell with one git+https:// install source")
    cell.source = _SETUP_SOURCE.sub(f'"{library_archive_url(site_url, root)}"', cell.source)
    return nb


# --------------------------------------------------------------------------- the site

def _shown(path: Path) -> Path:
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _remove_from_toc(entries, drop: set[str]):
    """The toc list ``entries`` (recursively) without the files in ``drop``."""
    kept = []
    for entry in entries:
        if isinstance(entry, dict):
            if str(entry.get("file", "")).removesuffix(".md").removesuffix(".ipynb") in drop:
                continue
            entry = {k: (_remove_from_toc(v, drop) if k in ("parts", "chapters", "sections") else v)
                     for k, v in entry.items()}
        kept.append(entry)
    return kept


def stage_site_source(root: Path, stage: Path, avoid: tuple[Path, ...] = (), site_url: str | None = None) -> None:
    """Copy the book to ``stage`` with solutions stripped from the chapters and no instructors' pages.

    Build outputs, environments and caches are not copied, nor ``stage`` itself
    and the folders in ``avoid`` (the output folder, when it lies inside the book).
    Sealed from the repository: a line of a page that names the repository's address
    (the introduction's BibTeX note) is left out, and with ``site_url`` the chapters'
    set-up cells install the library from the students' site (:func:`seal_setup_cell`), so
    the notebooks the site offers for download do too. The student PDFs that ``make
    pdf-student`` (and ``make pdf-chapters STUDENT=1``) built are copied into the stage's
    _build/pdf/, where book/_ext/pdf_book.py finds them and links them from the introduction.
    """
    import yaml

    if stage.exists():
        shutil.rmtree(stage)
    avoid = {p.resolve() for p in (stage, *avoid)}

    def ignore(folder, names):
        return {n for n in names if n in _NOT_STAGED or n.endswith(".egg-info")
                or (Path(folder) / n).resolve() in avoid}

    shutil.copytree(root, stage, ignore=ignore, symlinks=True)
    for path in sorted((root / "chapters").glob("*.ipynb")):
        nb, _ = strip_solutions(nbformat.read(path, as_version=4), where=path.name)
        if site_url:
            seal_setup_cell(nb, site_url, root, where=path.name)
        nbformat.write(nb, stage / "chapters" / path.name)
    marks = repository_marks(root)
    for page in sorted((stage / "book").rglob("*.md")):
        lines = page.read_text(encoding="utf-8").split("\n")
        kept = [ln for ln in lines if not any(m in ln for m in marks)]
        if len(kept) != len(lines):
            page.write_text("\n".join(kept), encoding="utf-8")
    for pattern in STUDENT_PDFS:
        for pdf in sorted((root / "_build" / "pdf").glob(pattern)):
            target = stage / "_build" / "pdf" / pdf.relative_to(root / "_build" / "pdf")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(pdf, target)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    for key in ("parts", "chapters", "sections"):
        if key in toc:
            toc[key] = _remove_from_toc(toc[key], INSTRUCTOR_PAGES)
    (stage / "_toc.yml").write_text("# Generated by tools/make_assignments.py from _toc.yml\n"
                                    + yaml.safe_dump(toc, sort_keys=False))


class StaleOtter(ValueError):
    """``make otter``'s notebooks are missing for a chapter, or were made from other sources."""


DEFAULT_OTTER = ROOT / "_build" / "otter"


def otter_notebooks(chapters: Path, otter_dir: Path, site_url: str | None = None) -> Path | None:
    """``otter_dir`` if ``make otter`` wrote a current student notebook there for every chapter.

    ``None`` when it wrote none (no ``<chapter>/source.json``); :class:`StaleOtter` when some
    are missing or were made from another version of a chapter, of tools/make_otter.py, or
    for another site address.
    """
    import json

    otter_dir = Path(otter_dir)
    paths = sorted(Path(chapters).glob("*.ipynb"))
    if not any((otter_dir / p.stem / "source.json").exists() for p in paths):
        return None
    # what make_otter.source_record hashes as the generator (not imported: make_otter imports this module)
    generator = file_hash(Path(__file__).resolve().parent / "make_otter.py")
    problems = []
    for p in paths:
        record, notebook = otter_dir / p.stem / "source.json", otter_dir / p.stem / "student" / f"{p.stem}.ipynb"
        if not record.exists() or not notebook.exists():
            problems.append(f"{p.stem}: no Otter student notebook")
            continue
        made = json.loads(record.read_text())
        if made.get("chapter_sha256") != file_hash(p):
            problems.append(f"{p.stem}: the chapter changed after `make otter`")
        elif made.get("generator_sha256") != generator:
            problems.append(f"{p.stem}: tools/make_otter.py changed after `make otter`")
        elif made.get("site_url") != (site_url or None):
            problems.append(f"{p.stem}: made for the site {made.get('site_url') or '(the full site)'}, "
                            f"not {site_url or '(the full site)'}")
    if problems:
        raise StaleOtter(f"the Otter notebooks in {otter_dir} are not current ({'; '.join(problems)}): run "
                         "`make otter` again with the same SITE_URL, or give --no-otter to offer the "
                         "notebooks of `make assignments` instead")
    return otter_dir


def student_config(root: Path, target: Path, site_url: str | None = None, otter: Path | None = None) -> Path:
    """Write the students' site configuration (from _config.yml) to ``target``.

    ``site_url``: where the students' site is published (its downloads link there).
    ``otter``: the folder of ``make otter``'s notebooks, which the download button then gives.
    """
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text()) or {}
    config.setdefault("sphinx", {}).setdefault("config", {})["hide_solutions"] = True
    # The download button gives the portable student notebook (book/_ext/portable_downloads.py).
    config["sphinx"]["config"]["portable_notebooks"] = "student"
    if otter:
        config["sphinx"]["config"]["portable_notebooks"] = "otter"
        config["sphinx"]["config"]["otter_notebooks"] = str(Path(otter).resolve())
    if site_url:
        config["sphinx"]["config"]["portable_site_url"] = site_url
    # jupyter-book finds local extensions relative to the configuration file, which is
    # written elsewhere: give their folders as absolute paths (the book's own).
    local = config["sphinx"].get("local_extensions") or {}
    for name, folder in local.items():
        local[name] = str((root / folder).resolve())
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    # The launch buttons would open the repository's notebooks, solutions included.
    launch = config.setdefault("launch_buttons", {})
    for key in ("binderhub_url", "colab_url", "jupyterhub_url", "deepnote_url"):
        launch[key] = ""
    launch["thebe"] = False
    # Sealed: the repository holds the solutions and the hidden tests. No repository, issues or
    # edit button, and no address for the theme to link (jupyter-book's default would be its own).
    config["repository"] = {**(config.get("repository") or {}), "url": ""}
    html = config.setdefault("html", {})
    for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
        html[key] = False
    theme = config["sphinx"]["config"].setdefault("html_theme_options", {})
    theme.pop("icon_links", None)
    target.write_text("# Generated by tools/make_assignments.py from _config.yml: solutions hidden, "
                      "stored outputs used\n" + yaml.safe_dump(config, sort_keys=False))
    return target


def _jupyter_book() -> str:
    here = Path(sys.executable).parent / "jupyter-book"
    return str(here) if here.exists() else (shutil.which("jupyter-book") or "jupyter-book")


def build_student_site(out: Path = DEFAULT_OUT, root: Path = ROOT, site_url: str | None = None,
                       otter: Path | None = None) -> Path:
    """Build the solutions-hidden site into ``out/site`` and return the path of its index.html.

    ``otter``: a folder of current ``make otter`` notebooks (see :func:`otter_notebooks`),
    which the download button then gives instead of the ``make assignments`` notebooks.
    """
    config = student_config(root, out / "student_config.yml", site_url, otter)
    site = out / "site"
    if site.exists():
        shutil.rmtree(site)  # no stale pages from an earlier build
    with tempfile.TemporaryDirectory(prefix="student-site-") as tmp:
        stage = Path(tmp) / "book"
        stage_site_source(root, stage, avoid=(out,), site_url=site_url)
        command = [_jupyter_book(), "build", str(stage), "--config", str(config),
                   "--path-output", str(site), "--keep-going", "--quiet"]
        done = subprocess.run(command, capture_output=True, text=True)
    log = out / "site-build.log"
    log.write_text(done.stdout + done.stderr)
    index = site / "_build" / "html" / "index.html"
    warnings = [ln for ln in (done.stdout + done.stderr).splitlines() if "WARNING" in ln or "ERROR" in ln]
    for line in warnings[:20]:
        print("  " + line)
    if done.returncode != 0 or not index.exists():
        print((done.stdout + done.stderr)[-4000:], file=sys.stderr)
        raise RuntimeError(f"the student site did not build (exit {done.returncode}); log: {log}")
    if site_url:    # what the notebooks' set-up cells install (seal_setup_cell)
        write_library_archive(index.parent, root)
    return index


# --------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="output folder (default: _build/assignments)")
    parser.add_argument("--no-site", action="store_true", help="write the student notebooks only")
    parser.add_argument("--myst", action="store_true",
                        help="write the student notebooks in MyST (for JupyterLab with jupyterlab-myst) "
                             "instead of portable Markdown")
    parser.add_argument("--site-url", metavar="URL",
                        help="the address where the students' site will be published: the notebooks' "
                             "links (and the students' site's downloads) point there (default: the "
                             "full site, with its solutions)")
    parser.add_argument("--otter", type=Path, default=DEFAULT_OTTER, metavar="DIR",
                        help="the folder of `make otter`'s assignments (default: _build/otter): when it "
                             "holds them, the students' site offers those notebooks for download")
    parser.add_argument("--no-otter", action="store_true",
                        help="offer the notebooks of `make assignments` even when `make otter` has run")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if args.site_url and not re.match(r"^https?://[^\s/]+", args.site_url):
        parser.error(f"--site-url must be an http(s) address, not {args.site_url!r}")
    if not args.site_url and not args.myst:
        full = portable.Book(ROOT).base_url
        print(f"note: the student notebooks link to the full site, {full}, where every solution is a "
              "click away, and their set-up cell installs the library from the repository "
              f"({repository_url(ROOT) or 'repository.url'}), with the solutions and hidden tests; give "
              "--site-url with the address of the students' site to link and install from there")

    start = time.perf_counter()
    results = make_student_notebooks(ROOT / "chapters", out, myst=args.myst, site_url=args.site_url)
    notebooks = time.perf_counter() - start
    total = sum(s.exercises for s in results.values())
    print(f"{len(results)} student notebooks ({total} exercises) in {_shown(out)}/ "
          f"[{notebooks:.1f} s]")
    if args.no_site:
        return 0
    try:
        otter = None if args.no_otter else otter_notebooks(ROOT / "chapters", args.otter, args.site_url)
    except StaleOtter as stale:
        parser.error(str(stale))
    print("the students' site offers " + (f"the Otter student notebooks of {_shown(otter)}/ for download"
                                           if otter else "the student notebooks above for download"))
    start = time.perf_counter()
    index = build_student_site(out, ROOT, args.site_url, otter)
    print(f"the site without solutions is at {index.resolve()} [{time.perf_counter() - start:.1f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
