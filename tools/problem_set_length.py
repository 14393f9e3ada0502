"""How long each chapter's problem set takes: an estimate, from sizes measured in the book.

A problem set is one chapter's exercises (tools/exercise_catalogue.py reads them: label,
difficulty in stars, auto-checked or not). This module measures, in the chapter notebooks,

* the **prose** of the chapter: the words of its markdown outside the exercises and their
  solutions (the text a student reads before the problem set);
* for every exercise, the words of its **statement**, the words of its **written
  solution** (the solution's markdown) and the **lines of code** of its model solution
  (the solution's code cells without the book's own checks and printouts, see
  :func:`count_code`),

and turns them into times with the per-unit rates of :data:`RATES`, each a range from a
fast student (``low``) to a slow one (``high``). It is an estimate, not a measurement of
students: the sizes are measured, the rates are stated assumptions, anchored to published
reading and writing rates where there are any (see :data:`RATES` and the guide for
instructors). Timing a pilot class, or the times in the logs of a graded course, would
calibrate them (:func:`calibrate`).

How words are counted (:func:`count_words`): a word is a run of letters or digits in the
text as the site shows it: directive fences and options, targets, comments, HTML tags,
link addresses and fenced or indented code are not words; a role with an explicit text
(``{doc}`the text <path>```) counts its text, one without (``{prf:ref}`thm-x```, rendered
"Theorem 3.1") counts as two words, and a citation three a key ("Gu et al., 2022"). A
formula counts as the words it takes to read it aloud, approximated by its atoms
(:func:`count_math`): each letter, number, operator sign and symbol command (``\\alpha``,
``\\sum``, ``\\le``) is one word, and the words inside ``\\text{}``, ``\\mathrm{}`` and
``\\operatorname{}`` count as words; brackets, sub- and superscript marks, spacing and font
commands count nothing. ``$y_i=(1-\\gamma)x_i$``, read "y i equals one minus gamma x i",
counts 8.

Standard library only (like exercise_catalogue.py, whose reader it uses), so the guide's
cell can import it from any kernel.

Command line (``make lengths``)::

    python tools/problem_set_length.py [--chapters DIR] [--exercises]
"""
from __future__ import annotations

import argparse
import io
import json
import math
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bookkit.core import (  # noqa: E402
    CODE_FENCE, DIRECTIVE, OPTION, BookError, closes, directive_blocks, directive_label, gated_cells, has_tag)
from exercise_catalogue import ROOT, CatalogueError, Exercise, read_chapter, stars  # noqa: E402


class LengthError(ValueError):
    """Bad input: a chapter whose exercises and solutions cannot be measured, or a bad rate."""


# --------------------------------------------------------------------------- rates


@dataclass(frozen=True)
class Rate:
    """A per-unit rate as a range: ``low`` gives the shorter time, ``high`` the longer."""
    low: float
    high: float
    unit: str
    why: str

    def __post_init__(self):
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise LengthError(f"rate {self.unit!r}: {name} must be a positive number; got {value!r}")
        if self.low > self.high:
            raise LengthError(f"rate {self.unit!r}: low ({self.low!r}) gives the shorter time, so it "
                              f"must not exceed high ({self.high!r})")


# Published rates the estimate is anchored to (words a minute, adults reading or writing English).
# Brysbaert (2019), J. Memory and Language 109, 104047: silent reading of non-fiction for
# comprehension, 238 on average (most adults between 175 and 300).
NONFICTION_WPM = 238
# Carver (1992), "Reading rate: theory, research, and practical implications", J. Reading
# 36(2), 84-95: reading to learn about 200, reading to memorize about 138.
LEARNING_WPM, MEMORIZING_WPM = 200, 138
# Karat, Halverson, Horn and Karat (1999), CHI '99: composing text at a keyboard, 19 on average.
COMPOSING_WPM = 19

# The estimate's rates, each from the fast end (shorter time) to the slow end.
READING_WPM = (LEARNING_WPM, 100)
WRITING_WPM = (8, 4)
CODE_MINUTES_PER_LINE = (1, 3)
IDEA_MINUTES_PER_STAR = (10, 30)

RATES = {
    "reading": Rate(
        1 / READING_WPM[0], 1 / READING_WPM[1], "minutes per word read",
        f"{READING_WPM[1]} to {READING_WPM[0]} words a minute: at most Carver's rate for reading "
        f"to learn ({LEARNING_WPM}), below the {NONFICTION_WPM} at which adults read ordinary "
        f"non-fiction (Brysbaert 2019); the slow end, below Carver's rate for memorizing "
        f"({MEMORIZING_WPM}), is an assumption for a reader who stops at each formula and proof"),
    "writing": Rate(
        1 / WRITING_WPM[0], 1 / WRITING_WPM[1], "minutes per word of the written solution",
        f"{WRITING_WPM[1]} to {WRITING_WPM[0]} words a minute, formulas counted as read aloud: "
        f"well under the {COMPOSING_WPM} at which adults compose plain text at a keyboard "
        "(Karat et al. 1999), since the student also works out and checks the argument; "
        "an assumption"),
    "code": Rate(
        float(CODE_MINUTES_PER_LINE[0]), float(CODE_MINUTES_PER_LINE[1]),
        "minutes per line of the solution's code",
        f"{CODE_MINUTES_PER_LINE[0]} to {CODE_MINUTES_PER_LINE[1]} minutes a line of the model "
        "solution's code, without its checks and printouts; an assumption"),
    "idea": Rate(
        float(IDEA_MINUTES_PER_STAR[0]), float(IDEA_MINUTES_PER_STAR[1]), "minutes per star",
        f"{IDEA_MINUTES_PER_STAR[0]} to {IDEA_MINUTES_PER_STAR[1]} minutes a star, to find the "
        "idea before writing: a one-star exercise applies the chapter, a three-star one needs an "
        "idea the chapter does not spell out; an assumption"),
}


# --------------------------------------------------------------------------- counting

_ROLE = re.compile(r"\{[\w:.-]+\}`([^`]*)`")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$(?:[ \t]*\([^()\s]+\))?", re.S)   # with its (label)
_INLINE = re.compile(r"\$([^$]+?)\$", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_WORD = re.compile(r"[^\W_]+(?:['’.,-][^\W_]+)*")   # "don't", "3.1", "1,000", "row-stochastic"
# Commands whose argument holds words (\text{for all} reads "for all").
_TEXT_COMMANDS = re.compile(r"\\(?:text|textrm|textit|textbf|mathrm|operatorname\*?|mbox)\s*\{([^{}]*)\}")
# Commands that are not read: fonts, accents, sizes, spacing, environments, labels.
_SILENT = {"mathbb", "mathcal", "mathbf", "mathit", "mathsf", "mathfrak", "boldsymbol", "bm",
           "hat", "widehat", "tilde", "widetilde", "bar", "overline", "underline", "vec", "dot",
           "ddot", "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
           "biggl", "biggr", "quad", "qquad", "displaystyle", "textstyle", "scriptstyle",
           "limits", "nolimits", "begin", "end", "label", "tag", "nonumber", "notag",
           "phantom", "vphantom", "hphantom", "mathstrut", "strut", "color", "middle", "substack"}


def count_math(tex: str) -> int:
    """The words it takes to read the formula ``tex`` aloud, approximated by its atoms.

    Letters, numbers (a run of digits is one), operator signs (``+ - = < > / * !``) and
    symbol commands count one each; the words inside ``\\text{}``-like commands count as
    words; brackets, ``^``, ``_``, braces, ``&``, ``\\\\``, spacing (``\\,``), font and
    sizing commands, environment names and labels count nothing.
    """
    words = 0

    def text_words(m):
        nonlocal words
        words += len(_WORD.findall(m.group(1)))
        return " "
    tex = _TEXT_COMMANDS.sub(text_words, tex)
    tex = re.sub(r"\\(?:begin|end|label|tag)\s*\{[^{}]*\}", " ", tex)
    tex = tex.replace("\\\\", " ")                 # a line break
    tex = re.sub(r"\\[,;:! ]", " ", tex)          # spacing
    for command in re.findall(r"\\([A-Za-z]+)", tex):
        words += command not in _SILENT
    tex = re.sub(r"\\[A-Za-z]+", " ", tex)
    words += len(re.findall(r"[A-Za-z]", tex))
    words += len(re.findall(r"\d+(?:\.\d+)?", tex))
    words += len(re.findall(r"[+\-=<>/*!]", tex))
    return words


# Directives whose argument is a label, a path or code, not a title the reader sees.
_UNSHOWN_ARGUMENT = {"figure", "image", "include", "literalinclude", "bibliography", "solution",
                     "solution-start", "solution-end", "code-cell", "glue:figure", "glue:math",
                     "numbered-list", "raw", "toctree", "tableofcontents", "math"}


def _strip_code(lines: list[str]) -> tuple[list[str], int]:
    """Markdown lines without directive fences, options and code; and the lines of code dropped.

    Directive fences (```` ```{name} ````, ``:::{name}``) and their closing fences (a box's
    title on the fence is kept), their option lines, targets ``(label)=`` and fenced code
    blocks are dropped; so are indented
    code blocks (lines indented by four spaces or more after a blank line: the stubs of
    the exercises). Fenced and indented code lines that are not blank are counted.
    """
    kept, code, open_fences, i, n = [], 0, [], 0, len(lines)
    while i < n:
        line = lines[i]
        if open_fences and closes(line, open_fences[-1]):
            open_fences.pop()
            i += 1
            continue
        if m := DIRECTIVE.match(line):
            open_fences.append(m.group("fence"))
            if m.group("name") not in _UNSHOWN_ARGUMENT:
                kept.append(m.group("arg"))                      # a box's title
            i += 1
            if i < n and lines[i].strip() == "---":               # YAML options
                i += 1
                while i < n and lines[i].strip() != "---":
                    i += 1
                i += 1
            while i < n and OPTION.match(lines[i]):
                i += 1
            continue
        if (m := CODE_FENCE.match(line)) and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
            fence, i = m.group("fence"), i + 1
            while i < n and not closes(lines[i], fence):
                code += bool(lines[i].strip())
                i += 1
            i += 1
            continue
        if re.match(r"^ {4,}\S", line) and (not kept or not kept[-1].strip()):
            while i < n and (not lines[i].strip() or re.match(r"^ {4,}", lines[i])):
                code += bool(lines[i].strip())
                i += 1
            kept.append("")
            continue
        if re.match(r"^ {0,3}\([^()\s]+\)=\s*$", line):
            i += 1
            continue
        kept.append(line)
        i += 1
    return kept, code


def count_words(markdown: str) -> int:
    """The words of MyST ``markdown`` as the site shows it, formulas counted as read aloud."""
    lines, _ = _strip_code(markdown.split("\n"))
    text = "\n".join(lines)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    words = 0

    def role(m):
        nonlocal words
        inner = m.group(1)
        explicit = re.match(r"(.*\S)\s*<[^<>]+>\s*$", inner, re.S)
        if explicit:
            words += len(_WORD.findall(explicit.group(1)))
        elif m.group(0).startswith("{cite"):
            words += 3 * len([k for k in inner.split(",") if k.strip()])   # "Gu et al., 2022"
        else:
            words += 2                                                      # "Theorem 3.1"
        return " "
    text = _ROLE.sub(role, text)

    def code_span(m):
        nonlocal words
        words += len(_WORD.findall(m.group(2)))
        return " "
    text = _CODE_SPAN.sub(code_span, text)

    def formula(m):
        nonlocal words
        words += count_math(m.group(1))
        return " "
    text = _DISPLAY.sub(formula, text)
    text = _INLINE.sub(formula, text)
    text = _IMAGE.sub(" ", text)
    text = _LINK.sub(lambda m: " " + m.group(1) + " ", text)
    text = re.sub(r"<[^<>\n]+>", " ", text)
    return words + len(_WORD.findall(text))


def count_code(source: str) -> int:
    """Lines of the answer's code in a solution's code cell.

    A line counts when it is not blank, not only a comment and not a magic (``%``, ``!``),
    and its statement is not one of the book's own checks and reports: a statement that
    starts with ``assert`` or ``print(``, or that names a ``check_...`` function (the
    stub's import and call, which the student is given). A statement over several lines
    counts all its lines.
    """
    lines = source.split("\n")
    try:
        statements = _logical_lines(source)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        statements = [(k, k) for k in range(len(lines))]   # not Python: one statement a line
    count = 0
    for first, last in statements:
        head = lines[first].lstrip()
        text = "\n".join(lines[first:last + 1])
        if head.startswith(("#", "%", "!", "assert ", "assert(", "print(")) or re.search(r"\bcheck_\w", text):
            continue
        count += sum(1 for ln in lines[first:last + 1] if ln.strip() and not ln.lstrip().startswith("#"))
    return count


def _logical_lines(source: str) -> list[tuple[int, int]]:
    """``(first, last)`` 0-based physical lines of each logical line (statement) of ``source``."""
    spans, start = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENCODING, tokenize.ENDMARKER):
            continue
        if start is None:
            start = tok.start[0] - 1
        if tok.type == tokenize.NEWLINE:
            spans.append((start, tok.start[0] - 1))
            start = None
    if start is not None:
        spans.append((start, len(source.split("\n")) - 1))
    return spans


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Measured:
    """One exercise with the sizes measured in its chapter."""
    exercise: Exercise
    statement_words: int   # the directive's text, without its stub's code
    solution_words: int    # the written solution (its markdown)
    solution_code: int     # lines of the solution's code cells

    def minutes(self, end: str, rates: dict[str, Rate] = RATES) -> float:
        """The estimated work time in minutes at the ``"low"`` or ``"high"`` end of the rates."""
        if end not in ("low", "high"):
            raise LengthError(f"end must be 'low' or 'high'; got {end!r}")
        r = {k: getattr(v, end) for k, v in _checked(rates).items()}
        return (self.statement_words * r["reading"] + self.solution_words * r["writing"]
                + self.solution_code * r["code"] + self.exercise.difficulty * r["idea"])


@dataclass(frozen=True)
class Chapter:
    number: int
    title: str
    docname: str
    prose_words: int               # the chapter's text outside the exercises and solutions
    exercises: tuple[Measured, ...]

    def reading_minutes(self, end: str, rates: dict[str, Rate] = RATES) -> float:
        if end not in ("low", "high"):
            raise LengthError(f"end must be 'low' or 'high'; got {end!r}")
        return self.prose_words * getattr(_checked(rates)["reading"], end)

    def work_minutes(self, end: str, levels=(1, 2, 3), rates: dict[str, Rate] = RATES) -> float:
        return sum(m.minutes(end, rates) for m in self.exercises if m.exercise.difficulty in levels)


def _checked(rates) -> dict[str, Rate]:
    if not isinstance(rates, dict) or set(rates) != set(RATES) \
            or not all(isinstance(r, Rate) for r in rates.values()):
        raise LengthError(f"rates must map {', '.join(sorted(RATES))} to Rate objects; got {rates!r}")
    return rates


class _Cell(dict):
    """A notebook cell read with json, with the attributes bookkit's walk reads."""
    @property
    def cell_type(self):
        return self["cell_type"]

    @property
    def source(self):
        s = self.get("source", "")
        return "".join(s) if isinstance(s, list) else s


def measure_chapter(path: Path) -> Chapter:
    """Measure one chapter notebook: its prose, and each exercise's statement and solution."""
    path = Path(path)
    if not path.is_file():
        raise LengthError(f"{path}: no such chapter notebook")
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = [_Cell(c) for c in nb["cells"]]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise LengthError(f"{path}: not a notebook ({type(e).__name__}: {e})") from None
    try:
        exercises = read_chapter(path)
    except CatalogueError as e:
        raise LengthError(str(e)) from None
    if not exercises:
        raise LengthError(f"{path.name}: has no exercises, so no problem set to measure")
    labels = {e.label for e in exercises}
    statement, written, code = {}, {label: 0 for label in labels}, {label: 0 for label in labels}
    solved: set[str] = set()
    prose = 0

    def solution(label, where):
        if label not in labels:
            raise LengthError(f"{path.name}, cell {where}: a solution of {label!r}, which is not an "
                              f"exercise of this chapter (its exercises: {', '.join(sorted(labels))})")
        solved.add(label)
        return label

    try:
        walk = list(gated_cells(cells, path.name, LengthError))
    except BookError as e:
        raise LengthError(str(e)) from None
    for g in walk:
        if g.role in ("start", "inside", "end"):
            label = solution(g.label, g.index)
            if g.cell.cell_type == "code":
                code[label] += count_code(g.cell.source)
            elif g.role == "start":
                written[label] += count_words(g.rest)
            elif g.role == "inside":
                written[label] += count_words(g.cell.source)
            continue
        if g.cell.cell_type != "markdown":
            continue                       # the chapter's own code: not in the reading time
        if has_tag(g.cell, "remove-cell"):
            continue                       # not on the page
        lines = g.cell.source.split("\n")
        cut = []                           # (first, last) of the exercise and solution blocks
        for first, last, name, arg in directive_blocks(lines):
            if name == "exercise":
                label = directive_label(lines, first, last)
                statement[label] = count_words("\n".join(lines[first:last + 1]))
                cut.append((first, last))
            elif name == "solution":
                label = solution(arg.split()[0] if arg else "", g.index)
                written[label] += count_words("\n".join(lines[first:last + 1]))
                cut.append((first, last))
        rest = [ln for k, ln in enumerate(lines) if not any(a <= k <= b for a, b in cut)]
        prose += count_words("\n".join(rest))
    unread = sorted(labels - set(statement))
    if unread:
        raise LengthError(f"{path.name}: the statement of {', '.join(unread)} is not on the page "
                          "(in a cell left out of the site or inside another solution)")
    unsolved = sorted(labels - solved)
    if unsolved:
        raise LengthError(f"{path.name}: no solution for {', '.join(unsolved)}; the estimate "
                          "measures each exercise's solution")
    measured = tuple(Measured(e, statement[e.label], written[e.label], code[e.label]) for e in exercises)
    first = exercises[0]
    return Chapter(first.chapter, first.chapter_title, first.docname, prose, measured)


def measure_book(chapters: Path = ROOT / "chapters") -> list[Chapter]:
    """Every chapter notebook of ``chapters``, measured, in order."""
    chapters = Path(chapters)
    if not chapters.is_dir():
        raise LengthError(f"{chapters}: not a folder of chapter notebooks")
    paths = sorted(chapters.glob("*.ipynb"))
    if not paths:
        raise LengthError(f"{chapters}: no chapter notebooks (*.ipynb)")
    return [measure_chapter(p) for p in paths]


# --------------------------------------------------------------------------- tables


def _range(low: float, high: float, step: float, scale: float) -> str:
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and 0 <= low <= high < math.inf):
        raise LengthError(f"a range of minutes needs 0 <= low <= high; got {low!r}, {high!r}")
    lo = math.floor(low / step + 1e-9) * step / scale
    hi = math.ceil(high / step - 1e-9) * step / scale
    return f"{lo:g}–{hi:g}"


def hours(low_minutes: float, high_minutes: float) -> str:
    """A range of minutes as hours, rounded outwards to the half hour: ``"1.5–3"``."""
    return _range(low_minutes, high_minutes, 30, 60)


def minutes(low_minutes: float, high_minutes: float) -> str:
    """A range of minutes rounded outwards to five minutes: ``"35–75"``."""
    return _range(low_minutes, high_minutes, 5, 1)


def chapter_table(chapters: list[Chapter], rates: dict[str, Rate] = RATES, links: bool = True) -> str:
    """One row per chapter: exercises by kind and stars, prose words, reading and work hours.

    MyST Markdown; with ``links`` each chapter's number links to it (``{doc}``), without it
    the number stands alone (for a terminal).
    """
    rows = ["| Chapter | Exercises: auto-checked / by hand | ★ / ★★ / ★★★ | Words of prose "
            "| Reading (min) | Problem set without ★★★ (h) | The ★★★ (h) |",
            "| :---: | :---: | :---: | :---: | :---: | :---: | :---: |"]
    for c in chapters:
        ex = [m.exercise for m in c.exercises]
        checked = sum(e.checked for e in ex)
        by_stars = " / ".join(str(sum(e.difficulty == d for e in ex)) for d in (1, 2, 3))
        three = [m for m in c.exercises if m.exercise.difficulty == 3]
        rows.append(
            f"| {f'{{doc}}`{c.number} </{c.docname}>`' if links else c.number} "
            f"| {checked} / {len(ex) - checked} | {by_stars} "
            f"| {c.prose_words:,} | {minutes(c.reading_minutes('low', rates), c.reading_minutes('high', rates))} "
            f"| {hours(c.work_minutes('low', (1, 2), rates), c.work_minutes('high', (1, 2), rates))} "
            f"| {hours(c.work_minutes('low', (3,), rates), c.work_minutes('high', (3,), rates)) if three else '—'} |")
    return "\n".join(rows)


def exercise_table(chapters: list[Chapter], rates: dict[str, Rate] = RATES) -> str:
    """One row per exercise: the measured sizes and the estimate in minutes (for checking)."""
    rows = ["| Exercise | Stars | Kind | Statement words | Solution words | Solution code lines "
            "| Minutes |",
            "| --- | :---: | :---: | ---: | ---: | ---: | ---: |"]
    for c in chapters:
        for m in c.exercises:
            e = m.exercise
            rows.append(f"| {e.label} | {stars(e.difficulty)} | {'auto' if e.checked else 'by hand'} "
                        f"| {m.statement_words} | {m.solution_words} | {m.solution_code} "
                        f"| {m.minutes('low', rates):.0f}–{m.minutes('high', rates):.0f} |")
    return "\n".join(rows)


def calibrate(measured: list[Measured], observed_minutes: list[float]) -> dict[str, float]:
    """How far the estimate is from observed times: the ratio observed / estimate, low and high end.

    ``observed_minutes[i]`` is a time observed for ``measured[i]`` (a pilot class's median,
    say). Returns ``{"low": ..., "high": ...}``, the median over exercises of observed time
    divided by the low and the high estimate: a calibrated estimate would put the low ratio
    at or above 1 and the high ratio at or below 1. Scale the rates by these ratios to fit.
    """
    if len(measured) != len(observed_minutes) or not measured:
        raise LengthError(f"calibrate needs one observed time per exercise, and at least one; got "
                          f"{len(measured)} exercises and {len(observed_minutes)} times")
    for t in observed_minutes:
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            raise LengthError(f"an observed time must be a positive number of minutes; got {t!r}")

    def median(xs):
        xs = sorted(xs)
        k = len(xs) // 2
        return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2
    return {end: median([t / m.minutes(end) for m, t in zip(measured, observed_minutes)])
            for end in ("low", "high")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", type=Path, default=ROOT / "chapters",
                        help="folder of the chapter notebooks (default: chapters/)")
    parser.add_argument("--exercises", action="store_true",
                        help="also print one row per exercise: its measured sizes and estimate")
    args = parser.parse_args(argv)
    try:
        chapters = measure_book(args.chapters)
    except LengthError as e:
        print(f"problem_set_length.py: {e}", file=sys.stderr)
        return 2
    print(chapter_table(chapters, links=False))
    if args.exercises:
        print()
        print(exercise_table(chapters))
    print()
    print("An estimate, not a measurement of students: sizes measured in the chapters, times from")
    print("these rates (the fast end of each range for a fast student, the slow end for a slow one):")
    for name, r in RATES.items():
        print(f"- {name}: {r.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
