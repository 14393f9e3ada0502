#!/usr/bin/env python3
"""The layout of the book's tooling: its files, their lines, and which module imports which.

Usage: python tools/import_graph.py [--root DIR] [--check]

Reads (never runs) every Python file under ``tools/``, ``book/_ext/`` and ``instructors/``
and prints one line per file (its lines), then one line per module with the modules of the
tooling it imports, then the import cycles (a strongly connected group of two or more
modules). An import inside a function counts too (marked ``lazy``: it still ties the two
modules together), and so does ``book/_ext/portable_downloads.py``'s ``_load(srcdir,
"name")``, which loads ``tools/<name>.py`` or, dotted, a package's module (marked
``load``), and a command of ``tools/bookcli``'s table (``COMMANDS``: command -> (module,
help); marked ``command``: the module is imported when the command runs).

It then reads the same imports with each package as one node (``tools/bookkit``,
``tools/bookcli``: every module of a folder with an ``__init__.py``, under one of the
folders above) beside the top-level modules (``tools/portable``, ``book/_ext/backrefs``),
and prints the cycles between them: ``bookkit.cli -> portable -> bookkit.core`` is no
cycle among modules but one between the package ``bookkit`` and ``portable``, and the
layout core <- products <- command line forbids it. ``--check`` exits 1 when there is a
cycle of either kind (tests/test_tool_layout.py runs it).
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("tools", "book/_ext", "instructors")


def modules(root: Path) -> dict[str, Path]:
    """``{name: path}`` for the Python files of the tooling: ``tools/portable``, ``tools/bookkit/core``, ..."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            if "node_modules" in rel.parts or "__pycache__" in rel.parts:
                continue
            found[rel.with_suffix("").as_posix()] = path
    return found


def _resolve(name: str, here: str, known: dict[str, Path]) -> str | None:
    """The tooling module that the import of ``name`` from module ``here`` finds, if any.

    A name is looked up in the importing file's own folder first (each folder is put on
    ``sys.path`` by the scripts that use it), then in ``tools/``.
    """
    folder = here.rsplit("/", 1)[0]
    top = folder.split("/bookkit")[0] if "/bookkit" in folder else folder
    for base in dict.fromkeys((folder, top, "tools")):
        candidate = f"{base}/{name.replace('.', '/')}"
        if candidate in known:
            return candidate
        if f"{candidate}/__init__" in known:
            return f"{candidate}/__init__"
    return None


def imports(path: Path, here: str, known: dict[str, Path]) -> list[tuple[str, str]]:
    """``[(module, how)]`` that the file imports; ``how``: ``top``, ``lazy`` or ``load``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}

    def add(target: str | None, how: str):
        if target and target != here and found.get(target) != "top":
            found[target] = how

    def visit(node: ast.AST, lazy: bool):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            how = "lazy" if inner else "top"
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(_resolve(alias.name, here, known), how)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    package = here.rsplit("/", child.level)[0]
                    base = package.replace("/", ".")
                    module = f"{base}.{child.module}" if child.module else base
                    names = [module] + [f"{module}.{a.name}" for a in child.names]
                    for name in names:
                        target = name.replace(".", "/")
                        if target in known:
                            add(target, how)
                else:
                    module = child.module or ""
                    hits = [_resolve(f"{module}.{a.name}", here, known) for a in child.names]
                    if any(hits):
                        for hit in hits:
                            add(hit, how)
                    else:
                        add(_resolve(module, here, known), how)
            elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "_load"
                  and len(child.args) == 2 and isinstance(child.args[1], ast.Constant)):
                add(_resolve(str(child.args[1].value), "tools/x", known), "load")
            elif isinstance(child, (ast.Assign, ast.AnnAssign)) and not lazy:
                for module in _commands(child):
                    add(_resolve(module, here, known), "command")
            visit(child, inner)

    visit(tree, False)
    return sorted(found.items())


def _commands(node: ast.Assign | ast.AnnAssign) -> list[str]:
    """The modules of a module-level ``COMMANDS = {"name": ("module", "help"), ...}`` table."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not any(isinstance(t, ast.Name) and t.id == "COMMANDS" for t in targets):
        return []
    if not isinstance(node.value, ast.Dict):
        return []
    return [value.elts[0].value for value in node.value.values
            if isinstance(value, ast.Tuple) and value.elts and isinstance(value.elts[0], ast.Constant)
            and isinstance(value.elts[0].value, str)]


def graph(root: Path = ROOT) -> dict[str, list[tuple[str, str]]]:
    known = modules(root)
    return {name: imports(path, name, known) for name, path in known.items()}


def cycles(edges: dict[str, list[tuple[str, str]]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan)."""
    index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in edges.get(v, []):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return groups


def node_of(name: str, root: Path = ROOT) -> str:
    """The node of module ``name`` when packages are read as one: its package, or itself.

    ``tools/bookkit/core`` -> ``tools/bookkit`` (tools/bookkit/ has an ``__init__.py``);
    ``tools/portable`` -> ``tools/portable``.
    """
    for folder in FOLDERS:
        if name.startswith(folder + "/"):
            parts = name[len(folder) + 1:].split("/")
            if len(parts) > 1 and (root / folder / parts[0] / "__init__.py").exists():
                return f"{folder}/{parts[0]}"
    return name


def package_graph(edges: dict[str, list[tuple[str, str]]], root: Path = ROOT) -> dict[str, list[tuple[str, str]]]:
    """``edges`` with each package as one node (imports inside a package are left out)."""
    merged: dict[str, dict[str, str]] = {}
    for name, targets in edges.items():
        node = node_of(name, root)
        into = merged.setdefault(node, {})
        for target, how in targets:
            other = node_of(target, root)
            if other != node and into.get(other) != "top":
                into[other] = how
    return {node: sorted(targets.items()) for node, targets in merged.items()}


def all_cycles(root: Path = ROOT) -> list[list[str]]:
    """The cycles among modules, then those between packages and top-level modules (not already listed)."""
    edges = graph(root)
    found = cycles(edges)
    nodes = [sorted({node_of(n, root) for n in group}) for group in found]
    return found + [g for g in cycles(package_graph(edges, root)) if g not in nodes]


def report(root: Path = ROOT) -> str:
    known = modules(root)
    edges = graph(root)
    lines = [f"{len(known)} files, {sum(len(p.read_text().splitlines()) for p in known.values())} lines"]
    for folder in FOLDERS:
        files = [p for n, p in known.items() if n.rsplit("/", 1)[0] == folder or n.startswith(folder + "/")]
        lines.append(f"  {folder}/: {len(files)} files, {sum(len(p.read_text().splitlines()) for p in files)} lines")
    lines.append("")
    for name, path in known.items():
        lines.append(f"{len(path.read_text().splitlines()):6d}  {name}.py")
    lines.append("")
    lines.append("imports among them (lazy: inside a function; load: _load(srcdir, name); "
                 "command: bookcli's table):")
    for name, targets in edges.items():
        if targets:
            lines.append(f"  {name} -> " + ", ".join(t + ("" if how == "top" else f" ({how})") for t, how in targets))
    found = cycles(edges)
    lines.append("")
    lines.append("cycles: " + ("; ".join(" <-> ".join(g) for g in found) if found else "none"))
    packages = package_graph(edges, root)
    lines.append("")
    lines.append("with each package as one node (" + ", ".join(
        sorted({node_of(n, root) for n in known} - set(known))) + "), who imports whom:")
    for name, targets in packages.items():
        if targets:
            lines.append(f"  {name} -> " + ", ".join(t for t, _ in targets))
    between = cycles(packages)
    lines.append("")
    lines.append("cycles between packages and modules: "
                 + ("; ".join(" <-> ".join(g) for g in between) if between else "none"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root folder")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the imports form a cycle, among modules or between packages")
    args = parser.parse_args(argv)
    print(report(args.root))
    return 1 if args.check and all_cycles(args.root) else 0


if __name__ == "__main__":
    sys.exit(main())
