"""Finding things in the book (issue 25): lists of the numbered statements, numbered
titles for the search, and links to sections by their anchors.

* The directive ``{numbered-list} theorems`` (``exercises``) becomes, at build time, the
  list of the book's numbered statements of sphinx-proof (theorems, definitions, lemmas,
  propositions, corollaries, examples), or of its numbered exercises (sphinx-exercise),
  chapter by chapter in the order of the table of contents, each with the number the
  book renders ("Theorem 3.1") and its title, linked to it; an exercise also links to
  its solution. book/theorems.md and book/exercises.md use it.
* The search finds "Theorem 3.1". Sphinx indexes a page's doctree before the HTML
  writer adds the numbers, so each numbered statement also gets, for the HTML builder
  only, two titles that the search index reads and the writer leaves out: "Theorem 3.1"
  and "Theorem 3.1 (its title)", both pointing at the statement's anchor. Sphinx's
  search matches a query against such titles (``alltitles``) and links the result to
  the statement itself.
* The role ``{book-section}`chapters/03_head_count#what-the-heads-look-like``` links to a
  section by the anchor Sphinx gives its heading, and reads "Section 3.4" (the number
  the book renders). A section that is not there is a warning, so a ``-W`` build
  fails when a heading changes under a link (book/glossary.md uses it).

The statements are collected when each page is read (``doctree-read``); the numbers
exist only after all pages are read, so the lists are made when a page is resolved
(``doctree-resolved``), and a page with a list is read again whenever any page changes.
"""
from __future__ import annotations

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole
from sphinx.util.nodes import make_refnode
from sphinx_exercise.nodes import exercise_enumerable_node
from sphinx_proof.nodes import NODE_TYPES

LOGGER = logging.getLogger(__name__)

PROOF_NODES = tuple(NODE_TYPES.values())  # the numbered kinds of sphinx-proof
KINDS = ("theorems", "exercises")
# Inline nodes a title keeps in a list entry; anything else (a reference, a citation) is
# replaced by its text: a link inside the entry's link would not work, and a reference
# read from the source is not resolved any more when the list is made.
KEEP = (nodes.Text, nodes.math, nodes.emphasis, nodes.strong, nodes.literal, nodes.inline)


class numbered_list(nodes.General, nodes.Element):
    """Where a list goes; replaced when the page is resolved."""


class section_link(nodes.Inline, nodes.Element):
    """A link to a section by its anchor; replaced when the page is resolved."""


class search_title(nodes.title):
    """A numbered title that only the search index reads (the writers skip it)."""


def _skip(self, node):
    raise nodes.SkipNode


class NumberedListDirective(SphinxDirective):
    required_arguments = 1

    def run(self):
        kind = self.arguments[0].strip()
        if kind not in KINDS:
            raise self.error(f"numbered-list: expected one of {', '.join(KINDS)}, not {kind!r}")
        pages = _state(self.env)["pages"]
        pages.add(self.env.docname)
        return [numbered_list(kind=kind)]


class SectionRole(SphinxRole):
    def run(self):
        target = self.text.strip()
        if "#" not in target:
            msg = self.inliner.reporter.error(f"book-section: expected DOC#anchor, not {target!r}",
                                              line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        return [section_link(target=target)], []


def _state(env) -> dict:
    if not hasattr(env, "book_finding"):
        env.book_finding = {"items": {}, "pages": set()}
    return env.book_finding


def _title_children(title: nodes.Node) -> list[nodes.Node]:
    out = []
    for child in title.children:
        if isinstance(child, KEEP) and not child.traverse(lambda n: not isinstance(n, KEEP)):
            out.append(child.deepcopy())
        else:
            out.append(nodes.Text(child.astext()))
    return out


def _is_solution(node) -> bool:
    return isinstance(node, nodes.Element) and "solution" in node.get("classes", []) and bool(
        node.get("target_label"))


def collect(app, doctree):
    """The numbered statements and exercises of a page, in the order of the page."""
    items = []
    for node in doctree.findall(lambda n: isinstance(n, PROOF_NODES + (exercise_enumerable_node,))
                                or _is_solution(n)):
        if not node.get("ids"):
            continue
        if _is_solution(node):
            items.append({"group": "solution", "id": node["ids"][0], "target": node["target_label"]})
        elif isinstance(node, exercise_enumerable_node):
            title = node.children[0] if node.children else None
            subtitle = title.children[1] if title is not None and len(title.children) > 1 else None
            items.append({"group": "exercises", "kind": "exercise", "countertype": "exercise",
                          "id": node["ids"][0], "label": node.get("label", node["ids"][0]),
                          "title": _title_children(subtitle) if subtitle is not None else []})
        else:
            title = next((c for c in node.children if isinstance(c, nodes.title)), None)
            items.append({"group": "theorems", "kind": node.get("realtype", ""),
                          "countertype": node.get("countertype", ""), "id": node["ids"][0],
                          "title": _title_children(title) if title is not None else []})
    _state(app.env)["items"][app.env.docname] = items
    if any(True for _ in doctree.findall(numbered_list)):
        # The list is made after the page is read, and its titles may hold formulas:
        # Sphinx loads MathJax only on pages that had math when they were read.
        app.env.get_domain("math").data["has_equations"][app.env.docname] = True


def purge(app, env, docname):
    state = _state(env)
    state["items"].pop(docname, None)
    state["pages"].discard(docname)


def merge(app, env, docnames, other):
    state, theirs = _state(env), _state(other)
    for docname in docnames:
        if docname in theirs["items"]:
            state["items"][docname] = theirs["items"][docname]
        if docname in theirs["pages"]:
            state["pages"].add(docname)


def outdated(app, env, added, changed, removed):
    """A page with a list is read again whenever any other page changes."""
    if added | changed | removed:
        return sorted(_state(env)["pages"] - set(removed))
    return []


def _number(env, docname: str, item: dict) -> str:
    number = env.toc_fignumbers.get(docname, {}).get(item["countertype"], {}).get(item["id"])
    return ".".join(map(str, number)) if number else ""


def _name(item: dict) -> str:
    return "Exercise" if item["group"] == "exercises" else item["kind"].title()


def _ordered_docs(env) -> list[str]:
    """The pages in the order of the table of contents (chapters by their numbers)."""
    root = env.config.root_doc
    order, seen = [], set()

    def walk(doc):
        if doc in seen:
            return
        seen.add(doc)
        order.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)

    walk(root)
    return order + sorted(d for d in _state(env)["items"] if d not in seen)


def _entry(app, fromdoc: str, docname: str, item: dict, solutions: dict) -> nodes.list_item:
    env = app.env
    number = _number(env, docname, item)
    label = f"{_name(item)} {number}".strip()
    inner = nodes.inline("", "", nodes.strong(label, label))
    title = item["title"]
    if title:
        if item["group"] == "exercises":
            inner += nodes.Text(" (")
            inner.extend(c.deepcopy() for c in title)
            inner += nodes.Text(")")
        else:  # sphinx-proof's title text is " (its title)"
            inner.extend(c.deepcopy() for c in title)
    para = nodes.paragraph()
    para += make_refnode(app.builder, fromdoc, docname, item["id"], inner, label)
    solution = solutions.get(item.get("label"))
    if solution:
        para += nodes.Text(" · ")
        para += make_refnode(app.builder, fromdoc, docname, solution, nodes.Text("solution"),
                             f"Solution to {label}")
    return nodes.list_item("", para)


def make_list(app, fromdoc: str, kind: str) -> list[nodes.Node]:
    env = app.env
    state = _state(env)
    out = []
    for docname in _ordered_docs(env):
        items = [i for i in state["items"].get(docname, []) if i["group"] == kind]
        items = [i for i in items if _number(env, docname, i)]
        if not items:
            continue
        solutions = {i["target"]: i["id"] for i in state["items"][docname] if i["group"] == "solution"}
        secnumber = env.toc_secnumbers.get(docname, {}).get("")
        title = env.titles[docname].astext() if docname in env.titles else docname
        heading = f"Chapter {'.'.join(map(str, secnumber))}: {title}" if secnumber else title
        section = nodes.section(ids=[f"{kind}-{docname.replace('/', '-')}"])
        section += nodes.title("", "", make_refnode(app.builder, fromdoc, docname, "",
                                                    nodes.Text(heading), heading))
        section += nodes.bullet_list("", *(_entry(app, fromdoc, docname, i, solutions) for i in items),
                                     classes=["book-numbered-list"])
        out.append(section)
    if not out:
        out.append(nodes.paragraph(text="(None yet.)"))
    return out


def resolve(app, doctree, docname):
    env = app.env
    for placeholder in list(doctree.findall(numbered_list)):
        placeholder.replace_self(make_list(app, docname, placeholder["kind"]))
    for link in list(doctree.findall(section_link)):
        link.replace_self(_section_link(app, docname, link["target"], link))
    if app.builder.format != "html":
        return
    # Numbered titles for the search index.
    items = {i["id"]: i for i in _state(env)["items"].get(docname, []) if i["group"] != "solution"}
    for node in doctree.findall(lambda n: isinstance(n, PROOF_NODES + (exercise_enumerable_node,))):
        item = items.get(node["ids"][0]) if node.get("ids") else None
        number = item and _number(env, docname, item)
        if not number:
            continue
        label = f"{_name(item)} {number}"
        text = "".join(c.astext() for c in item["title"]).strip()
        if item["group"] == "exercises" and text:
            text = f"({text})"
        node += search_title(label, label)
        if text:
            node += search_title(f"{label} {text}", f"{label} {text}")


def _section_link(app, fromdoc: str, target: str, where: nodes.Node) -> nodes.Node:
    env = app.env
    docname, _, anchor = target.partition("#")
    number = env.toc_secnumbers.get(docname, {}).get("#" + anchor)
    if docname not in env.all_docs or not number:
        LOGGER.warning("book-section: no numbered section #%s in %s", anchor, docname,
                       type="book_section", location=where)
        return nodes.Text(target)
    text = f"Section {'.'.join(map(str, number))}"
    return make_refnode(app.builder, fromdoc, docname, anchor, nodes.Text(text), text)


def setup(app):
    app.add_node(numbered_list)
    app.add_node(section_link)
    skip = (_skip, None)
    app.add_node(search_title, html=skip, latex=skip, text=skip, man=skip, texinfo=skip)
    app.add_directive("numbered-list", NumberedListDirective)
    app.add_role("book-section", SectionRole())
    app.connect("doctree-read", collect)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("env-get-outdated", outdated)
    app.connect("doctree-resolved", resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
