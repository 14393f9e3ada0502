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
* an image does not load;
* a content image (in the page's main article) has no alt text, an empty one, or one
  that looks like a file name or path;
* a copy button has no accessible name (as Chromium's accessibility tree computes it);
* at desktop width (1280 px), the primary-sidebar toggle does not hide the chapter
  list and bring it back;

and, opened again at phone size (390 x 844, touch), when:

* tapping the primary-sidebar toggle does not show the chapter list (links that are
  on screen and on top), or tapping outside does not hide it again; the same for the
  secondary sidebar ("Contents") on pages that have one;
* tapping a link to the page itself in the open chapter list does not close it;
* tapping an entry of the open page contents (the last one shown, the farthest down)
  does not close them, or its heading is not then on screen and on top;
* tapping the middle of the title of a collapsed block (a solution, a dropdown) does
  not open it, or goes somewhere else (a link in the title);
* a formula is clipped: its rendering is wider than a box that hides overflow, or
  sticks out of the page; a formula may scroll sideways only inside its own math box,
  and then the box must show a cue (a fade, shadow or background) that it scrolls
  (collapsed solutions and toggles are opened first, as a reader would);
* the page is wider than the screen (it scrolls sideways).

A full-page screenshot of every page at desktop width is saved under ``--out``, with
four at phone size: the first screen (``*.phone.png``), the chapter list open
(``*.phone-menu.png``), the page contents open (``*.phone-contents.png``) and the
screen after tapping an entry of the page contents (``*.phone-contents-tap.png``). One
line per page is printed. Exit status 1 if any page fails; with
``--allow-missing-browser``, a missing Chromium prints a plain SKIPPED line and exits 0
(``make test`` uses this).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import queue
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # main() reports a missing browser before it needs Playwright
    PlaywrightError = PlaywrightTimeout = Exception

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

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

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
  // Alt text of the content images: present, not empty, not a file name or path.
  const fileLike = (alt) => /\.(png|jpe?g|gif|svg|webp|bmp|tiff?|pdf)$/i.test(alt) || alt.includes('_images/')
      || /[0-9a-f]{16,}/i.test(alt) || /^\S*\/\S*$/.test(alt);
  const content = Array.from(document.querySelectorAll('main article img'));
  const badAlt = content.filter(i => { const alt = (i.getAttribute('alt') || '').trim(); return !alt || fileLike(alt); })
      .map(i => [i.getAttribute('src'), i.getAttribute('alt')]);
  return {maths: maths.length, unrendered, dollars, tracebacks, images: images.length, broken, links,
          contentImages: content.length, badAlt, copyButtons: document.querySelectorAll('button.copybtn').length,
          themed: !!document.querySelector('.bd-container')};
}"""

# Is any element matching the selector on screen and on top (what a tap there would hit)?
ON_SCREEN = r"""(selector) => Array.from(document.querySelectorAll(selector)).some(e => {
  const r = e.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || getComputedStyle(e).visibility === 'hidden') return false;
  const x = Math.min(Math.max(r.left + Math.min(r.width / 2, 20), 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
  if (x < r.left || x > r.right || y < r.top || y > r.bottom) return false;
  const hit = document.elementFromPoint(x, y);
  return !!hit && (hit === e || e.contains(hit));
})"""
CHAPTER_LIST = "nav.bd-links a"   # the site navigation: the sidebar's links to the chapters
PAGE_CONTENTS = "nav.page-toc a"  # the secondary sidebar ("Contents")

# Is the heading of a link's target on screen and on top (not under a drawer or a header)?
HEADING_ON_SCREEN = r"""(hash) => {
  const target = document.getElementById(decodeURIComponent(hash.slice(1)));
  if (!target) return false;
  const h = target.matches('h1, h2, h3, h4, h5, h6') ? target : (target.querySelector('h1, h2, h3, h4, h5, h6') || target);
  const r = h.getBoundingClientRect();
  if (r.bottom <= 0 || r.top >= innerHeight || r.width < 1) return false;
  const x = Math.min(Math.max(r.left + Math.min(r.width / 2, 20), 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + Math.min(r.height / 2, 12), 0), innerHeight - 1);
  const hit = document.elementFromPoint(x, y);
  return !!hit && (hit === h || h.contains(hit));
}"""

# The collapsed blocks whose title opens them (sphinx-togglebutton): solutions, dropdowns.
COLLAPSED = ".admonition.toggle.toggle-hidden"
# Scroll the i-th collapsed block's title to the middle of the screen; return the point
# of the middle character of its text (the toggle button left out), the text, and
# the page's address.
TITLE_MIDDLE = r"""(i) => {
  const block = document.querySelectorAll('.admonition.toggle')[i];
  const title = block && block.querySelector(':scope > .admonition-title');
  if (!title) return null;
  title.scrollIntoView({block: 'center'});
  const texts = [];
  const walker = document.createTreeWalker(title, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode())
    if (!n.parentElement.closest('button') && n.data.trim()) texts.push(n);
  const text = texts.map(n => n.data).join('');
  let middle = Math.floor(text.replace(/\s+$/, '').length / 2);
  for (const n of texts) {
    if (middle < n.data.length) {
      const range = document.createRange();
      range.setStart(n, middle); range.setEnd(n, middle + 1);
      const r = range.getBoundingClientRect();
      return {x: r.left + r.width / 2, y: r.top + r.height / 2, text: text.replace(/\s+/g, ' ').trim(),
              url: location.pathname + location.hash};
    }
    middle -= n.data.length;
  }
  return null;
}"""

# Open what a reader can open: collapsed solutions and toggles, <details>.
EXPAND = r"""() => {
  let n = 0;
  document.querySelectorAll('button.toggle-button[aria-expanded="false"]').forEach(b => { b.click(); n++; });
  document.querySelectorAll('main details:not([open])').forEach(d => { d.open = true; n++; });
  return n;
}"""

# At phone width: formulas that are clipped, stick out of the page or scroll with no cue;
# the elements that make the page wider than the screen.
PHONE_PROBE = r"""() => {
  const W = document.documentElement.clientWidth;
  const tex = new Map();
  try { for (const item of MathJax.startup.document.math) tex.set(item.typesetRoot, item.math); } catch (e) {}
  const name = (c) => (tex.get(c) || c.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 60);
  const hasCue = (box) => { const cs = getComputedStyle(box);
    return [cs.maskImage, cs.webkitMaskImage, cs.boxShadow, cs.backgroundImage].some(v => v && v !== 'none'); };
  const clipped = [], noCue = [], outside = [];
  let scrolling = 0;
  for (const c of document.querySelectorAll('main mjx-container')) {
    const shown = c.querySelector(':scope > mjx-math') || c;
    const r = shown.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || getComputedStyle(c).visibility === 'hidden') continue;
    const own = c.closest('.math') || c;  // the formula's own math box
    let left = r.left, right = r.right, verdict = null, scrolls = false;
    for (const part of shown.children) {  // a tagged equation's table can be wider than its mjx-math
      const pr = part.getBoundingClientRect();
      if (pr.width > 0) { left = Math.min(left, pr.left); right = Math.max(right, pr.right); }
    }
    const wideness = Math.round(right - left);
    for (let a = shown.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX === 'visible') continue;
      const ar = a.getBoundingClientRect();
      const aLeft = ar.left + a.clientLeft, aRight = aLeft + a.clientWidth;
      if (left >= aLeft - 1 && right <= aRight + 1) continue;
      if (cs.overflowX === 'auto' || cs.overflowX === 'scroll') {
        // Reachable by scrolling. The formula's own box must show that it scrolls; a
        // table or an output that scrolls as a whole is not the formula's concern.
        if (own.contains(a)) {
          scrolls = true;
          if (!hasCue(a)) verdict = 'scrolls with no cue that it does';
        }
        left = Math.max(left, aLeft); right = Math.min(right, aRight);
        continue;
      }
      verdict = `clipped (${wideness} px wide in a box of ${Math.round(a.clientWidth)} px)`;
      break;
    }
    if (!verdict && (right > W + 1 || left < -1)) verdict = 'sticks out of the page';
    if (scrolls) scrolling++;
    if (verdict) (verdict.startsWith('clipped') ? clipped : verdict.startsWith('scrolls') ? noCue : outside)
        .push(`${name(c)} [${verdict}]`);
  }
  // Page wider than the screen: the innermost elements that reach past its right edge.
  const wide = [];
  const width = document.documentElement.scrollWidth;
  if (width > W) {
    const walk = (e) => { for (const k of e.children) {
      const cs = getComputedStyle(k);
      if (cs.display === 'none' || cs.position === 'fixed' || cs.visibility === 'hidden') continue;
      const r = k.getBoundingClientRect();
      if (r.right > W + 1 && r.width > 0) { const n = wide.length; if (cs.overflowX === 'visible') walk(k);
        if (wide.length === n) wide.push(`${k.tagName.toLowerCase()}${k.id ? '#' + k.id : ''}${k.classList.length ? '.' + Array.from(k.classList).join('.') : ''} (to ${Math.round(r.right)} px)`); }
      else if (cs.overflowX === 'visible') walk(k); } };
    walk(document.body);
  }
  return {clipped, noCue, outside, scrolling, width, W, wide: wide.slice(0, 3)};
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


def watch(page, problems: list[str], outside: list[str]) -> None:
    """Record what goes wrong while a page loads and runs: errors, failed or outside requests."""

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


def open_page(page, url: str, wait_until: str = "networkidle") -> None:
    page.goto(url, wait_until=wait_until)
    for attempt in range(3):
        try:
            if page.evaluate("() => typeof window.MathJax !== 'undefined'"):
                page.wait_for_function("() => window.MathJax.startup && window.MathJax.startup.promise",
                                       timeout=30000)
                page.evaluate("() => MathJax.startup.promise")
            return
        except PlaywrightError as exc:  # a redirecting page (index.html) navigated meanwhile
            if "context was destroyed" not in str(exc) or attempt == 2:
                raise
            page.wait_for_load_state(wait_until)


def on_screen(page, selector: str, expected: bool, timeout: int = 2000) -> bool:
    """Wait until links matching ``selector`` are (or are not) on screen and on top."""
    try:
        page.wait_for_function(f"(s) => ({ON_SCREEN})(s) === {str(expected).lower()}", arg=selector,
                               timeout=timeout)
        return True
    except PlaywrightTimeout:
        return False


def visible_toggle(page, cls: str):
    toggles = page.locator(f"button.{cls}:visible")
    return toggles.first if toggles.count() else None


def copy_buttons_without_name(page) -> int:
    """Copy buttons whose accessible name (Chromium's accessibility tree) is empty."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "button.copybtn"})["nodeIds"]
        unnamed = 0
        for node in nodes:
            ax = cdp.send("Accessibility.getPartialAXTree", {"nodeId": node, "fetchRelatives": False})["nodes"]
            exposed = [n for n in ax if not n.get("ignored")]  # a hidden button is named when shown
            if exposed and not any(str((n.get("name") or {}).get("value", "")).strip() for n in exposed):
                unnamed += 1
        return unnamed
    finally:
        cdp.detach()


def check_desktop(browser, url: str, site: Path, out: Path, shot: Path, anchors_cache: dict):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    problems: list[str] = []
    outside: list[str] = []
    watch(page, problems, outside)
    open_page(page, url)
    probe = page.evaluate(PAGE_PROBE)
    if probe["unrendered"]:
        problems.append(f"{probe['unrendered']} of {probe['maths']} math elements not rendered")
    if probe["dollars"]:
        problems.append(f"raw $...$ in the prose: {probe['dollars']}")
    if probe["tracebacks"]:
        problems.append(f"{probe['tracebacks']} traceback or error outputs")
    for src in probe["broken"]:
        problems.append(f"image did not load: {src}")
    for src, alt in probe["badAlt"]:
        problems.append(f"image without alt text saying what it shows: {src} (alt={alt!r})")
    final = unquote(urlparse(page.url).path).lstrip("/") or "index.html"  # after redirects
    problems += check_links(probe["links"], (site / final).resolve(), site, anchors_cache)
    page.screenshot(path=str(shot), full_page=True)
    # The desktop sidebar toggle hides the chapter list and brings it back.
    if probe["themed"] or page.locator(CHAPTER_LIST).count():
        toggle = visible_toggle(page, "primary-toggle")
        if not page.locator(CHAPTER_LIST).count():
            problems.append("no chapter list (site navigation) in the page")
        elif toggle is None:
            problems.append("desktop: no visible sidebar toggle")
        elif not on_screen(page, CHAPTER_LIST, True):
            problems.append("desktop: the chapter list is not shown")
        elif not press(toggle, touch=False) or not on_screen(page, CHAPTER_LIST, False):
            problems.append("desktop: the sidebar toggle does not hide the chapter list")
        elif not press(toggle, touch=False) or not on_screen(page, CHAPTER_LIST, True):
            problems.append("desktop: the sidebar toggle does not bring the chapter list back")
    # Copy buttons, with everything a reader can open opened (a hidden button has no name yet).
    if probe["copyButtons"]:
        page.evaluate(EXPAND)
        unnamed = copy_buttons_without_name(page)
        if unnamed:
            problems.append(f"{unnamed} of {probe['copyButtons']} copy buttons have no accessible name")
    problems += [f"request to an outside host: {u}" for u in outside]
    probe["url"] = page.url  # after redirects
    context.close()
    return probe, problems


def press(toggle, touch: bool) -> bool:
    """Tap (phone) or click (desktop) a toggle; False when nothing can be pressed there."""
    try:
        (toggle.tap if touch else toggle.click)(timeout=5000)
        return True
    except PlaywrightTimeout:
        return False


def tap_outside(page, dialog_side: str) -> None:
    """Tap the backdrop beside an open sidebar (on the side away from it)."""
    x = PHONE["width"] - 6 if dialog_side == "left" else 6
    page.touchscreen.tap(x, PHONE["height"] // 2)


def tap_contents_entry(page, url: str, problems: list[str], out: Path, stem: str) -> None:
    """Open the page contents, tap their last entry: they close, and its heading is on screen."""
    toggle = visible_toggle(page, "secondary-toggle")
    if toggle is None or not press(toggle, touch=True) or not on_screen(page, PAGE_CONTENTS, True):
        return  # reported by the open/close test before
    if page.evaluate("() => document.documentElement.scrollWidth > document.documentElement.clientWidth"):
        return  # a page wider than the screen leaves the drawer off screen; reported below
    entries = page.locator(f"{PAGE_CONTENTS}:visible")  # deeper levels may be folded away
    entry = entries.nth(entries.count() - 1)
    href = entry.get_attribute("href") or ""
    if not press(entry, touch=True):
        problems.append(f"phone: the page contents entry {href} cannot be tapped")
    elif not on_screen(page, PAGE_CONTENTS, False):
        problems.append("phone: tapping an entry of the page contents does not close them")
        open_page(page, url, wait_until="load")
    elif href.startswith("#") and len(href) > 1:
        try:
            page.wait_for_function(f"(h) => ({HEADING_ON_SCREEN})(h)", arg=href, timeout=3000)
        except PlaywrightTimeout:
            problems.append(f"phone: after tapping the page contents entry {href}, its heading is not on screen")
    page.screenshot(path=str(out / f"{stem}.phone-contents-tap.png"))


def tap_menu_self_link(page, url: str, problems: list[str]) -> None:
    """Open the chapter list, tap its link to this page (if any): the list closes."""
    self_link = page.locator(f"{CHAPTER_LIST}[href^='#']")
    toggle = visible_toggle(page, "primary-toggle")
    if not self_link.count() or toggle is None:
        return
    if not press(toggle, touch=True) or not on_screen(page, CHAPTER_LIST, True):
        return  # reported by the open/close test before
    if not press(self_link.first, touch=True) or not on_screen(page, CHAPTER_LIST, False):
        problems.append("phone: tapping the link to this page in the chapter list does not close it")
        open_page(page, url, wait_until="load")


def tap_collapsed_titles(page, url: str, problems: list[str]) -> int:
    """Tap the middle of each collapsed block's title: each must open, and the page stay."""
    failures, opened = [], 0
    count = page.locator(".admonition.toggle").count()
    for i in range(count):
        if not page.evaluate(f"(i) => document.querySelectorAll('.admonition.toggle')[i].matches('{COLLAPSED}')", i):
            continue
        spot = page.evaluate(TITLE_MIDDLE, i)
        if spot is None:
            continue
        page.touchscreen.tap(spot["x"], spot["y"])
        try:
            page.wait_for_function(f"(i) => !document.querySelectorAll('.admonition.toggle')[i].matches('{COLLAPSED}')",
                                   arg=i, timeout=1000)
            is_open = True
        except (PlaywrightTimeout, PlaywrightError):
            is_open = False
        where = page.evaluate("() => location.pathname + location.hash")
        if is_open and where == spot["url"]:
            opened += 1
            continue
        went = f"the tap went to {where.rsplit('/', 1)[-1]}" if where != spot["url"] else "nothing happened"
        failures.append(f"phone: tapping the title \"{spot['text'][:60]}\" does not open it ({went})")
        if urlparse(where).path != urlparse(spot["url"]).path:
            open_page(page, url, wait_until="load")
            break
    problems += failures[:3]
    if len(failures) > 3:
        problems.append(f"phone: ... and {len(failures) - 3} more titles like it")
    return opened


def check_phone(browser, url: str, out: Path, stem: str):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=1)
    page = context.new_page()
    problems: list[str] = []
    outside: list[str] = []
    watch(page, problems, outside)
    open_page(page, url, wait_until="load")  # the desktop pass has waited for the network
    page.screenshot(path=str(out / f"{stem}.phone.png"))
    themed = page.evaluate("() => !!document.querySelector('.bd-container')")
    nav = {"menu": False, "contents": None}
    if themed or page.locator(CHAPTER_LIST).count():
        # The chapter list: hidden, shown by the primary toggle, hidden again by a tap outside.
        toggle = visible_toggle(page, "primary-toggle")
        if toggle is None:
            problems.append("phone: no visible sidebar toggle")
        elif not on_screen(page, CHAPTER_LIST, False, timeout=3000):
            problems.append("phone: the chapter list is on screen before the toggle is tapped")
        elif not press(toggle, touch=True) or not on_screen(page, CHAPTER_LIST, True):
            problems.append("phone: tapping the sidebar toggle does not show the chapter list")
        else:
            nav["menu"] = True
            page.screenshot(path=str(out / f"{stem}.phone-menu.png"))
            tap_outside(page, "left")
            if not on_screen(page, CHAPTER_LIST, False):
                problems.append("phone: tapping outside the chapter list does not hide it")
                open_page(page, url, wait_until="load")  # start the next test from a closed menu
            tap_menu_self_link(page, url, problems)
        # The page contents, on pages that have them.
        if page.locator(PAGE_CONTENTS).count():
            nav["contents"] = False
            toggle = visible_toggle(page, "secondary-toggle")
            if toggle is None:
                problems.append("phone: no visible Contents toggle")
            elif not press(toggle, touch=True) or not on_screen(page, PAGE_CONTENTS, True):
                problems.append("phone: tapping the Contents toggle does not show the page contents")
            else:
                nav["contents"] = True
                page.screenshot(path=str(out / f"{stem}.phone-contents.png"))
                tap_outside(page, "right")
                if not on_screen(page, PAGE_CONTENTS, False):
                    problems.append("phone: tapping outside the page contents does not hide them")
                    open_page(page, url, wait_until="load")
                tap_contents_entry(page, url, problems, out, stem)
    # The titles of collapsed solutions and dropdowns open them.
    nav["titles"] = tap_collapsed_titles(page, url, problems)
    # Math and page width, with everything a reader can open opened.
    if page.evaluate(EXPAND) or nav["titles"]:
        page.wait_for_timeout(300)  # let the page settle (book.js refits math when the text resizes)
    probe = page.evaluate(PHONE_PROBE)
    for kind in ("clipped", "outside", "noCue"):
        for item in probe[kind][:5]:
            problems.append(f"phone: formula {item}")
        if len(probe[kind]) > 5:
            problems.append(f"phone: ... and {len(probe[kind]) - 5} more like it")
    if probe["width"] > probe["W"]:
        problems.append(f"phone: the page is {probe['width']} px wide on a {probe['W']} px screen; "
                        f"widest: {', '.join(probe['wide'])}")
    problems += [f"phone: request to an outside host: {u}" for u in outside]
    context.close()
    return probe, nav, problems


def check_page(browser, base: str, site: Path, rel: str, out: Path, anchors_cache: dict) -> tuple[bool, str]:
    url = urljoin(base, rel)
    stem = rel.replace("/", "__")
    shot = out / (stem + ".png")
    probe, problems = check_desktop(browser, url, site, out, shot, anchors_cache)
    phone, nav, phone_problems = check_phone(browser, probe["url"], out, stem)
    problems = list(dict.fromkeys(problems + phone_problems))  # one failure can be reported by two events
    ok = not problems
    menus = "menu" + ("+contents" if nav["contents"] else "") if nav["menu"] else "no menu"
    line = (f"{'OK  ' if ok else 'FAIL'} {rel}: {probe['maths'] - probe['unrendered']}/{probe['maths']} math rendered, "
            f"{probe['images']} images ({probe['contentImages']} in the text), {len(probe['links'])} links, "
            f"{probe['copyButtons']} copy buttons; phone: {menus}, {phone['scrolling']} formulas scroll, "
            f"{nav['titles']} opened by their titles; "
            f"screenshot {shot.relative_to(ROOT) if ROOT in shot.parents else shot}")
    if not ok:
        line += "".join(f"\n       - {p}" for p in problems[:20])
    return ok, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "site-check")
    parser.add_argument("--allow-missing-browser", action="store_true")
    parser.add_argument("--workers", type=int, default=2, help="browsers checking pages at once (default 2)")
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
    anchors_cache: dict = {}
    # Pages are checked by a few browsers at once (each in its own thread, with its own
    # Playwright); the report is printed in page order all the same.
    todo = queue.Queue()
    for rel in pages:
        todo.put(rel)
    done: dict[str, tuple[bool, str]] = {}
    lock = threading.Condition()
    errors: list[BaseException] = []

    def worker():
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                while True:
                    try:
                        rel = todo.get_nowait()
                    except queue.Empty:
                        break
                    try:
                        result = check_page(browser, base, site, rel, args.out, anchors_cache)
                    except Exception as exc:  # a page the check cannot finish fails, with the reason
                        result = (False, f"FAIL {rel}: the check could not finish: {str(exc).splitlines()[0][:200]}")
                    with lock:
                        done[rel] = result
                        lock.notify_all()
                browser.close()
        except BaseException as exc:  # reported by the main thread
            with lock:
                errors.append(exc)
                lock.notify_all()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(args.workers, len(pages)))]
    results = []
    try:
        for thread in threads:
            thread.start()
        for rel in pages:
            with lock:
                lock.wait_for(lambda: rel in done or errors)
                if errors:
                    raise errors[0]
                ok, line = done[rel]
            print(line, flush=True)
            results.append(ok)
        for thread in threads:
            thread.join()
    finally:
        server.shutdown()
    failed = results.count(False)
    print(f"site-check: {len(results) - failed} passed, {failed} failed ({len(results)} pages, "
          f"{time.perf_counter() - start:.0f} s, screenshots in {args.out})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
