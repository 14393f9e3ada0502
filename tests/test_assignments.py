"""The student versions of the chapters made by tools/make_assignments.py.

The notebooks are made once per session into a temporary folder (the site is not
built here). The tests read the chapters independently of the script to find
what must be gone (the solutions) and what must be there (the stubs), then run
each student notebook top to bottom with its stubs untouched. The student
notebooks are portable (plain Markdown, tests/test_portable.py checks that), so an
exercise's cell is found by its ``exercise`` metadata, not by its MyST label.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
sys.path.insert(0, str(ROOT / "tools"))

import make_assignments  # noqa: E402  (tools/ is not a package)

FENCE = r"(?:`{3,}|:{3,})"
SOLUTION_BLOCK = re.compile(rf"^ {{0,3}}({FENCE})\{{solution\}}.*?(?:^ {{0,3}}\1\s*$|\Z)", re.M | re.S)
EXERCISE_BLOCK = re.compile(rf"^ {{0,3}}({FENCE})\{{exercise\}}(?P<title>.*?)$(?P<body>.*?)(?:^ {{0,3}}\1\s*$|\Z)",
                            re.M | re.S)
GATED_START = re.compile(rf"\A\s*({FENCE})\{{solution-start\}}.*?^ {{0,3}}\1\s*$", re.M | re.S)
CHECK_CALL = re.compile(r"^(check_\w+\(\w+\))\s*$", re.M)
MIN_LENGTH = 25  # a line or sentence longer than this is distinctive enough to grep for


def _words(text: str) -> str:
    return " ".join(text.split())


def _cells(path: Path):
    return nbformat.read(path, as_version=4).cells


def _starts(cell, name: str) -> bool:
    return cell.cell_type == "markdown" and re.match(rf"\s*{FENCE}\{{{name}\}}", cell.source) is not None


def solutions_and_rest(path: Path) -> tuple[list[str], str]:
    """The text of each solution of a chapter, and the chapter's text outside its solutions."""
    solutions, rest, gated = [], [], None
    for cell in _cells(path):
        if gated is not None:
            if cell.cell_type == "markdown" and "{solution-end}" in cell.source:
                solutions.append("\n".join(gated))
                gated = None
            else:
                gated.append(cell.source)
        elif _starts(cell, "solution-start"):
            gated = [GATED_START.sub("", cell.source, count=1)]  # the text after the directive
        else:
            solutions += [m.group(0) for m in SOLUTION_BLOCK.finditer(cell.source)]
            rest.append(SOLUTION_BLOCK.sub("", cell.source))
            if "source-listing" in cell.get("metadata", {}).get("tags", []):
                # a listing of the library's source is text the chapter shows, students included
                rest += [str(v) for o in cell.get("outputs", []) for v in o.get("data", {}).values()]
    assert gated is None, f"{path.name}: unclosed gated solution"
    return solutions, _words("\n".join(rest))


def distinctive(solution: str, rest: str) -> list[str]:
    """Long code lines and sentences of a solution that appear nowhere else in the chapter."""
    candidates = [line.strip() for line in solution.split("\n")]
    candidates += re.split(r"(?<=[.?!:])\s+", _words(solution))
    found = {c for c in candidates if len(c) > MIN_LENGTH and not c.startswith((":class:", "```"))}
    return sorted(c for c in map(_words, found) if c not in rest)


def checked_stubs(path: Path) -> list[tuple[str, str, str]]:
    """``(label, stub, check call)`` for every checked exercise, read from the chapter.

    An exercise is checked when its body has an indented stub (marked "(checked)" in
    the title, or "Auto-checked" at the start of the body, depending on the chapter's
    convention; the stub's check call is what counts here).
    """
    found = []
    for cell in _cells(path):
        if cell.cell_type != "markdown":
            continue
        for m in EXERCISE_BLOCK.finditer(cell.source):
            body = m.group("body")
            if "(checked)" not in m.group("title") and "Auto-checked" not in body:
                continue
            label = re.search(r"^:label:\s*(\S+)", body, re.M).group(1)
            indented = [ln for ln in body.split("\n") if ln.startswith("    ") or not ln.strip()]
            stub = textwrap.dedent("\n".join(indented)).strip("\n")
            stub = re.sub(r"\n{3,}", "\n\n", stub)
            call = CHECK_CALL.search(stub)
            assert call, f"{path.name}: checked exercise {label} has no check call in its stub"
            found.append((label, stub, call.group(1)))
    return found


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("assignments")
    make_assignments.make_student_notebooks(ROOT / "chapters", out, verbose=False)
    return out


def student(student_dir: Path, chapter: Path):
    return nbformat.read(student_dir / chapter.name, as_version=4)


def full_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts += [str(v) for v in out.get("data", {}).values()]
    return _words("\n".join(parts))


by_name = pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)


def test_one_student_notebook_per_chapter(student_dir):
    assert CHAPTERS
    assert sorted(p.name for p in student_dir.glob("*.ipynb")) == [p.name for p in CHAPTERS]


@by_name
def test_no_solution_text_is_left(student_dir, chapter):
    solutions, rest = solutions_and_rest(chapter)
    assert len(solutions) >= 6, f"{chapter.name}: found only {len(solutions)} solutions"
    text = full_text(student(student_dir, chapter))
    for solution in solutions:
        lines = distinctive(solution, rest)
        assert lines, f"{chapter.name}: no distinctive line to look for in solution\n{solution}"
        leaked = [line for line in lines if line in text]
        assert not leaked, f"{chapter.name}: solution text in the student version: {leaked}"
    assert "{solution" not in text


@by_name
def test_each_checked_exercise_has_a_code_cell_with_its_stub(student_dir, chapter):
    stubs = checked_stubs(chapter)
    assert len(stubs) >= 2
    cells = student(student_dir, chapter).cells
    for label, stub, call in stubs:
        where = next(i for i, c in enumerate(cells)
                     if c.cell_type == "markdown" and c.metadata.get("exercise", {}).get("label") == label)
        after = cells[where + 1]
        assert after.cell_type == "code", f"{label}: no code cell after the exercise"
        assert after.source.strip() == stub and call in after.source, f"{label}: stub cell is\n{after.source}"
        assert call not in cells[where].source, f"{label}: the stub is still in the markdown"
        assert re.search(r"^#+ Exercise \d+\.\d+ \(", cells[where].source, re.M), f"{label}: the prompt lost its title"


def exercise_labels(path: Path) -> list[str]:
    """The labels of a chapter's exercises, read from its MyST source."""
    return [re.search(r"^:label:\s*(\S+)", m.group("body"), re.M).group(1)
            for cell in _cells(path) if cell.cell_type == "markdown"
            for m in EXERCISE_BLOCK.finditer(cell.source)]


@by_name
def test_every_exercise_is_followed_by_a_code_cell_for_the_work(student_dir, chapter):
    """What the notebook's first cell and book/running.md promise: a code cell per exercise."""
    cells = student(student_dir, chapter).cells
    stubbed = {label for label, _, _ in checked_stubs(chapter)}
    labels = exercise_labels(chapter)
    assert len(labels) >= 6 and stubbed < set(labels)
    for label in labels:
        where = next(i for i, c in enumerate(cells)
                     if c.cell_type == "markdown" and c.metadata.get("exercise", {}).get("label") == label)
        number = re.search(r"^#+ Exercise (\d+\.\d+) \(", cells[where].source, re.M).group(1)
        after = cells[where + 1]
        assert after.cell_type == "code", f"{label}: no code cell after the exercise"
        if label in stubbed:
            assert after.metadata["exercise_stub"] == label
        else:
            assert after.metadata["exercise_work"] == label and after.id == f"work-{label}"
            assert after.source == f"# Exercise {number}: your work (not auto-checked)\n"
    assert "each exercise is followed by a code cell" in cells[1].source


def test_work_cells_are_named_by_title_without_numbers():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("```{exercise} Think\n:label: ex-think\n\nWhy?\n```\n\n"
                                      "```{exercise} Code (checked)\n:label: ex-code\n\nDo.\n\n"
                                      "    f = ...\n    check_f(f)\n```"),
        nbformat.v4.new_markdown_cell("Text."),
    ])
    student, stats = make_assignments.student_notebook(nb)
    assert [c.cell_type for c in student.cells] == ["markdown", "code", "code", "markdown"]
    assert student.cells[1].source == "# Exercise “Think”: your work (not auto-checked)\n"
    assert student.cells[2].source == "f = ...\ncheck_f(f)" and (stats.stubs, stats.work_cells) == (1, 1)
    numbered, _ = make_assignments.student_notebook(nb, numbers={"ex-think": "2.4"})
    assert numbered.cells[1].source == "# Exercise 2.4: your work (not auto-checked)\n"


def test_site_url_points_the_notebooks_links_and_downloads_at_the_students_site(tmp_path, capsys):
    import yaml

    sys.path.insert(0, str(ROOT / "tools"))
    import portable

    full = portable.Book(ROOT).base_url
    students = "https://course.example.edu/heads/"
    out = tmp_path / "nb"
    make_assignments.make_student_notebooks(ROOT / "chapters", out, verbose=False, site_url=students)
    text = "\n".join(c.source for p in sorted(out.glob("*.ipynb")) for c in student(out, p).cells
                     if c.cell_type == "markdown")
    links = re.findall(r"\]\((https?://[^)\s]+)\)", text)
    assert sum(url.startswith(students) for url in links) > 20 and full not in text
    config = yaml.safe_load(make_assignments.student_config(ROOT, tmp_path / "c.yml", students).read_text())
    assert config["sphinx"]["config"]["portable_site_url"] == students
    assert "portable_site_url" not in yaml.safe_load(
        make_assignments.student_config(ROOT, tmp_path / "d.yml").read_text())["sphinx"]["config"]
    # Without --site-url the script says the links go to the full site.
    assert make_assignments.main(["--no-site", "--out", str(tmp_path / "a")]) == 0
    printed = capsys.readouterr().out
    assert f"the student notebooks link to the full site, {full}" in printed and "--site-url" in printed
    assert make_assignments.main(["--no-site", "--out", str(tmp_path / "b"), "--site-url", students]) == 0
    assert "full site" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        make_assignments.main(["--no-site", "--out", str(tmp_path / "c"), "--site-url", "students-site"])


@by_name
def test_student_notebook_keeps_the_rest(student_dir, chapter):
    original, nb = _cells(chapter), student(student_dir, chapter).cells
    assert nb[0].source == original[0].source and "remove-cell" in nb[0].metadata["tags"]
    labels = lambda cells: [c.metadata["exercise"]["label"] for c in cells if "exercise" in c.metadata]  # noqa: E731
    assert labels(nb) == labels(original)
    kept = [c.source for c in original if c.cell_type == "code"]
    solution_code = "\n".join(solutions_and_rest(chapter)[0])
    kept = [s for s in kept if s not in solution_code]
    student_code = [c.source for c in nb if c.cell_type == "code"]
    assert [s for s in student_code if s in kept] == kept, "a verification cell was dropped or reordered"


@by_name
def test_student_notebook_has_no_outputs(student_dir, chapter):
    """No outputs but the listings of the library's source (the code shown next to a proof)."""
    nb = student(student_dir, chapter)
    nbformat.validate(nb)
    listings = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is None, cell.source[:80]
        if "source-listing" in cell.metadata.get("tags", []):
            assert [list(o.get("data", {})) for o in cell.outputs] == [["text/markdown", "text/plain"]] \
                or [sorted(o.get("data", {})) for o in cell.outputs] == [["text/markdown", "text/plain"]], \
                cell.source[:80]
            assert cell.outputs[0].get("execution_count") is None
            listings += 1
        else:
            assert cell.outputs == [], cell.source[:80]
    assert listings >= 2
    assert "widgets" not in nb.metadata


# Chapter 1's run is in make test; the other chapters' are extended (about 100 s of kernels).
@pytest.mark.parametrize("chapter", [pytest.param(p, marks=() if i == 0 else pytest.mark.extended) for i, p in enumerate(CHAPTERS)],
                         ids=lambda p: p.stem)
def test_student_notebook_runs_and_checks_say_not_attempted(student_dir, chapter, tmp_path):
    nb = student(student_dir, chapter)
    calls = [call for _, _, call in checked_stubs(chapter)]
    NotebookClient(nb, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on any error
    for call in calls:
        cell = next(c for c in nb.cells if c.cell_type == "code" and call in c.source)
        printed = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert "NOT ATTEMPTED YET" in printed, f"{call} printed {printed!r}"


# --------------------------------------------------------------------------- the script's parsing


def test_solution_blocks_are_removed_with_nested_fences_and_unclosed_ones():
    source = textwrap.dedent("""\
        Intro.

        ````{solution} ex-a
        :class: dropdown

        ```python
        secret = 1
        ```
        ````

        Between.

        ```{solution} ex-b
        runs to the end of the cell""")
    text, removed = make_assignments.remove_solution_directives(source)
    assert removed == 2 and text == "Intro.\n\nBetween."


def test_stub_is_split_from_the_prompt():
    source = textwrap.dedent("""\
        ```{exercise} Do it (checked)
        :label: ex-x

        Write `f`.

            def f():
                ...

            check_f(f)
        ```""")
    text, stubs = make_assignments.split_exercise_stubs(source)
    assert text == "```{exercise} Do it (checked)\n:label: ex-x\n\nWrite `f`.\n```"
    assert stubs == [("ex-x", "def f():\n    ...\n\ncheck_f(f)")]


def test_unbalanced_gated_solution_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("```{exercise} E\n:label: ex-e\n\nDo.\n```"),
        nbformat.v4.new_markdown_cell("```{solution-start} ex-e\n:class: dropdown\n```\nAnswer."),
        nbformat.v4.new_code_cell("answer = 42"),
    ])
    with pytest.raises(make_assignments.LayoutError, match="no {solution-end}"):
        make_assignments.student_notebook(nb)


def test_student_config_gives_student_downloads_and_finds_the_local_extensions(tmp_path):
    import yaml

    config = yaml.safe_load(make_assignments.student_config(ROOT, tmp_path / "student_config.yml").read_text())
    assert config["sphinx"]["config"]["portable_notebooks"] == "student"
    assert config["sphinx"]["config"]["hide_solutions"] is True
    local = config["sphinx"]["local_extensions"]
    assert "portable_downloads" in local
    for name, folder in local.items():
        assert Path(folder).is_absolute() and (Path(folder) / f"{name}.py").exists(), (name, folder)


# --------------------------------------------------------------------------- the students' site, sealed

STUDENTS = "https://course.example.edu/heads/"


def _repository_leaks(text: str) -> list[str]:
    marks = make_assignments.repository_marks(ROOT)
    assert marks and all("/" in m for m in marks), marks
    return [m for m in marks if m in text]


def test_the_students_site_config_has_no_repository_button_or_address(tmp_path):
    """The students' site links nowhere into the repository (solutions, hidden tests): issue 26."""
    import yaml

    path = make_assignments.student_config(ROOT, tmp_path / "student_config.yml", STUDENTS)
    config = yaml.safe_load(path.read_text())
    assert not _repository_leaks(path.read_text()), path.read_text()
    assert (config["repository"].get("url") or "") == ""   # jupyter-book's default would be its own repository
    for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
        assert config["html"][key] is False, key
    launch = config["launch_buttons"]
    assert not any(launch.get(k) for k in ("binderhub_url", "colab_url", "jupyterhub_url", "deepnote_url", "thebe"))
    assert "icon_links" not in config["sphinx"]["config"].get("html_theme_options", {})


def test_the_students_notebooks_install_the_library_from_the_students_site(tmp_path):
    import tarfile

    out = tmp_path / "nb"
    make_assignments.make_student_notebooks(ROOT / "chapters", out, verbose=False, site_url=STUDENTS)
    archive = out / make_assignments.library_archive_name(ROOT)
    for path in CHAPTERS:
        text = (out / path.name).read_text()
        assert not _repository_leaks(text), path.name
        setup = student(out, path).cells[0].source
        assert f'"{STUDENTS}{archive.name}"' in setup and "SSMHEADS_SOURCE" in setup, setup
    # The archive is the library alone, and pip can build it (pyproject.toml and the package at the top).
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        top = archive.name.removesuffix(".tar.gz")
        assert f"{top}/pyproject.toml" in names and f"{top}/lib/ssmheads/__init__.py" in names
        assert not [n for n in names if not n.startswith((f"{top}/lib/ssmheads/", f"{top}/pyproject.toml",
                                                          f"{top}/README.md"))]
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        for member in tar.getmembers():
            assert not _repository_leaks(tar.extractfile(member).read().decode("utf-8", "replace")), member.name
    again = make_assignments.write_library_archive(tmp_path / "again", ROOT)
    assert again.read_bytes() == archive.read_bytes()    # the same library, the same file
    # Without --site-url the set-up cell still installs from the repository (the script says so).
    make_assignments.make_student_notebooks(ROOT / "chapters", tmp_path / "plain", verbose=False)
    assert _repository_leaks(student(tmp_path / "plain", CHAPTERS[0]).cells[0].source)


def test_the_staged_site_names_no_repository_and_offers_the_student_pdf(tmp_path):
    """What the students' site is built from: no page or chapter names the repository; the student PDF only."""
    root = tmp_path / "book"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns(*make_assignments._NOT_STAGED, "*.egg-info"),
                    symlinks=True)
    pdf = root / "_build" / "pdf"
    (pdf / "chapters").mkdir(parents=True)
    for name in ("how-many-heads.pdf", "how-many-heads-student.pdf", "chapters/01_unified_operator.pdf",
                 "chapters/01_unified_operator-student.pdf"):
        (pdf / name).write_bytes(b"%PDF-1.5 " + name.encode())
    stage = tmp_path / "stage"
    make_assignments.stage_site_source(root, stage, site_url=STUDENTS)
    for path in [*stage.glob("book/**/*.md"), *stage.glob("chapters/*.ipynb"), stage / "_toc.yml"]:
        assert not _repository_leaks(path.read_text()), path
    assert "{Code and notebooks:" not in (stage / "book" / "intro.md").read_text()
    staged = sorted(p.relative_to(stage / "_build" / "pdf").as_posix() for p in (stage / "_build" / "pdf").rglob("*.pdf"))
    assert staged == ["chapters/01_unified_operator-student.pdf", "how-many-heads-student.pdf"]
