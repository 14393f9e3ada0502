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


# ---------------------------------------------------------------------------
# The reader's checks (issue 12): each planted defect, on a small page laid out like
# the book's theme, is reported on that page and nowhere else.

PNG = bytes.fromhex(  # a 1x1 white PNG
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d10000000049454e44ae426082")

THEMED = """<!DOCTYPE html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body {{ margin: 0; font: 16px/1.5 sans-serif; }}
  .bd-container {{ display: flex; }}
  .bd-sidebar-primary {{ width: 240px; flex: none; background: #fff; }}
  .bd-sidebar-secondary {{ width: 200px; flex: none; background: #fff; }}
  main {{ flex: 1; min-width: 0; padding: 0 12px; }}
  nav a {{ display: block; padding: 6px; }}
  #backdrop {{ display: none; position: fixed; inset: 0; z-index: 5; background: rgba(0, 0, 0, .3); }}
  body.desk-hidden .bd-sidebar-primary {{ display: none; }}
  @media (max-width: 959px) {{
    .bd-sidebar-primary, .bd-sidebar-secondary {{ position: fixed; top: 0; bottom: 0; z-index: 10; }}
    .bd-sidebar-primary {{ left: -300px; }}
    .bd-sidebar-secondary {{ right: -300px; }}
    body.menu-open .bd-sidebar-primary {{ left: 0; }}
    body.toc-open .bd-sidebar-secondary {{ right: 0; }}
    body.menu-open #backdrop, body.toc-open #backdrop {{ display: block; }}
  }}
  .cue {{ -webkit-mask-image: linear-gradient(to right, #000 80%, transparent);
          mask-image: linear-gradient(to right, #000 80%, transparent); }}
  mjx-math {{ display: inline-block; }}
  .toggle-hidden > :not(.admonition-title) {{ display: none; }}
</style></head><body>
<div class="bd-container">
  <div class="bd-sidebar-primary"><nav class="bd-links"><a href="index.html">1. The first chapter</a>
    <a href="index.html#s1">2. The second chapter</a><a class="current" href="#">3. This page</a></nav></div>
  <main><article class="bd-article">
    <button class="primary-toggle" aria-label="Chapters">&#9776;</button>
    <button class="secondary-toggle" aria-label="Contents">&#8801;</button>
    <h1 id="s1">A page</h1><p>Some prose.</p>
    {body}
    <div style="height: 1600px"></div>
    <section id="far"><h2>A section far below</h2><p>The end.</p></section>
  </article></main>
  <div class="bd-sidebar-secondary"><nav class="page-toc"><a href="#s1">1.1. A section</a>
    <a href="#far">1.2. A section far below</a></nav></div>
</div>
<div id="backdrop"></div>
{script}
</body></html>"""

# The drawers: toggles, a backdrop that closes them, and (CLOSE_ON_LINKS) a tap on a
# link in a drawer closes it too.
OPEN_CLOSE = """
  const wide = () => matchMedia('(min-width: 960px)').matches;
  document.querySelector('.primary-toggle').addEventListener('click', () =>
    document.body.classList.toggle(wide() ? 'desk-hidden' : 'menu-open'));
  document.querySelector('.secondary-toggle').addEventListener('click', () =>
    document.body.classList.add('toc-open'));
  document.getElementById('backdrop').addEventListener('click', () =>
    document.body.classList.remove('menu-open', 'toc-open'));
"""
CLOSE_ON_LINKS = """
  document.querySelectorAll('.bd-sidebar-primary a, .bd-sidebar-secondary a').forEach(a =>
    a.addEventListener('click', () => document.body.classList.remove('menu-open', 'toc-open')));
"""
# Like sphinx-togglebutton: a click on a collapsed block's title (or its button) opens it.
TOGGLES = """
  document.querySelectorAll('.admonition.toggle > .admonition-title').forEach(title =>
    title.addEventListener('click', (event) => {
      if (event.target !== title && !event.target.closest('button')) return;
      const block = title.parentElement, button = title.querySelector('button');
      block.classList.toggle('toggle-hidden');
      button.setAttribute('aria-expanded', String(!block.classList.contains('toggle-hidden')));
    }));
"""
NAV_SCRIPT = f"<script>{OPEN_CLOSE}{CLOSE_ON_LINKS}{TOGGLES}</script>"

ONE_WAY_SCRIPT = """<script>
  const wide = () => matchMedia('(min-width: 960px)').matches;
  document.querySelector('.primary-toggle').addEventListener('click', () =>
    document.body.classList.add(wide() ? 'desk-hidden' : 'menu-open'));
  document.querySelector('.secondary-toggle').addEventListener('click', () =>
    document.body.classList.add('toc-open'));
""" + CLOSE_ON_LINKS + "</script>"

# The drawers close on a tap on a link, but the link goes nowhere.
NO_JUMP_SCRIPT = ("<script>" + OPEN_CLOSE + """
  document.querySelectorAll('.bd-sidebar-primary a, .bd-sidebar-secondary a').forEach(a =>
    a.addEventListener('click', (event) => { event.preventDefault();
      document.body.classList.remove('menu-open', 'toc-open'); }));
""" + "</script>")

SOLUTION = ('<div class="exercise admonition" id="ex-1"><p class="admonition-title">Exercise 1.1 (Count them)</p>'
            '<p>Count the heads.</p></div>'
            '<div class="solution dropdown admonition toggle toggle-hidden" id="sol-1">'
            '<p class="admonition-title">Solution to{title}<button type="button" class="toggle-button" '
            'aria-expanded="false">&#9660;</button></p><section><p>There are four.</p></section></div>')

DEFECTS = {
    # page: (body, the navigation script (True: the working one), what the check must say)
    "index.html": (
        '<img src="fig.png" alt="Error against the number of heads, falling to zero at H = k">'
        '<p>Inline <span class="math"><mjx-container><mjx-math>x^2</mjx-math></mjx-container></span> fits.</p>'
        '<div class="math"><mjx-container display="true" class="cue" style="display:block; overflow-x:auto">'
        '<mjx-math style="width:900px">wide but scrolls with a cue</mjx-math></mjx-container></div>'
        '<div style="overflow-x:auto"><table><tr><td style="min-width:900px"><span class="math"><mjx-container>'
        '<mjx-math>in a table that scrolls</mjx-math></mjx-container></span></td></tr></table></div>'
        '<div class="highlight"><pre id="c">print(1)</pre><button class="copybtn" aria-label="Copy code">'
        '<svg width="10" height="10"></svg></button></div>' + SOLUTION.format(title=" Exercise 1.1 (Count them)"),
        True, None),
    "nav_stays_open.html": ("<p>The drawers close only on a tap beside them.</p>",
                            f"<script>{OPEN_CLOSE}</script>",
                            ["phone: tapping the link to this page in the chapter list does not close it",
                             "phone: tapping an entry of the page contents does not close them"]),
    "nav_no_jump.html": ("<p>A tap on an entry closes the drawer, and the page stays where it was.</p>",
                         NO_JUMP_SCRIPT,
                         ["phone: after tapping the page contents entry #far, its heading is not on screen"]),
    "title_link.html": (SOLUTION.format(title='<a href="#ex-1"> Exercise 1.1 (Count them)</a>'), True,
                        ['phone: tapping the title "Solution to Exercise 1.1 (Count them)" does not open it '
                         "(the tap went to title_link.html#ex-1)"]),
    "nav_broken.html": ("<p>No script behind the toggles.</p>", False,
                        ["desktop: the sidebar toggle does not hide the chapter list",
                         "phone: tapping the sidebar toggle does not show the chapter list",
                         "phone: tapping the Contents toggle does not show the page contents"]),
    "nav_one_way.html": ("<p>The toggles open (or hide) but nothing closes (or shows) again.</p>", ONE_WAY_SCRIPT,
                         ["desktop: the sidebar toggle does not bring the chapter list back",
                          "phone: tapping outside the chapter list does not hide it",
                          "phone: tapping outside the page contents does not hide them"]),
    "math_clipped.html": (
        '<p>Inline <span class="math" style="display:inline-block; max-width:120px; overflow:hidden">'
        '<mjx-container><mjx-math style="width:300px">K_{n-1} cut off</mjx-math></mjx-container></span>.</p>',
        True, ["phone: formula K_{n-1} cut off [clipped (300 px wide in a box of 120 px)]"]),
    "math_no_cue.html": (
        '<div class="math"><mjx-container display="true" style="display:block; overflow-x:auto">'
        '<mjx-math style="width:900px">scrolls silently</mjx-math></mjx-container></div>',
        True, ["phone: formula scrolls silently [scrolls with no cue that it does]"]),
    "math_sticks_out.html": (
        '<p>Inline <span class="math"><mjx-container><mjx-math style="width:600px">'
        'too wide for the screen</mjx-math></mjx-container></span>.</p>',
        True, ["phone: formula too wide for the screen [sticks out of the page]",
               "phone: the page is"]),
    "alt_text.html": (
        '<img src="fig.png"><img src="fig.png" alt=""><img src="fig.png" alt="../_images/3f2a9c0d1e2b4f5a6b7c.png">'
        '<img src="fig.png" alt="figure.png"><img src="fig.png" alt="3f2a9c0d1e2b4f5a6b7c8d9e">'
        '<img src="fig.png" alt="figures/heads"><img src="fig.png" alt="Training curves for H = 3 and H = 4">',
        True, ["image without alt text saying what it shows: fig.png (alt=None)",
               "image without alt text saying what it shows: fig.png (alt='')",
               "image without alt text saying what it shows: fig.png (alt='../_images/3f2a9c0d1e2b4f5a6b7c.png')",
               "image without alt text saying what it shows: fig.png (alt='figure.png')",
               "image without alt text saying what it shows: fig.png (alt='3f2a9c0d1e2b4f5a6b7c8d9e')",
               "image without alt text saying what it shows: fig.png (alt='figures/heads')"]),
    "copy_unnamed.html": (
        '<div class="highlight"><pre id="c">print(1)</pre><button class="copybtn">'
        '<svg width="10" height="10"><path d="M0 0h10v10H0z"/></svg></button></div>'
        '<div class="highlight"><pre id="d">print(2)</pre><button class="copybtn" aria-label="Copy code">'
        '<svg width="10" height="10"></svg></button></div>',
        True, ["1 of 2 copy buttons have no accessible name"]),
    "too_wide.html": ('<div style="width:700px">A banner wider than a phone.</div>', True,
                      ["phone: the page is 712 px wide on a 390 px screen; widest: div (to 712 px)"]),
    # Contrast is judged on one element of each kind of text (same colours, size, weight, over
    # the same backgrounds): the three pale links in the box are one kind, reported once; the
    # same links outside the box, and the dark link inside it, are other kinds, and pass.
    "contrast_box.html": (
        "".join(f'<p id="p{i}">Text with <a href="#p{i}" style="color:#5050d0">a link</a>.</p>' for i in range(3))
        + '<div style="background:#b4b4e6; padding:4px">'
        + "".join(f'<p id="b{i}">Boxed <a href="#b{i}" style="color:#5050d0">a link</a>.</p>' for i in range(3))
        + '<p id="d">Boxed <a href="#d" style="color:#1a1a6e">a dark link</a>.</p></div>',
        True, ["contrast (light): 3.12:1, needs 4.5:1 (#5050d0 on #b4b4e6) at a[href$=\"#b0\"]: "
               '<a href="#b0" style="color:#5050d0">a link</a>',
               "contrast (dark): 3.12:1, needs 4.5:1 (#5050d0 on #b4b4e6)"]),
    # A highlight that only dark mode makes unreadable.
    "contrast_dark.html": (
        '<style>@media (prefers-color-scheme: dark) { .hl { background: #333333; color: #5a5a5a; } }</style>'
        '<p>A <span class="hl">highlighted word</span> in a sentence.</p>',
        True, ["contrast (dark): "]),
}


def _reader_site(tmp_path):
    tmp_path.mkdir()
    (tmp_path / "fig.png").write_bytes(PNG)
    for name, (body, script, _) in DEFECTS.items():
        script = NAV_SCRIPT if script is True else script or ""
        (tmp_path / name).write_text(THEMED.format(body=body, script=script))
    return tmp_path


def _report_by_page(report: str) -> dict[str, str]:
    pages, current = {}, None
    for line in report.splitlines():
        if line.startswith(("OK   ", "FAIL ")):
            current = line[5:].split(":", 1)[0]
            pages[current] = line
        elif current and line.startswith("       - "):
            pages[current] += "\n" + line
    return pages


@pytest.mark.skipif(site_check.find_chromium() is None, reason="no Chromium on this machine")
def test_reader_checks_fail_on_each_planted_defect(tmp_path):
    site = _reader_site(tmp_path / "site")
    out = tmp_path / "shots"
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "site_check.py"), "--site", str(site),
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    pages = _report_by_page(run.stdout)
    assert run.returncode == 1, run.stdout + run.stderr
    assert set(pages) == set(DEFECTS), run.stdout
    assert pages["index.html"].startswith("OK   index.html"), pages["index.html"]
    assert "phone: menu+contents, 1 formulas scroll, 1 opened by their titles" in pages["index.html"]
    for name, (_, _, expected) in DEFECTS.items():
        if expected is None:
            continue
        report = pages[name]
        assert report.startswith(f"FAIL {name}"), report
        for message in expected:
            assert message in report, (message, report)
        # each page fails for its own defect only
        assert report.count("\n       - ") == len(expected), report
    assert f"{len(DEFECTS) - 1} failed" in run.stdout
    # The phone screenshots: first screen, the chapter list open, the page contents open,
    # the page after a tap on an entry of the contents.
    for shot in ("index.html.phone.png", "index.html.phone-menu.png", "index.html.phone-contents.png",
                 "index.html.phone-contents-tap.png"):
        assert (out / shot).stat().st_size > 1000, shot
    assert not (out / "nav_broken.html.phone-menu.png").exists()
