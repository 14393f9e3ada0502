"""Show the library's own source next to the mathematics it implements.

Each chapter prints the functions that carry its results right after the proof
or derivation they implement, with a cell such as
``sh.show_source(sh.heads._exact_heads)``. The listing is read from the
installed package at run time, so the book and the library are one text:
``tests/test_source_in_text.py`` checks that every listing stored in a chapter
(and in the portable and student notebooks) is exactly the current source.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Listing", "show_source"]


@dataclass(frozen=True)
class Listing:
    """The source of one function or method of ``ssmheads``, ready to display.

    Jupyter shows it as a highlighted code block (``text/markdown``); ``repr`` gives
    the plain text. ``name`` is the dotted name (``ssmheads.heads._exact_heads``),
    ``path`` the file relative to ``lib/`` (``ssmheads/heads.py``), ``code`` the source.

    Used in Chapter 1 (and in every chapter after it).
    """

    name: str
    path: str
    code: str

    def header(self) -> str:
        return f"{self.name}  (lib/{self.path})"

    def _repr_markdown_(self) -> str:
        return f"`{self.name}`, from `lib/{self.path}`:\n\n```python\n{self.code}```\n"

    def __repr__(self) -> str:
        return f"# {self.header()}\n{self.code}"


def show_source(obj) -> Listing:
    """The source of ``obj``, a function or method defined in ``ssmheads``, as a :class:`Listing`.

    Used in Chapter 1 (and in every chapter after it), to show a construction next to its proof.

    Parameters
    ----------
    obj : function or method
        For example ``sh.heads._exact_heads`` or ``sh.LinearSSM.interaction``.

    Returns
    -------
    Listing
        Its dotted name, its file and its source (dedented, ending in a newline).

    Raises
    ------
    ValueError
        If ``obj`` is not a function or method of ``ssmheads`` (a class, a module,
        a built-in or another package's function).
    """
    func = inspect.unwrap(obj)
    if isinstance(func, (staticmethod, classmethod)):
        func = func.__func__
    if isinstance(func, property):
        func = func.fget
    if inspect.ismethod(func):
        func = func.__func__
    if not inspect.isfunction(func):
        raise ValueError(f"obj must be a function or method of ssmheads; got {type(obj).__name__} {obj!r}")
    module = getattr(func, "__module__", "") or ""
    if module != "ssmheads" and not module.startswith("ssmheads."):
        raise ValueError(f"obj must be a function or method of ssmheads; got {func.__qualname__} "
                         f"from the module {module!r}")
    code = textwrap.dedent(inspect.getsource(func))
    if not code.endswith("\n"):
        code += "\n"
    package = Path(inspect.getfile(inspect.getmodule(func))).resolve()
    root = Path(__file__).resolve().parent.parent  # lib/
    return Listing(f"{module}.{func.__qualname__}", package.relative_to(root).as_posix(), code)
