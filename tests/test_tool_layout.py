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
