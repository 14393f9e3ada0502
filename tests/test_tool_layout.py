"""The book's tooling (tools/, book/_ext/, instructors/) imports one way: no import cycle."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import import_graph  # noqa: E402  (tools/ is not a package)


def test_the_tooling_has_no_import_cycle():
    edges = import_graph.graph(ROOT)
    assert "tools/portable" in edges and "tools/bookkit/core" in edges
    assert import_graph.cycles(edges) == [], import_graph.report(ROOT)


def test_the_core_imports_no_product():
    edges = import_graph.graph(ROOT)
    for name in ("tools/bookkit/core", "tools/bookkit/student"):
        assert all(target.startswith("tools/bookkit/") for target, _ in edges[name]), edges[name]


def test_a_cycle_is_found(tmp_path):
    for folder in ("tools", "book/_ext", "instructors"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "tools" / "a.py").write_text("import b\n")
    (tmp_path / "tools" / "b.py").write_text("def f():\n    import a\n")
    assert import_graph.cycles(import_graph.graph(tmp_path)) == [["tools/a", "tools/b"]]
    assert import_graph.main(["--root", str(tmp_path), "--check"]) == 1


# --------------------------------------------------------------------------- packages as nodes


def plant(root: Path, files: dict[str, str]) -> None:
    for folder in ("tools", "book/_ext", "instructors"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_cycle_between_a_package_and_a_product_is_found(tmp_path):
    """bookkit.cli -> portable -> bookkit.core: no cycle among modules, one between bookkit and portable."""
    plant(tmp_path, {"tools/bookkit/__init__.py": "", "tools/bookkit/core.py": "X = 1\n",
                     "tools/bookkit/cli.py": "import portable\n",
                     "tools/portable.py": "from bookkit.core import X\n"})
    edges = import_graph.graph(tmp_path)
    assert import_graph.cycles(edges) == []
    assert import_graph.package_graph(edges, tmp_path) == {
        "tools/bookkit": [("tools/portable", "top")], "tools/portable": [("tools/bookkit", "top")]}
    assert import_graph.all_cycles(tmp_path) == [["tools/bookkit", "tools/portable"]]
    assert import_graph.main(["--root", str(tmp_path), "--check"]) == 1
    assert "cycles between packages and modules: tools/bookkit <-> tools/portable" in import_graph.report(tmp_path)
    (tmp_path / "tools" / "bookkit" / "cli.py").unlink()            # the command line moves out: no cycle
    assert import_graph.main(["--root", str(tmp_path), "--check"]) == 0


def test_a_command_table_and_a_dotted_load_are_imports(tmp_path):
    plant(tmp_path, {"tools/bookcli/__init__.py": "",
                     "tools/bookcli/__main__.py": 'COMMANDS = {"portable": ("portable", "help")}\n',
                     "tools/bookkit/__init__.py": "", "tools/bookkit/core.py": "",
                     "tools/portable.py": "import bookcli\n",
                     "book/_ext/ext.py": 'def f(srcdir):\n    return _load(srcdir, "bookkit.core")\n'})
    edges = import_graph.graph(tmp_path)
    assert edges["tools/bookcli/__main__"] == [("tools/portable", "command")]
    assert edges["book/_ext/ext"] == [("tools/bookkit/core", "load")]
    assert import_graph.all_cycles(tmp_path) == [["tools/bookcli", "tools/portable"]]


def test_the_layout_is_core_then_products_then_command_line():
    edges = import_graph.graph(ROOT)
    packages = import_graph.package_graph(edges, ROOT)
    assert import_graph.all_cycles(ROOT) == [], import_graph.report(ROOT)
    # the command line imports the products, and nothing imports it
    assert {t for t, how in edges["tools/bookcli/__main__"]} >= {"tools/portable", "tools/make_otter"}
    assert all(how == "command" for _, how in edges["tools/bookcli/__main__"])
    assert not [n for n, targets in packages.items() if "tools/bookcli" in dict(targets)]
    # the core imports nothing outside itself
    assert packages.get("tools/bookkit", []) == []
    # the Sphinx extensions ask the core for the model of the book; only the downloads need a product
    assert dict(edges["book/_ext/backrefs"]).get("tools/bookkit/core") == "load"
    assert "tools/portable" not in dict(edges["book/_ext/backrefs"])
    assert dict(edges["book/_ext/portable_downloads"]).get("tools/bookkit/core") == "load"
    # the checks read the book through the core
    for check in ("tools/figure_alt", "tools/exercise_catalogue", "tools/assert_margins"):
        assert "tools/bookkit/core" in dict(edges[check]), check
