// The book's own scripts (issue 12: phone navigation, figures, copy buttons,
// solutions, print). No outside dependency; each part is small and independent.
// The sidebar toggles need no script: _config.yml leaves out the theme's top
// navbar, whose hidden duplicate toggles were the ones the theme's scripts bound
// (pydata-sphinx-theme issue 2451). tools/site_check.py checks every part in Chromium.
(() => {
  "use strict";

  const onReady = (fn) => {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  };
  const debounce = (fn, ms) => {
    let timer = null;
    return () => {
      clearTimeout(timer);
      timer = setTimeout(fn, ms);
    };
  };

  // -------------------------------------------------------------------------
  // Copy buttons (sphinx-copybutton adds them after the page loads and has no
  // option for a label): each gets the accessible name "Copy code".
  const labelCopyButtons = (root) => {
    root.querySelectorAll("button.copybtn:not([aria-label])").forEach((button) => {
      button.setAttribute("aria-label", "Copy code");
    });
  };

  // -------------------------------------------------------------------------
  // Drawers. On a narrow screen the theme shows the chapter list and the page's
  // "Contents" in a modal <dialog> (a drawer over three quarters of the screen)
  // and closes it only on a tap beside it or Escape: a tap on a link of the
  // page itself scrolled the page behind the drawer, which stayed open. A tap on
  // any link in a drawer now closes it. A link to another page goes on at once;
  // a link into this page is followed once the drawer has closed (the theme
  // then hands the focus back to the toggle, and the page must not move after
  // the jump).
  const closeDrawersOnLinkTap = () => {
    ["pst-primary-sidebar-modal", "pst-secondary-sidebar-modal"].forEach((id) => {
      const drawer = document.getElementById(id);
      if (!drawer) return;
      drawer.addEventListener(
        "click",
        (event) => {
          const link = event.target.closest && event.target.closest("a[href]");
          if (!link || !drawer.open || event.defaultPrevented) return;
          if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
          const samePage =
            link.origin === location.origin && link.pathname === location.pathname && link.search === location.search;
          if (samePage && !link.target) {
            event.preventDefault();
            drawer.addEventListener("close", () => setTimeout(() => link.click(), 0), { once: true });
          }
          drawer.close();
        },
        true
      );
    });
  };

  // -------------------------------------------------------------------------
  // Solutions. sphinx-togglebutton opens a collapsed solution on a click on its
  // title, but sphinx-exercise makes most of that title ("Exercise 3.1 (Build the
  // heads)") a link back to the exercise, so a tap there jumped away instead.
  // A tap anywhere on the title of a collapsed block now works its toggle, as the
  // arrow and "Click to show" do. The link back is dropped when the exercise is
  // the block right above the solution (as everywhere in this book); otherwise it
  // is kept on the words "Exercise 3.1" only, and a tap on those still goes there.
  const TITLE = ".admonition.toggle > .admonition-title";
  const tameSolutionTitles = () => {
    document.querySelectorAll(".admonition.solution > .admonition-title a[href^='#']").forEach((link) => {
      const solution = link.closest(".admonition.solution");
      const exercise = document.getElementById(decodeURIComponent(link.hash.slice(1)));
      if (exercise && solution.previousElementSibling === exercise) {
        const head = link.parentElement;
        link.replaceWith(...link.childNodes);
        head.normalize();
        return;
      }
      link.classList.add("book-title-link");
      const text = link.childNodes.length === 1 && link.firstChild.nodeType === 3 ? link.firstChild.data : null;
      const words = text && text.match(/^(\s*\S+\s+[\d.]*\d)(\s.*)$/s); // "Exercise 3.1", " (Build the heads)"
      if (words) {
        link.firstChild.data = words[1];
        link.after(document.createTextNode(words[2]));
      }
    });
  };
  document.addEventListener(
    "click",
    (event) => {
      const head = event.target.closest && event.target.closest(TITLE);
      if (!head || event.target === head) return; // the title itself: sphinx-togglebutton's own handler
      const button = head.querySelector(":scope > button.toggle-button");
      if (!button || button.contains(event.target)) return;
      if (event.target.closest("a.book-title-link")) {
        event.stopPropagation(); // the words kept as a link go there, and toggle nothing
        return;
      }
      event.preventDefault();
      event.stopPropagation();
      button.click(); // bubbles to the title, whose handler toggles
    },
    true
  );

  // -------------------------------------------------------------------------
  // Figures: on a phone a figure shrinks to the screen and its ticks and legends
  // cannot be read. Tapping (clicking) a figure shows it in a view on the page, a
  // <dialog> over the whole screen (Escape, the close button or a tap beside the
  // figure closes it): as wide as the screen allows when the whole figure fits, and
  // never smaller than the size it was drawn for (its CSS width, myst-nb's inline
  // "width: 820px" of a retina PNG), so that on a phone its text has its own size and
  // the view pans. Sphinx already wraps each image in a link to its own file
  // (a.image-reference); that link is the one used, so a tap no longer leaves the
  // page for the bare PNG (a new tab or a long press still opens the file). An image
  // linked to anything else keeps its link. A figure that the view shows larger says
  // so: a zoom-in cursor and a "Tap to enlarge" ("Click to enlarge") label under it;
  // the link's accessible name says that it opens the figure at full size.
  const TOUCH = window.matchMedia ? window.matchMedia("(hover: none)") : { matches: false };
  const HELP_HEIGHT = 48; // px: the help line at the bottom of the view (3rem)
  let viewer = null;

  // The width (CSS px) of a figure in the view.
  const viewWidth = (img) => {
    if (!img.naturalWidth || !img.naturalHeight) return 0;
    const drawn = parseFloat(img.style.width) || parseFloat(img.getAttribute("width")) || img.naturalWidth;
    const aspect = img.naturalWidth / img.naturalHeight;
    const screen = document.documentElement.clientWidth;
    const fit = Math.min(screen - 16, (window.innerHeight - HELP_HEIGHT - 16) * aspect);
    return Math.round(Math.max(Math.min(fit, Math.max(img.naturalWidth, drawn)), drawn));
  };

  const showFigure = (img) => {
    if (!viewer) {
      viewer = document.createElement("dialog");
      viewer.className = "book-figure-view";
      viewer.setAttribute("aria-label", "Figure at full size");
      viewer.setAttribute("aria-describedby", "book-figure-help");
      viewer.innerHTML =
        '<button type="button" class="book-figure-close" aria-label="Close">&times;</button>' +
        '<div class="book-figure-pan"><img alt=""></div>' +
        '<p class="book-figure-help" id="book-figure-help"></p>';
      document.body.appendChild(viewer);
      viewer.querySelector(".book-figure-close").addEventListener("click", () => viewer.close());
      viewer.addEventListener("click", (event) => {
        if (event.target === viewer || event.target.classList.contains("book-figure-pan")) viewer.close();
      });
    }
    const big = viewer.querySelector("img");
    const pan = viewer.querySelector(".book-figure-pan");
    const help = viewer.querySelector(".book-figure-help");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    const width = viewWidth(img);
    big.style.width = width ? `${width}px` : "";
    big.style.height = "auto";
    viewer.showModal();
    pan.scrollTo(0, 0);
    const pans = pan.scrollWidth > pan.clientWidth + 1 || pan.scrollHeight > pan.clientHeight + 1;
    const touch = TOUCH.matches;
    help.textContent =
      (pans ? (touch ? "Drag to move around the figure. " : "Scroll to move around the figure. ") : "") +
      (touch ? "Tap × or beside the figure to close." : "Press Esc, or click × or beside the figure, to close.");
  };

  const markShrunk = (link) => {
    const img = link.querySelector("img");
    const shown = img.getBoundingClientRect().width;
    link.classList.toggle("book-image-shrunk", shown > 0 && viewWidth(img) > shown * 1.05);
  };
  const markShrunkImages = () => document.querySelectorAll("a.book-image-link").forEach(markShrunk);

  const sameFile = (a, b) => {
    try {
      return new URL(a, location.href).pathname === new URL(b, location.href).pathname;
    } catch (e) {
      return false;
    }
  };

  const linkImages = () => {
    document.querySelectorAll("article.bd-article img").forEach((img) => {
      const src = img.getAttribute("src");
      if (!src || src.startsWith("data:")) return;
      let link = img.closest("a");
      if (link && !(link.classList.contains("image-reference") || sameFile(link.href, img.src))) return;
      if (!link) {
        link = document.createElement("a");
        link.href = src;
        img.parentNode.insertBefore(link, img);
        link.appendChild(img);
      }
      if (link.classList.contains("book-image-link")) return;
      link.classList.add("book-image-link");
      link.setAttribute("aria-haspopup", "dialog");
      img.insertAdjacentHTML(
        "afterend",
        '<span class="book-enlarge-hint" aria-hidden="true"><svg viewBox="0 0 16 16" width="14" height="14">' +
          '<circle cx="6.5" cy="6.5" r="4.5" fill="none" stroke="currentColor" stroke-width="1.6"/>' +
          '<path d="M10 10l4.5 4.5M4.5 6.5h4M6.5 4.5v4" stroke="currentColor" stroke-width="1.6"/></svg></span>' +
          '<span class="book-visually-hidden"> (opens the figure at full size)</span>'
      );
      link.addEventListener("click", (event) => {
        if (event.ctrlKey || event.metaKey || event.shiftKey || typeof HTMLDialogElement === "undefined") return;
        event.preventDefault();
        showFigure(img);
      });
      if (img.complete) markShrunk(link);
      else img.addEventListener("load", () => markShrunk(link), { once: true });
    });
  };

  // -------------------------------------------------------------------------
  // Math that does not fit. MathJax 3 cannot break a formula across lines, so an
  // inline formula wider than its line is shrunk a little (to no less than
  // MIN_SCALE), or else scrolls inside its own box (class math-wide); display
  // equations scroll in the theme's own box. Every scroll box that has more to
  // show is marked with data-more (left/right/both) for the cue in book.css.
  const MIN_SCALE = 0.85;

  const lineWidth = (el) => {
    // The content width of the nearest ancestor that is not inline.
    let block = el.parentElement;
    while (block && getComputedStyle(block).display.startsWith("inline")) block = block.parentElement;
    if (!block) return Infinity;
    const cs = getComputedStyle(block);
    return block.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  };

  // Whether a box has more to show, on which sides: measured for many boxes first and
  // then marked, so that the page is laid out once, not once per box (a chapter has
  // about a hundred code blocks and a thousand formulas; one layout per box made
  // opening a solution take seconds on a phone).
  // A marked box has a gutter on each side (book.css: wider transparent borders), which
  // narrows it: whether it has more to show is measured as if it had none, or a box
  // marked once (say before the fonts loaded) would stay marked, its gutters making
  // the overflow they announce.
  const measureMore = (box) => {
    const cs = getComputedStyle(box);
    const borders = parseFloat(cs.borderLeftWidth) + parseFloat(cs.borderRightWidth) || 0;
    const marked = box.hasAttribute("data-more");
    const own = marked ? parseFloat(box.dataset.bookBorders) || 0 : borders;
    const visible = box.clientWidth + (marked ? borders - own : 0);
    const wide = box.scrollWidth; // book.css keeps MathJax's hidden assistive copy out of it
    if (wide <= visible + 1) return { more: null, own };
    const left = box.scrollLeft > 1;
    const right = box.scrollLeft + box.clientWidth < wide - 1;
    return { more: left && right ? "both" : left ? "left" : "right", own };
  };
  const applyMore = (box, { more, own }) => {
    if (!box.hasAttribute("data-more")) box.dataset.bookBorders = own; // its borders without gutters
    if (!more) {
      if (box.hasAttribute("data-more")) box.removeAttribute("data-more");
      if (box.dataset.bookTabindex !== undefined) {
        // it fits again: back to its own tab order (a formula is not a tab stop)
        if (box.dataset.bookTabindex) box.setAttribute("tabindex", box.dataset.bookTabindex);
        else box.removeAttribute("tabindex");
        delete box.dataset.bookTabindex;
      }
      return;
    }
    if (box.getAttribute("tabindex") !== "0") {
      // scrollable by keyboard too: a box with more to show is a tab stop (MathJax
      // gives each formula tabindex=-1, which would keep it out)
      box.dataset.bookTabindex = box.getAttribute("tabindex") || "";
      box.setAttribute("tabindex", "0");
    }
    if (box.getAttribute("data-more") !== more) box.setAttribute("data-more", more);
  };
  const markMore = (box) => applyMore(box, measureMore(box));
  const markAllMore = (boxes) => {
    boxes.forEach(watchScroll);
    const states = boxes.map(measureMore);
    boxes.forEach((box, i) => applyMore(box, states[i]));
  };
  const scrollBoxes = new Set();
  const watchScroll = (box) => {
    if (scrollBoxes.has(box)) return;
    scrollBoxes.add(box);
    box.addEventListener("scroll", () => markMore(box), { passive: true });
  };

  // A line may break between a formula and the punctuation after it (or the
  // bracket before it), leaving "." alone at the start of the next line; glue them.
  const OPENING = /[(\[“‘]+$/;
  const CLOSING = /^[.,;:!?)\]”’]+/;
  const gluePunctuation = () => {
    document.querySelectorAll("span.math").forEach((span) => {
      if (span.parentElement.classList.contains("math-nobreak")) return;
      const before = span.previousSibling;
      const after = span.nextSibling;
      const open = before && before.nodeType === 3 ? before.data.match(OPENING) : null;
      const close = after && after.nodeType === 3 ? after.data.match(CLOSING) : null;
      if (!open && !close) return;
      const glued = document.createElement("span");
      glued.className = "math-nobreak";
      span.parentNode.insertBefore(glued, span);
      if (open) {
        before.data = before.data.slice(0, -open[0].length);
        glued.appendChild(document.createTextNode(open[0]));
      }
      glued.appendChild(span);
      if (close) {
        after.data = after.data.slice(close[0].length);
        glued.appendChild(document.createTextNode(close[0]));
      }
    });
  };

  const fitMath = () => {
    // Reset, then measure everything, then change: one layout, not one per formula.
    const spans = Array.from(document.querySelectorAll("span.math")).filter((span) => {
      const container = span.querySelector(":scope > mjx-container");
      if (!container || !container.querySelector("mjx-math")) return false;
      span.classList.remove("math-wide");
      span.removeAttribute("data-more");
      span.parentElement.classList.remove("math-nobreak-off");
      // MathJax scales each formula to the text by its own font-size (e.g. 127.3%).
      if (container.dataset.fontSize === undefined) container.dataset.fontSize = container.style.fontSize;
      container.style.fontSize = container.dataset.fontSize;
      return true;
    });
    const sizes = spans.map((span) => {
      const glued = span.parentElement.classList.contains("math-nobreak") ? span.parentElement : null;
      const math = span.querySelector(":scope > mjx-container mjx-math").getBoundingClientRect().width;
      const extra = glued ? glued.getBoundingClientRect().width - span.getBoundingClientRect().width : 0;
      return [math, extra, lineWidth(glued || span)];
    });
    spans.forEach((span, i) => {
      const [width, extra, available] = sizes[i];
      if (width === 0 || width + extra <= available + 1) return;
      const scale = (available - extra) / width;
      if (scale >= MIN_SCALE) {
        const container = span.querySelector(":scope > mjx-container");
        const own = parseFloat(container.dataset.fontSize) || 100;
        container.style.fontSize = `${Math.floor(own * scale * 10) / 10}%`;
      } else {
        span.classList.add("math-wide"); // scrolls in a box as wide as the line
        span.parentElement.classList.add("math-nobreak-off");
      }
    });
    markAllMore(Array.from(document.querySelectorAll("div.math mjx-container, span.math-wide")));
  };

  // Print has no scrolling: a formula wider than the printed column would be cut.
  // Each wide formula records its width in its own ems (--math-em) and its own
  // size (--math-font); in print, book.css sizes it to
  // min(its size, column width / its width in ems), the column being its nearest
  // block, made a CSS size container. No layout changes on screen.
  const PRINT_CANDIDATE = 300; // px: narrower formulas fit any printed column
  const markPrintWidths = () => {
    const marks = [];
    document.querySelectorAll("main mjx-container").forEach((container) => {
      const math = container.querySelector(":scope > mjx-math");
      if (!math) return;
      const display = container.getAttribute("display") === "true";
      const own = display ? container.closest("div.math") : container.closest("span.math");
      if (!own) return;
      let width = display ? container.scrollWidth : math.getBoundingClientRect().width;
      if (display) {
        const number = own.querySelector(":scope > .eqno");
        if (number) width += number.getBoundingClientRect().width + 8;
      } else if (own.parentElement.classList.contains("math-nobreak")) {
        width += own.parentElement.getBoundingClientRect().width - own.getBoundingClientRect().width;
      }
      if (width < PRINT_CANDIDATE) return;
      let box = own;
      if (!display) {
        box = own.parentElement;
        while (box && getComputedStyle(box).display.startsWith("inline")) box = box.parentElement;
        if (!box || box.closest("td, th")) return; // a table cell must keep its own width
      }
      marks.push([container, box, width / parseFloat(getComputedStyle(container).fontSize)]);
    });
    marks.forEach(([container, box, ems]) => {
      container.style.setProperty("--math-em", ems.toFixed(3));
      container.style.setProperty("--math-font", container.dataset.fontSize || container.style.fontSize || "100%");
      container.classList.add("book-print-fit");
      box.classList.add("book-math-box");
    });
  };

  // -------------------------------------------------------------------------
  // Code, outputs and tables wider than the column scroll sideways in their own box,
  // and the box shows that it does (data-more, as for wide formulas: an arrow in a
  // gutter on each side that has more, and a shadow; book.css). On a phone, a table
  // of at most four columns that is wider than the screen (the notation table, the
  // introduction's chapter map) is shown as a list of its rows instead (book-reflow):
  // each cell under its column's name, read by screen readers as the table it is
  // (ARIA table roles, since display: block drops them).
  const SCROLLERS = "article.bd-article pre, article.bd-article .pst-scrollable-table-container";
  const markScrollers = () => markAllMore(Array.from(document.querySelectorAll(SCROLLERS)));

  const REFLOW_MAX_COLUMNS = 4;
  const NARROW = window.matchMedia ? window.matchMedia("(max-width: 575.98px)") : { matches: false };
  // Each body cell gets a copy of its column's heading (book-cell-label), shown only
  // when the table is read as a list: a heading may hold a formula, which the copy
  // keeps (MathJax typesets it), where a CSS label from the text would show raw TeX.
  const labelTable = (table) => {
    const head = table.tHead && table.tHead.rows[0];
    if (!head) return false;
    const names = Array.from(head.cells);
    if (names.length < 2 || names.length > REFLOW_MAX_COLUMNS) return false;
    Array.from(table.tBodies).forEach((body) =>
      Array.from(body.rows).forEach((row) =>
        Array.from(row.cells).forEach((cell, i) => {
          if (!names[i] || !names[i].textContent.trim() || cell.querySelector(":scope > .book-cell-label")) return;
          const label = document.createElement("span");
          label.className = "book-cell-label";
          names[i].childNodes.forEach((node) => label.appendChild(node.cloneNode(true)));
          label.querySelectorAll("[id]").forEach((node) => node.removeAttribute("id"));
          cell.prepend(label);
        })
      )
    );
    return true;
  };
  // Labels copied before MathJax typeset their heading hold the formula's TeX: typeset them.
  const typesetLabels = () => {
    const mj = window.MathJax;
    const raw = Array.from(document.querySelectorAll(".book-cell-label")).filter(
      (label) => label.querySelector(".math") && !label.querySelector("mjx-container")
    );
    if (raw.length && mj && mj.typesetPromise) mj.typesetPromise(raw).catch(() => {});
  };
  const TABLE_ROLES = [
    ["table", "table"], ["thead, tbody, tfoot", "rowgroup"], ["tr", "row"], ["th", "columnheader"], ["td", "cell"],
  ];
  const setTableRoles = (table, on) =>
    TABLE_ROLES.forEach(([selector, role]) => {
      const parts = selector === "table" ? [table] : table.querySelectorAll(selector);
      parts.forEach((part) => (on ? part.setAttribute("role", role) : part.removeAttribute("role")));
    });
  let reflowWidth = null;
  const reflowTables = () => {
    const width = document.documentElement.clientWidth;
    if (width === reflowWidth) return; // only a new screen width changes the answer
    reflowWidth = width;
    document.querySelectorAll("article.bd-article table").forEach((table) => {
      if (table.dataset.bookReflow === undefined) table.dataset.bookReflow = labelTable(table) ? "yes" : "no";
      if (table.dataset.bookReflow !== "yes") return;
      table.classList.remove("book-reflow");
      setTableRoles(table, false);
      const box = table.parentElement;
      if (NARROW.matches && table.scrollWidth > box.clientWidth + 1) {
        table.classList.add("book-reflow");
        setTableRoles(table, true);
      }
    });
  };

  const whenMathIsTypeset = (fn) => {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(fn);
    else if (document.querySelector(".math")) setTimeout(() => whenMathIsTypeset(fn), 100);
  };

  // -------------------------------------------------------------------------
  // Print: light colours even from dark mode; the chapter keeps its number in
  // the printed title (the theme prints the page title without it).
  let themeBeforePrint = null;
  window.addEventListener("beforeprint", () => {
    const html = document.documentElement;
    if (html.dataset.theme === "dark") {
      themeBeforePrint = "dark";
      html.dataset.theme = "light";
    }
  });
  window.addEventListener("afterprint", () => {
    if (themeBeforePrint) document.documentElement.dataset.theme = themeBeforePrint;
    themeBeforePrint = null;
  });

  // Code on paper wraps (book.css), and a wrapped line started again at the left
  // edge, where a comment's last words looked like a line of code. Each line of
  // each code block and text output is put in its own span.book-line, with its
  // indentation in --lead (characters); on screen the spans are plain inline text
  // (nothing moves, and copying is unchanged), in print each is a block whose
  // wrapped part hangs 6 characters further in than the line's own indentation.
  const splitCodeLines = (pre) => {
    if (pre.querySelector(":scope > .book-line")) return;
    const lines = [document.createElement("span")];
    const add = (node) => lines[lines.length - 1].appendChild(node);
    // Copy the text of `node` into the lines, each piece inside copies of the
    // elements (tokens) around it, so a token across a line break is split in two.
    const walk = (node, wrap) => {
      if (node.nodeType === 3) {
        node.data.split(/(?<=\n)/).forEach((piece) => {
          add(wrap(document.createTextNode(piece)));
          if (piece.endsWith("\n")) lines.push(document.createElement("span"));
        });
      } else if (node.nodeType === 1) {
        const shell = node.cloneNode(false);
        const inner = (child) => {
          const copy = shell.cloneNode(false);
          copy.appendChild(child);
          return wrap(copy);
        };
        node.childNodes.forEach((child) => walk(child, inner));
      }
    };
    pre.childNodes.forEach((child) => walk(child, (x) => x));
    if (!lines[lines.length - 1].hasChildNodes()) lines.pop();
    if (lines.length < 2 && !pre.textContent.trim()) return;
    pre.replaceChildren(
      ...lines.map((line) => {
        line.className = "book-line";
        const lead = line.textContent.match(/^[ \t]*/)[0].replace(/\t/g, "    ").length;
        if (lead) line.style.setProperty("--lead", lead);
        return line;
      })
    );
  };
  const splitAllCodeLines = () => document.querySelectorAll("article.bd-article pre").forEach(splitCodeLines);

  const numberPrintTitle = () => {
    const printTitle = document.querySelector("#jb-print-docs-body > h1");
    const title = document.querySelector("article.bd-article h1");
    const number = title && title.querySelector(".section-number");
    if (!printTitle || !number) return;
    printTitle.textContent = `${number.textContent.trim()} ${printTitle.textContent.trim()}`;
  };

  // -------------------------------------------------------------------------
  // Search results: Sphinx shows a snippet of each page's source HTML, where math
  // is still TeX (MathJax renders it only on the page). The snippet's TeX is made
  // readable text: K_{n-1} -> K_(n-1), \le -> ≤, \mathbb{R} -> ℝ, delimiters dropped.
  const TEX_SYMBOLS = {
    le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈", sim: "∼", equiv: "≡",
    in: "∈", notin: "∉", subset: "⊂", subseteq: "⊆", cup: "∪", cap: "∩", times: "×", cdot: "·",
    cdots: "⋯", ldots: "…", dots: "…", to: "→", mapsto: "↦", infty: "∞", sum: "∑", prod: "∏",
    partial: "∂", nabla: "∇", top: "⊤", perp: "⊥", otimes: "⊗", oplus: "⊕", circ: "∘",
    langle: "⟨", rangle: "⟩", lVert: "‖", rVert: "‖", Vert: "‖", lvert: "|", rvert: "|", mid: "|",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
    eta: "η", theta: "θ", iota: "ι", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π",
    rho: "ρ", sigma: "σ", tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω",
    Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Xi: "Ξ", Pi: "Π", Sigma: "Σ", Phi: "Φ",
    Psi: "Ψ", Omega: "Ω", quad: " ", qquad: " ", ",": " ", ";": " ", ":": " ", "!": "", " ": " ",
  };
  const BLACKBOARD = { R: "ℝ", C: "ℂ", N: "ℕ", Z: "ℤ", Q: "ℚ" };
  const texToText = (text) => {
    let s = text
      .replace(/\\[()[\]]/g, "") // the delimiters \( \) \[ \]
      .replace(/\\\{/g, "\u0001") // literal braces, kept apart from TeX's grouping braces
      .replace(/\\\}/g, "\u0002")
      .replace(/\\\|/g, "‖")
      .replace(/\\mathbb\{([A-Z])\}/g, (m, c) => BLACKBOARD[c] || c)
      .replace(/\\(?:operatorname|mathrm|textrm|text)\{([^{}]*)\}/g, " $1 ")
      .replace(/\\(?:mathbf|mathit|mathcal|mathsf|mathtt|textbf|textit|boldsymbol|bm|emph)\{([^{}]*)\}/g, "$1")
      .replace(/\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|bigg|Bigg)(?![A-Za-z])/g, "");
    for (let pass = 0; pass < 3; pass++) {
      // innermost groups first: fractions, roots, and sub/superscripts of several characters
      s = s
        .replace(/\\[cdt]?frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
        .replace(/\\sqrt\{([^{}]*)\}/g, "√($1)")
        .replace(/([_^])\{([^{}]*)\}/g, (m, op, body) => (body.trim().length > 1 ? `${op}(${body})` : op + body));
    }
    return s
      .replace(/\\([A-Za-z]+|[,;:! ])/g, (m, name) => (name in TEX_SYMBOLS ? TEX_SYMBOLS[name] : name))
      .replace(/[{}]/g, "")
      .replace(/\u0001/g, "{")
      .replace(/\u0002/g, "}")
      .replace(/[ \t]{2,}/g, " ");
  };

  const readableSearchSnippets = () => {
    // searchtools.js declares `Search` only on the search page.
    if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
    const htmlToText = Search.htmlToText;
    Search.htmlToText = (html, anchor) => texToText(htmlToText(html, anchor));
  };

  // -------------------------------------------------------------------------
  labelCopyButtons(document);
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      m.addedNodes.forEach((node) => {
        if (node.nodeType === 1 && node.matches("button.copybtn:not([aria-label])")) {
          node.setAttribute("aria-label", "Copy code");
        }
      });
    }
  }).observe(document.documentElement, { childList: true, subtree: true });

  onReady(() => {
    closeDrawersOnLinkTap();
    tameSolutionTitles();
    splitAllCodeLines();
    linkImages();
    numberPrintTitle();
    readableSearchSnippets();
    const settleMath = () => {
      typesetLabels();
      fitMath();
      markPrintWidths();
      reflowWidth = null;
      reflowTables();
      markScrollers();
    };
    reflowTables();
    markScrollers();
    whenMathIsTypeset(() => {
      gluePunctuation();
      settleMath();
      if (document.fonts && document.fonts.ready) document.fonts.ready.then(settleMath);
    });
    // Refit when the text's size changes: a turned phone, or a solution opened
    // (its formulas had no size while it was collapsed).
    const refit = debounce(() => {
      whenMathIsTypeset(settleMath); // the tables and the scroll boxes too
      markShrunkImages();
    }, 100);
    const article = document.querySelector("article.bd-article");
    if (article && window.ResizeObserver) new ResizeObserver(refit).observe(article);
    window.addEventListener("resize", refit);
  });
})();
