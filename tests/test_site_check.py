"""tools/site_check.py fails on the defects it promises to find."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("site_check", ROOT / "tools" / "site_check.py")
site_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(site_check)


def _site(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text('<html><body><main><h1 id="top">Home</h1>'
                                         '<a href="sub/page.html#here">ok</a></main></body></html>')
    (tmp_path / "sub" / "page.html").write_text('<html><body><main><p id="here">x</p></main></body></html>')
    return tmp_path


def test_check_links_accepts_existing_files_and_anchors(tmp_path):
    site = _site(tmp_path)
    links = ["sub/page.html#here", "#top", "https://example.org/", "mailto:a@b.c"]
    assert site_check.check_links(links, site / "index.html", site, {}) == []


def test_check_links_reports_missing_files_and_anchors(tmp_path):
    site = _site(tmp_path)
    problems = site_check.check_links(["sub/gone.html", "sub/page.html#nowhere", "#absent"],
                                      site / "index.html", site, {})
    assert problems == ["broken link sub/gone.html", "missing anchor sub/page.html#nowhere",
                        "missing anchor #absent"]


def test_known_harmless_messages_carry_reasons():
    assert all(len(reason) > 40 for reason in site_check.KNOWN_HARMLESS.values())


@pytest.mark.skipif(site_check.find_chromium() is None, reason="no Chromium on this machine")
def test_a_broken_page_fails_in_the_browser(tmp_path):
    site = _site(tmp_path)
    (site / "index.html").write_text(
        '<html><head><script src="https://cdn.example.org/lib.js"></script></head><body><main>'
        '<span class="math">x^2</span> and $y$ in prose'
        '<img src="missing.png"><a href="nowhere.html">x</a>'
        '<div class="output traceback">Traceback (most recent call last)</div>'
        '<script>throw new Error("boom")</script></main></body></html>')
    out = tmp_path / "shots"
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "site_check.py"), "--site", str(site),
                          "--out", str(out)], capture_output=True, text=True, timeout=120)
    report = run.stdout
    assert run.returncode == 1, report
    for expected in ("FAIL index.html", "1 of 1 math elements not rendered", "raw $...$ in the prose",
                     "traceback or error outputs", "image did not load: missing.png",
                     "broken link nowhere.html", "request to an outside host: https://cdn.example.org/lib.js",
                     "JavaScript error: boom", "OK   sub/page.html", "1 passed, 1 failed"):
        assert expected in report, (expected, report)
    assert (out / "index.html.png").exists()


def test_missing_browser_is_reported_plainly(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "site_check.py"), "--allow-missing-browser"],
                         capture_output=True, text=True, timeout=60,
                         env={"CHROMIUM": str(tmp_path / "x"), "PATH": str(tmp_path)})
    assert run.returncode == 0 and "site-check: SKIPPED, no Chromium found" in run.stdout
    strict = subprocess.run([sys.executable, str(ROOT / "tools" / "site_check.py")],
                            capture_output=True, text=True, timeout=60,
                            env={"CHROMIUM": str(tmp_path / "x"), "PATH": str(tmp_path)})
    assert strict.returncode == 1  # `make site-check` itself insists on a browser
