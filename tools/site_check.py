#!/usr/bin/env python3
"""Open every page of the built site in headless Chromium and check what a reader sees.

Usage: python tools/site_check.py [--site _build/html] [--out _build/site-check] [--allow-missing-browser]

The site is served on 127.0.0.1 (a free port) by a thread of this process, and each
page is opened with Playwright driving Debian's Chromium (``/usr/bin/chromium``, or
``$CHROMIUM``); Playwright's own browser download is never used. A page fails when:

* math is left unrendered (a ``.math`` element without an ``mjx-container`` inside,
  or ``$...$`` left in the prose);
* a notebook output shows a traceback or an error;
* a request fails, answers with an HTTP error, or goes to any host but 127.0.0.1;
* JavaScript raises an error or logs one, except the known harmless ones below;
* an internal link points to a missing file or a missing anchor;
* an image does not load.

A full-page screenshot of every page is saved under ``--out``, and one line per page
is printed. Exit status 1 if any page fails; with ``--allow-missing-browser``, a
missing Chromium prints a plain SKIPPED line and exits 0 (``make test`` uses this).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

ROOT = Path(__file__).resolve().parent.parent

# JavaScript messages that are known and harmless, with the reason. Matched as substrings.
KNOWN_HARMLESS = {
    "Identifier 'THEBE_JS_URL' has already been declared":
        "Jupyter Book 1.0.4 includes sphinx-thebe's configuration script twice; the second "
        "`const` declaration throws. Thebe (live code on the page) is not enabled on this site.",
    "Got invalid theme mode":
        "pydata-sphinx-theme logs this on a first visit, when no light/dark preference is stored; "
        "it then falls back to 'auto'.",
}
# Requests the browser makes on its own, not the page: ignored.
BROWSER_REQUESTS = ("/favicon.ico",)

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

PAGE_PROBE = r"""() => {
  const maths = Array.from(document.querySelectorAll('.math'));
  const unrendered = maths.filter(m => !m.querySelector('mjx-container')).length;
  const prose = document.querySelector('main') || document.body;
  const clone = prose.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, .math, mjx-container').forEach(e => e.remove());
  const dollars = (clone.innerText.match(/\$[^\s$][^$\n]{0,80}\$/g) || []).slice(0, 3);
  const tracebacks = document.querySelectorAll('.output.traceback, .output.error, .output.stderr').length
      + ((prose.innerText.match(/Traceback \(most recent call last\)/g) || []).length);
  const images = Array.from(document.images);
  const broken = images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'));
  const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'));
  return {maths: maths.length, unrendered, dollars, tracebacks, images: images.length, broken, links};
}"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on the console
        pass


def serve(site: Path):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def find_chromium() -> str | None:
    candidate = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return candidate if candidate and Path(candidate).exists() else None


def check_links(links, page_path: Path, site: Path, anchors_cache: dict) -> list[str]:
    """Internal links whose file or anchor is missing."""
    problems = []
    for href in links:
        parsed = urlparse(href)
        if parsed.scheme in ("http", "https", "mailto", "javascript") or href.startswith("//"):
            continue
        target = page_path if not parsed.path else (page_path.parent / unquote(parsed.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.exists() or site.resolve() not in target.resolve().parents and target.resolve() != site.resolve():
            problems.append(f"broken link {href}")
            continue
        if parsed.fragment and target.suffix == ".html":
            if target not in anchors_cache:
                anchors_cache[target] = set(re.findall(r'id="([^"]+)"', target.read_text(errors="replace")))
            if unquote(parsed.fragment) not in anchors_cache[target]:
                problems.append(f"missing anchor {href}")
    return problems


def check_page(browser, base: str, site: Path, rel: str, out: Path, anchors_cache: dict) -> tuple[bool, str]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    outside: list[str] = []

    def route(r):
        host = urlparse(r.request.url).hostname
        if host not in ("127.0.0.1", None) and not r.request.url.startswith("data:"):
            outside.append(r.request.url)
            return r.abort()
        return r.continue_()

    def on_console(msg):
        if msg.type == "error" and not any(k in msg.text for k in KNOWN_HARMLESS):
            if "Failed to load resource" not in msg.text:  # reported with its URL by on_response
                problems.append(f"console error: {msg.text[:160]}")

    def on_pageerror(err):
        text = str(err)
        if not any(k in text for k in KNOWN_HARMLESS):
            problems.append(f"JavaScript error: {text[:160]}")

    def on_response(resp):
        if resp.status >= 400 and not urlparse(resp.url).path.endswith(BROWSER_REQUESTS):
            problems.append(f"HTTP {resp.status} for {resp.url}")

    def on_failed(req):
        if req.url not in outside:
            problems.append(f"request failed: {req.url} ({req.failure})")

    page.route("**/*", route)
    page.on("console", on_console)
    page.on("pageerror", on_pageerror)
    page.on("response", on_response)
    page.on("requestfailed", on_failed)
    page.goto(urljoin(base, rel), wait_until="networkidle")
    if page.evaluate("() => typeof window.MathJax !== 'undefined'"):
        page.wait_for_function("() => window.MathJax.startup && window.MathJax.startup.promise", timeout=30000)
        page.evaluate("() => MathJax.startup.promise")
    probe = page.evaluate(PAGE_PROBE)
    if probe["unrendered"]:
        problems.append(f"{probe['unrendered']} of {probe['maths']} math elements not rendered")
    if probe["dollars"]:
        problems.append(f"raw $...$ in the prose: {probe['dollars']}")
    if probe["tracebacks"]:
        problems.append(f"{probe['tracebacks']} traceback or error outputs")
    for src in probe["broken"]:
        problems.append(f"image did not load: {src}")
    final = unquote(urlparse(page.url).path).lstrip("/") or "index.html"  # after redirects
    problems += check_links(probe["links"], (site / final).resolve(), site, anchors_cache)
    problems += [f"request to an outside host: {url}" for url in outside]
    shot = out / (rel.replace("/", "__") + ".png")
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    problems = list(dict.fromkeys(problems))  # the same failure can be reported by two events
    ok = not problems
    line = (f"{'OK  ' if ok else 'FAIL'} {rel}: {probe['maths'] - probe['unrendered']}/{probe['maths']} math rendered, "
            f"{probe['images']} images, {len(probe['links'])} links, screenshot {shot.relative_to(ROOT) if ROOT in shot.parents else shot}")
    if not ok:
        line += "".join(f"\n       - {p}" for p in problems[:20])
    return ok, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "site-check")
    parser.add_argument("--allow-missing-browser", action="store_true")
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("site-check: SKIPPED, no Chromium found (install Debian's package: apt-get install -y chromium)")
        return 0 if args.allow_missing_browser else 1
    site = args.site.resolve()
    if not (site / "index.html").exists():
        print(f"site-check: no built site at {site}; run `make book` first")
        return 1
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not p.relative_to(site).as_posix().startswith("_"))
    server, base = serve(site)
    start = time.perf_counter()
    results = []
    anchors_cache: dict = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            for rel in pages:
                ok, line = check_page(browser, base, site, rel, args.out, anchors_cache)
                print(line, flush=True)
                results.append(ok)
            browser.close()
    finally:
        server.shutdown()
    failed = results.count(False)
    print(f"site-check: {len(results) - failed} passed, {failed} failed ({len(results)} pages, "
          f"{time.perf_counter() - start:.0f} s, screenshots in {args.out})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
