#!/usr/bin/env python3
"""Open every page of the built site in headless Chromium and check what a reader sees.

Usage: python tools/site_check.py [--site _build/html] [--out _build/site-check] [--full-page] [--pages GLOB ...] [--workers 2] [--times] [--allow-missing-browser]

The site is served on 127.0.0.1 (a free port) by a thread of this process, and each
page is opened with Playwright driving Debian's Chromium (``$CHROMIUM``, else the package
chromium-headless-shell, else chromium); Playwright's own browser download is never used. A page fails when:

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
* a figure (a content image shown at least 40 x 20 px) has no numbered caption: it must
  sit in a ``<figure>`` whose ``<figcaption>`` starts "Figure N.M";
* a figure is distorted: its shape on screen differs from the image's own by more than 2%
  (checked at 1280 px and at 390 px);
* clicking a figure (tapping it, at phone size) leaves the page, or does not open the
  figure in a view on the page: an open ``<dialog>`` (or ``role=dialog``) at least 90% of
  the screen wide, showing the same image at least as large and undistorted, which
  Escape closes;
* a code block or text output (``pre``, with every folded cell opened) is wider than the
  column at 1280 px: it scrolls sideways or reaches past the column; each one is named
  (its section, its first line, its longest line in characters);
* a formula is a tab stop at 1280 px: one of the page's tab stops (read from the DOM: what
  is focusable and shown, in document order) is in a formula (MathJax's menu puts each one
  in the tab order unless ``inTabOrder: false``);
  a formula whose box is too narrow for it and scrolls may be a tab stop (the keyboard's
  way to scroll it), and is counted apart;
* axe-core (tools/node, installed by ``make axe``; injected from the local file) finds a
  colour-contrast violation, in light mode or in dark mode (Chromium's
  ``prefers-color-scheme: dark``), with every folded block opened and the search words
  highlighted (``?highlight=the``; the search page is opened with a query); formulas are
  left out of the rule (their glyphs were most of its time) and must instead have the
  colour of the text around them;
* a Binder link opens anything but a portable notebook (``notebooks/NAME.ipynb``), e.g.
  a source chapter;

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

Screenshots, saved under ``--out``: the first screen at desktop width (the whole page with
``--full-page``, as ``make site-check`` takes them; ``make test`` does not), the same in
dark mode (``*.dark.png``), and five at phone size: the first screen in dark mode
(``*.phone-dark.png``), the first screen (``*.phone.png``), the chapter list open
(``*.phone-menu.png``), the page contents open (``*.phone-contents.png``) and the
screen after tapping an entry of the page contents (``*.phone-contents-tap.png``). One
line per page is printed. Exit status 1 if any page fails; with
``--allow-missing-browser``, a missing Chromium prints a plain SKIPPED line and exits 0
(``make test`` uses this).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
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

# axe-core, installed by `make axe` (tools/fetch_axe.py: the version and sha512 pinned in
# tools/node/package-lock.json, from the npm registry; `npm ci --prefix tools/node` is the
# same) and injected into each page from this file: no network.
AXE = Path(os.environ.get("AXE_CORE") or ROOT / "tools" / "node" / "node_modules" / "axe-core" / "axe.min.js")
ASPECT_TOLERANCE = 0.02   # a figure's shape on screen may differ from its own by 2% (and 1.5 px)
CAPTION = re.compile(r"Figure\s+\d+(\.\d+)*")
FULL_PAGE = False          # set by --full-page: screenshots of the whole page at desktop width
SEARCH_QUERY = "Theorem 3.1"  # what the contrast pass searches for on the search page

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


# The figures: the content images shown at least 40 x 20 px (not icons, not a collapsed
# block's), outside any figure view. Shared by the probes below.
FIGURES_JS = r"""const bookFigures = () => Array.from(document.querySelectorAll('main article img')).filter(i => {
  if (i.closest('dialog, [role="dialog"]')) return false;
  const r = i.getBoundingClientRect();
  return r.width >= 40 && r.height >= 20 && getComputedStyle(i).visibility !== 'hidden';
});
const bookFigureName = (i) => {
  const cap = i.closest('figure') && i.closest('figure').querySelector('figcaption');
  const number = cap && (cap.textContent.match(/^\s*(Figure\s+[\d.]*\d)/) || [])[1];
  if (number) return number;
  const alt = (i.getAttribute('alt') || '').replace(/\s+/g, ' ').trim();
  const file = (i.getAttribute('src') || '').split('/').pop();
  return `${file.length > 24 ? file.slice(0, 12) + '...' + file.slice(-4) : file}` + (alt ? ` ("${alt.slice(0, 50)}${alt.length > 50 ? '...' : ''}")` : '');
};"""

# Each figure: its name, its shape on screen against its own, its caption. Waits for the
# images to load (an image not loaded is reported by PAGE_PROBE).
FIGURE_PROBE = "async () => {" + FIGURES_JS + r"""
  const figs = bookFigures();
  await Promise.all(figs.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r, {once: true}); i.addEventListener('error', r, {once: true}); setTimeout(r, 5000); })));
  return figs.filter(i => i.naturalWidth > 0 && i.naturalHeight > 0).map(i => {
    const r = i.getBoundingClientRect();
    const cap = i.closest('figure') ? i.closest('figure').querySelector('figcaption') : null;
    return {name: bookFigureName(i), w: r.width, h: r.height, nw: i.naturalWidth, nh: i.naturalHeight,
            error: (r.width / r.height) / (i.naturalWidth / i.naturalHeight) - 1,
            caption: cap ? cap.textContent.replace(/\s+/g, ' ').trim().slice(0, 80) : null};
  });
}"""

# Scroll the i-th figure to the middle of the screen; where to tap it.
FIGURE_SPOT = "(i) => {" + FIGURES_JS + r"""
  const img = bookFigures()[i];
  if (!img) return null;
  img.scrollIntoView({block: 'center', inline: 'center'});
  const r = img.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, src: img.currentSrc || img.src,
          name: bookFigureName(img), path: location.pathname};
}"""

# An open figure view: a dialog (or role=dialog) on screen, nearly as wide as the screen,
# showing the image `src` at least `w` px wide. Returns what it found (or null).
FIGURE_VIEW = r"""([src, w]) => {
  const same = (img) => (img.currentSrc || img.src) === src;
  for (const box of document.querySelectorAll('dialog[open], [role="dialog"], [aria-modal="true"]')) {
    const br = box.getBoundingClientRect();
    const cs = getComputedStyle(box);
    if (br.width < 1 || br.height < 1 || cs.visibility === 'hidden' || cs.display === 'none') continue;
    const img = Array.from(box.querySelectorAll('img')).find(same);
    if (!img || !img.complete || !img.naturalWidth) continue;
    const r = img.getBoundingClientRect();
    return {boxWidth: br.width, screen: innerWidth, w: r.width, h: r.height,
            error: (r.width / r.height) / (img.naturalWidth / img.naturalHeight) - 1,
            wide: br.width >= 0.9 * innerWidth, large: r.width >= w - 1};
  }
  return null;
}"""

# Code and text outputs wider than the column (run with every folded block opened). The
# column is the article's content box; a pre is too wide when its text scrolls (or
# overflows) inside it, or when it reaches past the column.
CODE_PROBE = r"""() => {
  const article = document.querySelector('main article') || document.querySelector('main') || document.body;
  const acs = getComputedStyle(article), ar = article.getBoundingClientRect();
  const column = ar.right - parseFloat(acs.paddingRight) - parseFloat(acs.borderRightWidth);
  const wide = [];
  let shown = 0;
  for (const pre of article.querySelectorAll('pre')) {
    const r = pre.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || getComputedStyle(pre).visibility === 'hidden') continue;
    shown++;
    let over = pre.scrollWidth > pre.clientWidth + 1 || r.right > column + 1;
    for (let a = pre.parentElement; !over && a && a !== article; a = a.parentElement)
      over = a.scrollWidth > a.clientWidth + 1 && getComputedStyle(a).overflowX !== 'visible';
    if (!over) continue;
    const lines = pre.textContent.replace(/\n$/, '').split('\n');
    const longest = Math.max(...lines.map(l => l.replace(/\t/g, '    ').length));
    const kind = pre.closest('.cell_output, .output') ? (pre.closest('.tag_source-listing') ? 'listing' : 'output')
        : pre.closest('.cell_input') ? 'code cell' : 'code block';
    const ps = getComputedStyle(pre);
    const pad = parseFloat(ps.paddingLeft) + parseFloat(ps.paddingRight);
    const section = pre.closest('section');
    const heading = section && section.querySelector('h1, h2, h3, h4');
    const where = heading ? heading.textContent.replace(/#$/, '').replace(/\s+/g, ' ').trim().slice(0, 50) : '';
    const first = (lines.find(l => l.trim()) || '').trim().slice(0, 40);
    wide.push({kind, where, first, longest, lines: lines.filter(l => l.length > 76).length,
               width: Math.round(pre.scrollWidth - pad),
               box: Math.round(Math.min(pre.clientWidth, column - r.left - parseFloat(ps.borderLeftWidth)) - pad)});
  }
  return {shown, wide, column: Math.round(column - ar.left - parseFloat(acs.paddingLeft))};
}"""

# The keyboard walk: every element that takes the focus is logged (is it in a formula,
# does that formula's box scroll); ``cycle`` is set when the focus comes round to an
# element it was on before, or leaves the page.
# The page's tab stops in document order, read from the DOM as the browser's sequential focus
# navigation finds them (no positive tabindex is used on these pages, so document order is
# tab order): elements focusable by nature (links with an address, buttons, form fields,
# summaries) or by tabindex >= 0, not disabled, not hidden (display, visibility, a closed
# <details>, inert). Pressing Tab through a chapter's 800 stops took a minute; this takes
# milliseconds and names the same formulas.
TAB_STOPS = r"""() => {
  const natural = 'a[href], area[href], button, input, select, textarea, summary, iframe, [contenteditable=""], [contenteditable="true"]';
  const stops = [];
  for (const e of document.querySelectorAll('*')) {
    const t = e.getAttribute('tabindex');
    const focusable = t !== null ? parseInt(t, 10) >= 0 : e.matches(natural);
    if (!focusable || e.disabled || e.closest('[inert]')) continue;
    const closed = e.closest('details:not([open])');
    if (closed && !(e.tagName === 'SUMMARY' && e.parentElement === closed)) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden' || style.display === 'none' || !e.getClientRects().length) continue;
    const math = e.closest('mjx-container, .math');
    stops.push({math: !!math, scrolls: !!math && e.scrollWidth > e.clientWidth + 1,
                text: math ? (math.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 40) : ''});
  }
  return stops;
}"""

# Formulas whose colour is not their surrounding text's: axe-core's contrast rule leaves the
# math out (MathJax's thousands of glyph elements made it most of the check's time), so this
# checks that each formula inherits the colour of the text around it, which the rule checks.
MATH_COLOUR = r"""() => Array.from(document.querySelectorAll('mjx-container'))
  .filter(m => m.parentElement && getComputedStyle(m).color !== getComputedStyle(m.parentElement).color)
  .map(m => ({text: (m.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 40),
              color: getComputedStyle(m).color, around: getComputedStyle(m.parentElement).color}))"""

# axe-core's colour-contrast rule, run on one element of each kind of text on the page. Two
# elements whose own text has the same colour, size, weight and shadow, over the same stack of
# backgrounds, opacities and filters (every ancestor that paints or blends), have the same
# contrast; a long chapter has thousands of text elements but about a hundred kinds, and axe's
# time grows with the elements it judges. CONTRAST_SAMPLE marks one element of each kind
# (data-contrast-sample) and returns how many elements and kinds there are.
CONTRAST_SAMPLE = r"""() => {
  for (const e of document.querySelectorAll('[data-contrast-sample]')) e.removeAttribute('data-contrast-sample');
  const seen = new Set();
  let texts = 0;
  const paints = t => t.backgroundColor !== 'rgba(0, 0, 0, 0)' || t.backgroundImage !== 'none'
    || t.opacity !== '1' || t.filter !== 'none' || t.mixBlendMode !== 'normal';
  for (const e of document.body.querySelectorAll('*')) {
    if (e.closest('mjx-container')) continue;
    let text = false;
    for (const c of e.childNodes) if (c.nodeType === 3 && c.textContent.trim()) { text = true; break; }
    if (!text) continue;
    const s = getComputedStyle(e);
    if (s.display === 'none' || s.visibility === 'hidden') continue;
    texts++;
    let key = [e.tagName === 'A', s.color, s.fontSize, s.fontWeight, s.textShadow, s.backgroundColor,
               s.backgroundImage, s.opacity, s.filter, s.mixBlendMode].join('|');
    for (let a = e.parentElement; a; a = a.parentElement) {
      const t = getComputedStyle(a);
      if (paints(t)) key += ' < ' + [t.backgroundColor, t.backgroundImage, t.opacity, t.filter, t.mixBlendMode].join('|');
    }
    if (!seen.has(key)) { seen.add(key); e.setAttribute('data-contrast-sample', ''); }
  }
  return {texts, kinds: seen.size};
}"""
MATH_OUT = r"""() => { window.__siteCheckMath = [];
  for (const m of document.querySelectorAll('mjx-container')) {
    const inner = document.createDocumentFragment();
    while (m.firstChild) inner.appendChild(m.firstChild);
    window.__siteCheckMath.push([m, inner]);
  } }"""
MATH_BACK = r"""() => { for (const [m, inner] of window.__siteCheckMath || []) m.appendChild(inner);
  window.__siteCheckMath = []; }"""
AXE_RUN = r"""async () => {
  const r = await axe.run({include: [['[data-contrast-sample]']], exclude: [['mjx-container']]},
                          {runOnly: {type: 'rule', values: ['color-contrast']}, resultTypes: ['violations']});
  return r.violations.flatMap(v => v.nodes.map(n => {
    const d = ((n.any || [])[0] || {}).data || {};
    return {target: n.target.join(' '), ratio: d.contrastRatio, expected: d.expectedContrastRatio,
            fg: d.fgColor, bg: d.bgColor,
            html: (n.html || '').replace(/ data-contrast-sample=""/g, '').replace(/\s+/g, ' ').slice(0, 90)};
  }));
}"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on the console
        pass


# Time spent in each step, summed over pages and browsers (printed with --times).
PHASE_SECONDS: dict[str, float] = {}
PAGE_SECONDS: dict[str, float] = {}
_PHASE_LOCK = threading.Lock()


@contextlib.contextmanager
def phase(name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        with _PHASE_LOCK:
            PHASE_SECONDS[name] = PHASE_SECONDS.get(name, 0.0) + time.perf_counter() - start


def serve(site: Path):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def find_chromium() -> str | None:
    """$CHROMIUM, else Debian's headless shell (chromium-headless-shell: the same Blink without
    the windowing layer; the whole check takes a fifth less time), else Debian's Chromium."""
    candidate = (os.environ.get("CHROMIUM") or shutil.which("chromium-headless-shell")
                 or shutil.which("chromium") or "/usr/bin/chromium")
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


def on_screen(page, selector: str, expected: bool, timeout: int = 5000) -> bool:
    """Wait until links matching ``selector`` are (or are not) on screen and on top (on a
    loaded machine a drawer's transition once took over two seconds: the wait ends as soon
    as the state is reached, so only a failure waits the whole time)."""
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


def _few(problems: list[str], items: list[str], what: str, keep: int = 5) -> None:
    """Add the first ``keep`` items, then one line for the rest."""
    problems += items[:keep]
    if len(items) > keep:
        problems.append(f"... and {len(items) - keep} more {what}")


def figure_shapes(page, label: str) -> tuple[list[dict], list[str]]:
    """The figures on screen, and those whose shape differs from the image's own."""
    figures = page.evaluate(FIGURE_PROBE)
    bad = []
    for f in figures:
        should = f["h"] * f["nw"] / f["nh"]
        if abs(f["error"]) > ASPECT_TOLERANCE and abs(f["w"] - should) > 1.5:
            how = "stretched sideways" if f["error"] > 0 else "squashed sideways"
            bad.append(f"{label}: figure {f['name']} is distorted, {how} by {abs(f['error']):.0%} "
                       f"(shown {f['w']:.0f} x {f['h']:.0f} px; the image is {f['nw']} x {f['nh']})")
    return figures, bad


def uncaptioned(figures: list[dict]) -> list[str]:
    return [f"figure without a numbered caption (a figcaption starting \"Figure N.M\"): {f['name']}"
            for f in figures if not (f["caption"] and CAPTION.match(f["caption"]))]


def open_figures(page, url: str, label: str, touch: bool) -> tuple[list[str], int]:
    """Tap (click) each figure: it must open in a view on the page, full width, at least as
    large as on the page and undistorted, and Escape must close the view."""
    problems, opened = [], 0
    verb = "tapping" if touch else "clicking"
    count = page.evaluate("() => {" + FIGURES_JS + " return bookFigures().length; }")
    for i in range(count):
        try:
            spot = page.evaluate(FIGURE_SPOT, i)
        except PlaywrightError:
            spot = None
        if spot is None:
            continue
        navigated: list[str] = []

        def on_nav(frame):
            if frame == page.main_frame:
                navigated.append(frame.url)

        page.on("framenavigated", on_nav)
        view = None
        try:
            if touch:
                page.touchscreen.tap(spot["x"], spot["y"])
            else:
                page.mouse.click(spot["x"], spot["y"])
            view = page.wait_for_function(f"(a) => ({FIGURE_VIEW})(a)", arg=[spot["src"], spot["w"]],
                                          timeout=2500).json_value()
        except (PlaywrightTimeout, PlaywrightError):
            view = None
        finally:
            page.remove_listener("framenavigated", on_nav)
        where = urlparse(page.url).path
        if where != spot["path"] or any(urlparse(u).path != spot["path"] for u in navigated):
            went = (navigated[-1] if navigated else page.url).rsplit("/", 1)[-1]
            problems.append(f"{label}: {verb} figure {spot['name']} leaves the page (for {went})")
            open_page(page, url, wait_until="load")
            page.evaluate(EXPAND)
            continue
        if view is None:
            problems.append(f"{label}: {verb} figure {spot['name']} does not open it in a view on the page")
            continue
        if not view["wide"]:
            problems.append(f"{label}: the view of figure {spot['name']} is {view['boxWidth']:.0f} px wide "
                            f"on a {view['screen']} px screen (not the full width)")
        elif not view["large"]:
            problems.append(f"{label}: the view of figure {spot['name']} shows it {view['w']:.0f} px wide, "
                            f"smaller than on the page ({spot['w']:.0f} px)")
        elif abs(view["error"]) > ASPECT_TOLERANCE:
            problems.append(f"{label}: the view of figure {spot['name']} shows it distorted "
                            f"by {abs(view['error']):.0%}")
        else:
            opened += 1
        page.keyboard.press("Escape")
        try:
            page.wait_for_function(f"(a) => !({FIGURE_VIEW})(a)", arg=[spot["src"], 0], timeout=2000)
        except PlaywrightTimeout:
            problems.append(f"{label}: Escape does not close the view of figure {spot['name']}")
            open_page(page, url, wait_until="load")
            page.evaluate(EXPAND)
    return problems, opened


def wide_code(page) -> tuple[dict, list[str]]:
    """Code blocks and text outputs wider than the column (every folded block opened)."""
    probe = page.evaluate(CODE_PROBE)
    items = []
    for c in probe["wide"]:
        where = f" in \"{c['where']}\"" if c["where"] else ""
        items.append(f"{c['kind']} wider than the column at 1280 px{where}, starting \"{c['first']}\": "
                     f"its text needs {c['width']} px and has {c['box']} px; longest line "
                     f"{c['longest']} characters ({c['lines']} over 76)")
    return probe, items


def formulas_in_tab_order(page) -> dict:
    """The page's tab stops (TAB_STOPS: read from the DOM), and those in formulas."""
    log = page.evaluate(TAB_STOPS)
    return {"stops": len(log), "math": [f["text"] for f in log if f["math"] and not f["scrolls"]],
            "scrolling": sum(1 for f in log if f["math"] and f["scrolls"])}


def binder_links(links: list[str]) -> list[str]:
    """Binder links that open anything but a portable notebook (notebooks/NAME.ipynb)."""
    problems = []
    for href in dict.fromkeys(links):
        parsed = urlparse(href)
        if "mybinder" not in (parsed.hostname or "") and "/v2/gh/" not in parsed.path:
            continue
        query = dict(q.split("=", 1) for q in parsed.query.split("&") if "=" in q)
        target = unquote(query.get("urlpath") or query.get("labpath") or query.get("filepath") or "")
        target = re.sub(r"^(lab|notebooks|tree|doc)/((tree|workspaces/[^/]+/tree)/)?", "", target)
        if not target.startswith("notebooks/") or not target.endswith(".ipynb"):
            kind = "a source chapter" if target.startswith("chapters/") else "no portable notebook"
            problems.append(f"the Binder link opens {target or 'no notebook'}, {kind}, "
                            f"not notebooks/NAME.ipynb: {href}")
    return problems


def to_dark(page) -> str:
    """Ask for dark mode as the system would (prefers-color-scheme); the theme, in its
    "auto" mode, follows on the media query's change event. Returns the page's theme
    once it is dark, or what it stays at after two seconds ('' for an unthemed page)."""
    page.emulate_media(color_scheme="dark")
    try:
        page.wait_for_function("() => !document.documentElement.dataset.theme"
                               " || document.documentElement.dataset.theme === 'dark'", timeout=2000)
    except PlaywrightTimeout:
        pass
    return page.evaluate("() => document.documentElement.dataset.theme || ''")


def check_contrast(page, url: str, out: Path, stem: str) -> tuple[dict, list[str]]:
    """axe-core's colour-contrast rule on an open page (desktop size, every folded block
    open), in light mode and then in dark mode (Chromium's prefers-color-scheme, which the
    theme follows in its default "auto" mode), with search words highlighted as on a page
    reached from the search (the search page itself shows the results for SEARCH_QUERY).
    Saves the first screen in dark mode, and leaves the page dark: run it last."""
    problems: list[str] = []
    counts = {}
    if not AXE.is_file():
        return counts, [f"contrast: axe-core is not installed at {AXE} (run `make axe`)"]
    if urlparse(url).path.endswith("/search.html"):
        open_page(page, url + "?q=" + SEARCH_QUERY.replace(" ", "+"))
        try:
            page.wait_for_function("() => document.querySelector('#search-results li')", timeout=15000)
        except PlaywrightTimeout:
            problems.append(f"the search page shows no results for {SEARCH_QUERY!r}")
    else:  # what sphinx_highlight.js does on a page opened from a search result
        page.evaluate("() => { if (typeof SphinxHighlight === 'undefined') return;"
                      " localStorage.setItem('sphinx_highlight_terms', 'the');"
                      " SphinxHighlight.highlightSearchWords(); }")
        page.wait_for_timeout(100)
    with phase('desktop: contrast: load axe'):
        page.add_script_tag(path=str(AXE))
    # the steady page: no element keeps the focus or the pointer from an earlier step, and no
    # transition is halfway (a tooltip fading in is judged at full opacity, as a reader reads it)
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; animation: none !important; }")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.mouse.move(DESKTOP["width"] - 5, DESKTOP["height"] - 5)
    # Each formula's colour is checked against its text's (MATH_COLOUR); its glyph elements
    # (two thirds of a chapter's elements) are then taken out while axe runs, because axe
    # walks every element of the page before it judges any, and put back afterwards.
    for scheme in ("light", "dark"):
        if scheme == "dark":
            with phase('desktop: contrast: to dark'):
                themed = to_dark(page)
            if themed and themed != "dark":
                problems.append(f"dark mode: the page stays {themed} when the system asks for dark")
            page.evaluate("() => window.scrollTo(0, 0)")
            page.wait_for_timeout(200)
            with phase('desktop: contrast: dark screenshot'):
                page.screenshot(path=str(out / f"{stem}.dark.png"))  # formulas in place
        with phase('desktop: contrast: math colour'):
            math_colour = page.evaluate(MATH_COLOUR)
        for m in math_colour[:5]:
            problems.append(f"contrast ({scheme}): the formula {m['text']!r} is coloured {m['color']}, "
                            f"not as the text around it ({m['around']})")
        with phase('desktop: contrast: sample'):
            sample = page.evaluate(CONTRAST_SAMPLE)  # dark mode changes the kinds: sampled again
        counts[f"{scheme} kinds"] = f"{sample['kinds']} kinds of {sample['texts']} texts"
        with phase('desktop: contrast: math out'):
            page.evaluate(MATH_OUT)
        try:
            with phase('desktop: contrast: axe'):
                found = page.evaluate(AXE_RUN)
        finally:
            with phase('desktop: contrast: math back'):
                page.evaluate(MATH_BACK)
        counts[scheme] = len(found)
        items = [f"contrast ({scheme}): {f['ratio']}:1, needs {f['expected']} ({f['fg']} on {f['bg']}) "
                 f"at {f['target'][-60:]}: {f['html']}" for f in found]
        _few(problems, items, f"contrast failures ({scheme})")
    return counts, problems  # in dark mode: the page is closed next (switching back took a second)


def check_desktop(browser, url: str, site: Path, out: Path, shot: Path, anchors_cache: dict):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    problems: list[str] = []
    outside: list[str] = []
    watch(page, problems, outside)
    with phase('desktop: open'):
        open_page(page, url)
    landed = page.url  # after redirects
    with phase('desktop: page probe'):
        try:
            probe = page.evaluate(PAGE_PROBE)
        except PlaywrightError:  # a redirecting page (index.html) can be between two documents
            page.wait_for_load_state("load")
            page.wait_for_timeout(500)
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
    with phase('desktop: screenshot'):
        # the whole page (--full-page: a long chapter takes seconds) or its first screen
        page.screenshot(path=str(shot), full_page=FULL_PAGE, timeout=120000)
    # The desktop sidebar toggle hides the chapter list and brings it back.
    with phase('desktop: sidebar toggle'):
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
    # Everything a reader can open, opened: copy buttons (a hidden one has no name yet),
    # figures, code, tab stops.
    with phase('desktop: expand'):
        if page.evaluate(EXPAND):
            page.wait_for_timeout(300)
    if probe["copyButtons"]:
        with phase('desktop: copy buttons'):
            unnamed = copy_buttons_without_name(page)
        if unnamed:
            problems.append(f"{unnamed} of {probe['copyButtons']} copy buttons have no accessible name")
    with phase('desktop: figure shapes'):
        figures, distorted = figure_shapes(page, "desktop")
    problems += distorted
    _few(problems, uncaptioned(figures), "figures without a numbered caption")
    probe["figures"] = len(figures)
    with phase('desktop: code width'):
        probe["code"], wide = wide_code(page)
    problems += wide  # each one: the chapters' authors need the list
    with phase('desktop: tab order'):
        probe["tab"] = formulas_in_tab_order(page)
    if probe["tab"]["math"]:
        problems.append(f"{len(probe['tab']['math'])} of {probe['tab']['stops']} tab stops are formulas "
                        f"(the first: {probe['tab']['math'][0]!r}); MathJax's menu puts them in the tab "
                        f"order unless menuOptions.settings.inTabOrder is false")
    with phase('desktop: figures'):
        tapped, probe["opened"] = open_figures(page, url, "desktop", touch=False)
    problems += tapped
    problems += binder_links(probe["links"])
    with phase('desktop: contrast'):
        probe["contrast"], found = check_contrast(page, landed, out, shot.name[:-len(".png")])
    problems += found
    problems += [f"request to an outside host: {u}" for u in outside]
    probe["url"] = landed
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


def settle(page) -> None:
    """Wait until the page's scripts are idle (book.js fits formulas and marks scroll
    boxes once MathJax is done): a tap is a reader's, not one queued behind start-up."""
    try:
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                      "requestIdleCallback(() => r(), {timeout: 5000})))")
    except PlaywrightError:
        pass


def tap_collapsed_titles(page, url: str, problems: list[str]) -> int:
    """Tap the middle of each collapsed block's title: each must open, and the page stay."""
    failures, opened = [], 0
    count = page.locator(".admonition.toggle").count()
    settle(page)
    for i in range(count):
        if not page.evaluate(f"(i) => document.querySelectorAll('.admonition.toggle')[i].matches('{COLLAPSED}')", i):
            continue
        spot = page.evaluate(TITLE_MIDDLE, i)
        if spot is None:
            continue
        # Three taps at most: on a loaded machine a tap can land while the page still
        # moves (the math is refitted); a title that does not open fails all three.
        for attempt in range(3):
            page.touchscreen.tap(spot["x"], spot["y"])
            try:
                page.wait_for_function(
                    f"(i) => !document.querySelectorAll('.admonition.toggle')[i].matches('{COLLAPSED}')",
                    arg=i, timeout=2000)
                is_open = True
            except (PlaywrightTimeout, PlaywrightError):
                is_open = False
            where = page.evaluate("() => location.pathname + location.hash")
            if is_open or where != spot["url"]:
                break
            settle(page)
            spot = page.evaluate(TITLE_MIDDLE, i) or spot
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
    with phase('phone: open'):
        open_page(page, url, wait_until="load")  # the desktop pass has waited for the network
    page.screenshot(path=str(out / f"{stem}.phone.png"))
    themed = page.evaluate("() => !!document.querySelector('.bd-container')")
    nav = {"menu": False, "contents": None}
    menus = phase('phone: menus')
    menus.__enter__()
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
    menus.__exit__(None, None, None)
    # The titles of collapsed solutions and dropdowns open them.
    with phase('phone: collapsed titles'):
        nav["titles"] = tap_collapsed_titles(page, url, problems)
    # Math and page width, with everything a reader can open opened.
    if page.evaluate(EXPAND) or nav["titles"]:
        page.wait_for_timeout(300)  # let the page settle (book.js refits math when the text resizes)
    with phase('phone: probe'):
        probe = page.evaluate(PHONE_PROBE)
        if probe["clipped"] or probe["outside"]:
            # Judged again once the page is still: on a loaded machine book.js may still be
            # refitting a formula (its box moves while it is scaled); a real defect stays.
            settle(page)
            page.wait_for_timeout(1000)
            probe = page.evaluate(PHONE_PROBE)
    for kind in ("clipped", "outside", "noCue"):
        for item in probe[kind][:5]:
            problems.append(f"phone: formula {item}")
        if len(probe[kind]) > 5:
            problems.append(f"phone: ... and {len(probe[kind]) - 5} more like it")
    if probe["width"] > probe["W"]:
        problems.append(f"phone: the page is {probe['width']} px wide on a {probe['W']} px screen; "
                        f"widest: {', '.join(probe['wide'])}")
    # Figures: their shape, and a tap opens each on the page.
    figures, distorted = figure_shapes(page, "phone")
    problems += distorted
    with phase('phone: figures'):
        tapped, nav["figures"] = open_figures(page, url, "phone", touch=True)
    problems += tapped
    with phase('phone: dark screenshot'):
        to_dark(page)  # the first screen in dark mode
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(200)
        page.screenshot(path=str(out / f"{stem}.phone-dark.png"))
    problems += [f"phone: request to an outside host: {u}" for u in outside]
    context.close()
    return probe, nav, problems


def check_page(browser, base: str, site: Path, rel: str, out: Path, anchors_cache: dict) -> tuple[bool, str]:
    url = urljoin(base, rel)
    stem = rel.replace("/", "__")
    shot = out / (stem + ".png")
    start = time.perf_counter()
    with phase('desktop'):
        probe, problems = check_desktop(browser, url, site, out, shot, anchors_cache)
    with phase('phone'):
        phone, nav, phone_problems = check_phone(browser, probe["url"], out, stem)
    with _PHASE_LOCK:
        PAGE_SECONDS[rel] = time.perf_counter() - start
    problems = list(dict.fromkeys(problems + phone_problems))  # one failure can be reported by two events
    light, dark = probe["contrast"].get("light", "?"), probe["contrast"].get("dark", "?")
    ok = not problems
    menus = "menu" + ("+contents" if nav["contents"] else "") if nav["menu"] else "no menu"
    tab = probe["tab"]
    scrolling = f" (and {tab['scrolling']} wide ones that scroll)" if tab["scrolling"] else ""
    line = (f"{'OK  ' if ok else 'FAIL'} {rel}: {probe['maths'] - probe['unrendered']}/{probe['maths']} math rendered, "
            f"{probe['images']} images ({probe['contentImages']} in the text), {len(probe['links'])} links, "
            f"{probe['copyButtons']} copy buttons; {probe['figures']} figures, {probe['opened']} opened by a click; "
            f"{probe['code']['shown']} code blocks, {len(probe['code']['wide'])} wider than the "
            f"{probe['code']['column']} px column; {tab['stops']} tab stops, {len(tab['math'])} in formulas"
            f"{scrolling}; "
            f"contrast failures: {light} light, {dark} dark"
            f" ({probe['contrast'].get('light kinds', '?')}); "
            f"phone: {menus}, {phone['scrolling']} formulas scroll, "
            f"{nav['titles']} opened by their titles, {nav['figures']} figures by a tap; "
            f"screenshot {shot.relative_to(ROOT) if ROOT in shot.parents else shot}")
    if not ok:
        line += "".join(f"\n       - {p}" for p in problems[:80])
        if len(problems) > 80:
            line += f"\n       - ... and {len(problems) - 80} more"
    return ok, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "site-check")
    parser.add_argument("--allow-missing-browser", action="store_true")
    parser.add_argument("--workers", type=int, default=2, help="browsers checking pages at once (default 2)")
    parser.add_argument("--times", action="store_true", help="print the time spent in each step")
    parser.add_argument("--pages", nargs="+", metavar="GLOB",
                        help="check only the pages matching these patterns (e.g. 'chapters/01_*' index.html)")
    parser.add_argument("--full-page", action="store_true",
                        help="screenshot the whole page at desktop width (default: its first screen)")
    args = parser.parse_args()
    global FULL_PAGE
    FULL_PAGE = args.full_page
    chromium = find_chromium()
    if chromium is None:
        print("site-check: SKIPPED, no Chromium found (install Debian's package: apt-get install -y chromium)")
        return 0 if args.allow_missing_browser else 1
    if not AXE.is_file():
        print(f"site-check: axe-core is not installed at {AXE}; run `make axe` "
              "(tools/fetch_axe.py, once; it needs the npm registry)")
        return 1
    site = args.site.resolve()
    if not (site / "index.html").exists():
        print(f"site-check: no built site at {site}; run `make book` first")
        return 1
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not p.relative_to(site).as_posix().startswith("_"))
    if args.pages:
        pages = [p for p in pages if any(fnmatch.fnmatch(p, pattern) for pattern in args.pages)]
        if not pages:
            print(f"site-check: no page matches {' '.join(args.pages)}")
            return 1
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
    if args.times:
        for name, seconds in sorted(PHASE_SECONDS.items(), key=lambda kv: -kv[1]):
            print(f"site-check time: {name:30s} {seconds:7.1f} s")
        for name, seconds in sorted(PAGE_SECONDS.items(), key=lambda kv: -kv[1]):
            print(f"site-check time: {name:40s} {seconds:7.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
