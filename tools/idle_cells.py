"""Which cells of a submitted chapter grading need not run (standard library only).

A chapter handed out as an assignment is the whole chapter: its figures, its explorer, its
timings and the exercises at the end. Grading needs only what the answers and the tests can
reach, so :func:`idle` names the cells that can be left out without changing any answer:
a code cell is idle when

* it is a cell of the notebook handed out, unchanged (a cell a student added or edited
  always runs);
* it parses as Python (a cell with an IPython magic or a shell escape always runs; its
  words all count as reads);
* nothing that runs reads a name it binds or an object it may change: no cell of the
  submission that is not idle (the answers and any cell a student added included) reads it —
  at a cell's top level in the order it runs, inside its functions, classes and
  comprehensions as Python's symbol tables say, and, in code that reaches globals by name
  (``globals()``, ``sys.modules``, ``__main__``, ``df.query``), every string and attribute
  it names — and no test reads it (``extra_words``: the tests' fixture arguments and ``env``
  keys, :func:`test_names`). So a figure's cell and the cell that computes its data are
  idle together;
* what it may change counts as what it binds: the object behind a store into an attribute
  or an item, an augmented assignment, an alias (``row = grid[0]``) or an ``out=``
  argument; the object of any method call that is not on :data:`PURE_METHODS` (``fit``,
  ``rng.normal``, ``append``); a module whose state a call sets (``np.random.seed``,
  ``rcParams``, warnings filters, the global random generator); what a function defined in
  the notebook changes, and what it is given;
* its effects can be bounded at all: no ``global``/``nonlocal``, ``del``, star import,
  ``exec``/``eval``/``globals``/``setattr``/… (such a cell always runs).

Within what a static reading follows, leaving such a cell out changes no value an answer or a
test sees. Its limits: a method on :data:`PURE_METHODS` that changes its object after all, a
method called on what a call returned (``cache().append(1)``), a decorator or a generator with
side effects; the students' note
asks answers not to rely on results the chapter computed. Grading tags the idle
cells ``otter_ignore``, as it does the cells read by hand (``tools/otter_grade.py``); the
reference answers' full marks with idle cells left out are checked in ``make test``
(``tests/test_otter.py``), and the rules by ``tests/test_idle_cells.py``.
"""

from __future__ import annotations

import ast
import re

#: Functions of a module that change the module's (or the process's) state.
MODULE_STATE = frozenset("""
    seed set_state set_printoptions setbufsize seterr seterrcall use rc rcdefaults register
    unregister switch_backend filterwarnings simplefilter resetwarnings chdir putenv unsetenv
    setrecursionlimit settrace setprofile start stop update insert append extend pop clear
    setdefault remove ion ioff close clf cla
""".split())
#: Functions of a module that change an array passed to them.
ARGUMENT_CHANGING = frozenset("put copyto fill_diagonal place putmask shuffle".split())
#: Calls that reach names or objects a static reading cannot follow.
OPAQUE = frozenset("exec eval globals vars locals setattr delattr __import__ compile breakpoint".split())
#: What a function's effects hold when it may change an argument it is given.
ARGUMENTS = "(its arguments)"
#: Constructors of the random module that make their own generator (they do not draw from the global one).
OWN_GENERATORS = frozenset("default_rng Generator PCG64 PCG64DXSM MT19937 Philox SFC64 SeedSequence Random".split())
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _root(node: ast.AST) -> str | None:
    """The name an attribute or item chain starts from (``a`` of ``a.b[0].c``), or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _chain(node: ast.AST) -> list[str]:
    """The names of an attribute chain, outermost last: ``np.random.seed`` -> [np, random, seed]."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def _targets(node: ast.AST) -> set[str]:
    """The names a statement binds at the cell's top level (not inside functions, classes or comprehensions)."""
    names: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.NamedExpr):
            names.add(n.target.id)
        stack.extend(ast.iter_child_nodes(n))
    return names


#: Names through which code can read a global by a string (``globals()["x"]``, ``getattr(main, "x")``):
#: in code that mentions one, every identifier in its strings counts as a name it reads.
BY_STRING = frozenset("""globals vars locals eval exec compile getattr __import__ get_ipython __main__
    __builtins__ builtins attrgetter itemgetter""".split())
#: Attributes through which code reads globals by name (``sys.modules``, ``df.query("a > @x")``).
BY_STRING_ATTRIBUTES = frozenset("modules user_ns f_globals f_locals __dict__ query eval".split())


def _words(node: ast.AST) -> set[str]:
    """Every name a statement reads (anywhere in it, functions included); and, if it mentions one of
    :data:`BY_STRING` (or an attribute of :data:`BY_STRING_ATTRIBUTES`), every identifier in its
    strings and every attribute it names."""
    found: set[str] = set()
    strings: set[str] = set()
    attributes: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            attributes.add(n.attr)          # main.x, sys.modules["__main__"].x
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            strings |= set(WORD.findall(n.value))
    if found & BY_STRING or attributes & BY_STRING_ATTRIBUTES:
        return found | strings | attributes | {"__by_string__"}
    return found


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _top_words(node: ast.AST) -> set[str]:
    """The names a statement reads outside its nested scopes (functions, classes, lambdas,
    comprehensions: :func:`_scoped_reads` reads those), with what those scopes evaluate where
    they are defined (decorators, default values, base classes, a comprehension's first iterable)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            found.add(n.id)
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.extend([*child.decorator_list, *child.args.defaults, *(d for d in child.args.kw_defaults if d)])
            elif isinstance(child, ast.Lambda):
                stack.extend([*child.args.defaults, *(d for d in child.args.kw_defaults if d)])
            elif isinstance(child, ast.ClassDef):
                stack.extend([*child.decorator_list, *child.bases, *child.keywords])
            elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                stack.append(child.generators[0].iter)
            else:
                stack.append(child)
    return found


def _scoped_reads(source: str) -> set[str] | None:
    """The global names read inside the nested scopes of ``source`` (Python's own symbol tables:
    a method's global is a global even where another method has a local of that name; a
    comprehension's variable is its own), or None if it does not compile."""
    import symtable

    try:
        table = symtable.symtable(source, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return None

    def walk(t) -> set[str]:
        found: set[str] = set()
        for child in t.get_children():
            found |= {sym.get_name() for sym in child.get_symbols()
                      if sym.is_referenced() and sym.is_global()}
            found |= walk(child)
        return found

    return walk(table)


def _module_binds(source: str) -> set[str]:
    """Every name ``source`` binds at module level, as Python's symbol table sees it (a walrus in a
    comprehension and a ``match`` capture included)."""
    import symtable

    try:
        table = symtable.symtable(source, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return set()
    return {sym.get_name() for sym in table.get_symbols() if sym.is_assigned() or sym.is_imported()}


def _free(statements: list[ast.stmt], bound: set[str]) -> tuple[set[str], set[str]]:
    """(names read before this code binds them, names bound for certain when it ends).

    A name a statement reads counts as free unless an earlier statement bound it for certain:
    a binding inside a branch, a loop's body or a ``try`` does not count after it (the branch
    may not run), a loop's own target does count inside its body.
    """
    free: set[str] = set()
    bound = set(bound)
    for st in statements:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            evaluated = [*st.decorator_list, *st.bases, *st.keywords] if isinstance(st, ast.ClassDef) else \
                [*st.decorator_list, *st.args.defaults, *(d for d in st.args.kw_defaults if d)]
            free |= set().union(*(_top_words(e) for e in evaluated)) - bound
            bound.add(st.name)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            free |= _top_words(st.iter) - bound
            inner = bound | _targets(ast.Assign(targets=[st.target], value=ast.Constant(0)))
            free |= _free(st.body, inner)[0] | _free(st.orelse, bound)[0]
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            inner = set(bound)
            for item in st.items:
                free |= _top_words(item.context_expr) - inner
                if item.optional_vars is not None:
                    inner |= _targets(ast.Assign(targets=[item.optional_vars], value=ast.Constant(0)))
            body_free, inner = _free(st.body, inner)
            free |= body_free
            bound = inner
        elif isinstance(st, (ast.If, ast.While)):
            free |= _top_words(st.test) - bound
            free |= _free(st.body, bound)[0] | _free(st.orelse, bound)[0]
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            for block in (st.body, st.orelse, st.finalbody, *(h.body for h in st.handlers)):
                free |= _free(block, bound)[0]
            for h in st.handlers:
                if h.type is not None:
                    free |= _top_words(h.type) - bound
        else:
            if isinstance(st, ast.Assign):      # the value is read before the targets are bound
                free |= (_top_words(st.value) | set().union(*(_top_words(t) for t in st.targets))) - bound
            else:
                free |= _top_words(st) - bound
            if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id not in bound:
                free.add(st.target.id)
            bound |= _targets(st)
    return free, bound


def free_names(tree: ast.Module, source: str | None = None) -> set[str]:
    """The names a cell reads that it did not bind, for certain, before reading them: at its top
    level in the order it runs; inside its functions, classes and comprehensions, every global
    they read (whatever the cell binds); and, where the cell can read globals by name
    (:data:`BY_STRING`), every identifier in its strings and attributes."""
    free = _free(tree.body, set())[0]
    scoped = _scoped_reads(source if source is not None else ast.unparse(tree))
    free |= scoped if scoped is not None else _words(tree)
    everything = _words(tree)
    if "__by_string__" in everything:
        free |= everything
    return free


class Opaque(Exception):
    """A cell or function whose effects a static reading cannot bound."""


def _walk_here(node: ast.AST):
    """``ast.walk``, without going into the bodies of functions, lambdas and classes defined inside."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend([*child.decorator_list, *child.args.defaults,
                              *(d for d in child.args.kw_defaults if d)] if not isinstance(child, ast.Lambda)
                             else [*child.args.defaults])
            elif isinstance(child, ast.ClassDef):
                stack.extend([*child.decorator_list, *child.bases, *child.keywords])
                # a class body runs where it is defined; its methods' bodies do not
                stack.extend(st for st in child.body if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)))
            else:
                stack.append(child)


#: Methods that read their object and change nothing (the rest count as changing it).
PURE_METHODS = frozenset("""
    copy astype reshape ravel flatten transpose conj conjugate real imag sum mean std var min max argmin argmax
    any all dot item tolist round cumsum cumprod prod clip nonzero squeeze swapaxes view trace diagonal
    get keys values items index count startswith endswith format join split strip lower upper replace
    interaction forward lag_operators operator to_markdown plot semilogy semilogx loglog scatter imshow
    set_xlabel set_ylabel set_title set_xscale set_yscale legend grid axhline axvline text annotate fill_between
    set_xticks set_yticks set_xlim set_ylim colorbar savefig tight_layout subplots add_subplot bar hist
    errorbar contour contourf pcolormesh matshow spy twinx set_aspect label_outer suptitle show
""".split())


def _aliases(node: ast.AST, own: set[str]) -> dict[str, str]:
    """The names ``node`` binds to (a part of) an object it did not create, each with that object's
    name: ``row = grid[:3]`` gives ``{"row": "grid"}`` (a change through ``row`` changes ``grid``)."""
    found: dict[str, str] = {}
    for n in _walk_here(node):
        if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Attribute, ast.Subscript)):
            root = _root(n.value)
            if root is not None and (root not in own or root in found):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        found[t.id] = found.get(root, root)
    return found


def _effects(node: ast.AST, own: set[str], modules: set[str], functions: dict[str, set[str]]) -> set[str]:
    """The outside names whose objects ``node`` may change (``own``: the names it binds itself).

    ``modules``: the names imports bind; ``functions``: the effects of the notebook's functions
    and classes (a call of one adds its effects). Raises :class:`Opaque` for code whose effects
    cannot be bounded (``global``, ``exec``, ``del``, a star import, …).
    """
    found: set[str] = set()
    alias = _aliases(node, own)      # a change through an alias is a change of the object behind it
    own = own - set(alias)

    def outside(names):
        return {alias.get(r, r) for r in names if r is not None and r not in own}
    for n in _walk_here(node):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            raise Opaque("global or nonlocal")
        if isinstance(n, ast.Delete):
            raise Opaque("del")
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
            raise Opaque("star import")
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            if _root(n) is None:
                raise Opaque("stores into the result of an expression")
            found |= outside([_root(n)])
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            found |= outside([n.target.id])
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        arguments = [_root(a) for a in [*n.args, *(k.value for k in n.keywords)]]
        if isinstance(func, ast.Name):
            if func.id in OPAQUE:
                raise Opaque(f"calls {func.id}")
            called = functions.get(func.id, set())
            found |= called - {ARGUMENTS}
            if ARGUMENTS in called:       # a notebook function that changes what it is given
                found |= outside(arguments)
            continue
        if not isinstance(func, ast.Attribute):
            continue
        chain, root = _chain(func), _root(func)
        if any(k.arg == "out" for k in n.keywords):
            found |= outside([_root(k.value) for k in n.keywords if k.arg == "out"])
        if root is None or root in own and root not in modules:
            continue
        if root in modules:
            if func.attr in MODULE_STATE or "rcParams" in chain:
                found.add(root)
            if "random" in chain[:-1] and chain[-1] not in OWN_GENERATORS:
                found.add(root)             # draws from the global generator
            if func.attr in ARGUMENT_CHANGING:
                found |= outside([_root(a) for a in n.args])
        elif func.attr not in PURE_METHODS:
            found |= outside([root])      # any other method may change its object (fit, step, normal, ...)
    return found


def _function_effects(trees: list[ast.Module | None], modules: set[str]) -> dict[str, set[str]]:
    """The outside names each function or class defined at a cell's top level may change when called
    (a method's ``self`` and a function's locals are its own). Opaque ones get the name ``*``."""
    defs: dict[str, ast.AST] = {}
    for tree in trees:
        for statement in tree.body if tree is not None else ():
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[statement.name] = statement
    effects: dict[str, set[str]] = {name: set() for name in defs}
    changed = True
    while changed:          # a function that calls another has its effects too
        changed = False
        for name, node in defs.items():
            bodies = [node] if not isinstance(node, ast.ClassDef) else \
                [st for st in node.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))]
            found: set[str] = set()
            for body in bodies:
                params = [a.arg for a in ast.walk(body.args) if isinstance(a, ast.arg)]
                if isinstance(node, ast.ClassDef) and params:
                    params = params[1:]          # a method's self (or cls) is the object it belongs to
                local = {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                try:    # its parameters counted as outside objects: a change of one is a change of an argument
                    changes = _effects(ast.Module(body=body.body, type_ignores=[]),
                                       (local | {a.arg for a in ast.walk(body.args) if isinstance(a, ast.arg)})
                                       - set(params), modules, effects)
                except Opaque:
                    changes = {"*"}
                found |= changes - set(params)
                if changes & set(params):
                    found.add(ARGUMENTS)
            if not found <= effects[name]:
                effects[name] |= found
                changed = True
    return effects


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def test_names(source: str) -> set[str]:
    """The notebook names an Otter test file reads: its test functions' arguments (Otter passes the
    notebook's global of that name) and the keys it looks up in ``env`` (the notebook's globals);
    every identifier in the file if it does not parse, or if it looks ``env`` up with a computed
    key. (A test function's own free names are the test file's globals, not the notebook's: Otter
    runs the file in a namespace of its own.)"""
    tree = _parse(source)
    if tree is None:
        return set(WORD.findall(source))
    names: set[str] = set()
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names |= {a.arg for a in ast.walk(st.args) if isinstance(a, ast.arg)} - {"env"}
    for n in ast.walk(tree):     # env["name"], env.get("name"), env.pop("name"), "name" in env
        if isinstance(n, ast.Subscript) and _root(n) == "env" and isinstance(n.slice, ast.Constant):
            names.add(str(n.slice.value))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _root(n.func) == "env":
            names |= {str(a.value) for a in n.args if isinstance(a, ast.Constant)}
        elif isinstance(n, ast.Compare) and any(isinstance(c, ast.Name) and c.id == "env" for c in n.comparators):
            names |= {str(n.left.value)} if isinstance(n.left, ast.Constant) else set()
    if any(isinstance(n, ast.Name) and n.id == "env" for n in ast.walk(tree)) and any(
            isinstance(n, ast.Subscript) and _root(n) == "env" and not isinstance(n.slice, ast.Constant)
            or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _root(n.func) == "env"
            and any(not isinstance(a, ast.Constant) for a in n.args[:1]) for n in ast.walk(tree)):
        names |= set(WORD.findall(source))     # env read with a computed key: every word counts
    return names


def idle(sources: list[str], handed_out: set[str], extra_words: set[str] = frozenset(),
         keep: set[int] = frozenset(), silent: set[int] = frozenset()) -> set[int]:
    """The indexes of the cells of ``sources`` that grading can leave out (see the module's docstring).

    ``sources``: the notebook's code cells in order; ``handed_out``: the stripped sources of
    the code cells of the notebook handed out; ``extra_words``: the identifiers the tests
    mention; ``keep``: indexes that always run (the answer cells; they are read for their
    names like every cell); ``silent``: indexes that never run (the cells read by hand, which
    grading skips): their names are not uses, and they are not in the result.
    """
    trees = [_parse(s) for s in sources]
    uses: list[set[str]] = []
    for k, (source, tree) in enumerate(zip(sources, trees)):
        if k in silent:
            uses.append(set())
        elif tree is None:
            uses.append(set(WORD.findall(source)))      # a cell that does not parse: every word is a use
        else:
            uses.append(free_names(tree, source))
    modules = set()
    for tree in trees:
        for n in ast.walk(tree) if tree is not None else ():
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                modules |= {(a.asname or a.name).split(".")[0] for a in n.names}
    functions = _function_effects(trees, modules)
    binds: dict[int, set[str]] = {}
    for k, (source, tree) in enumerate(zip(sources, trees)):
        if k in keep or k in silent or tree is None or source.strip() not in handed_out:
            continue
        names: set[str] = _module_binds(source)
        names |= {n.target.id for n in _walk_here(tree) if isinstance(n, ast.NamedExpr)}   # a walrus in a comprehension
        for statement in tree.body:
            names |= _targets(statement)
            if isinstance(statement, (ast.Import, ast.ImportFrom)):   # import a.b loads a.b into a
                names |= {(a.name if isinstance(statement, ast.Import) else statement.module or "").split(".")[0]
                          for a in statement.names} - {""}
        try:
            changes = _effects(tree, names, modules, functions)
        except Opaque:
            continue
        if "*" not in changes:
            binds[k] = names | changes      # what it binds and what it changes: read elsewhere, it runs
    # the largest set of cells none of whose names a cell outside the set (or a test) reads:
    # a figure cell and the cell that computes its data are idle together
    result = set(binds)
    changed = True
    while changed:
        changed = False
        running = [j for j in range(len(sources)) if j not in result and j not in silent]
        read = set(extra_words).union(*(uses[j] for j in running))
        for k in sorted(result):
            if binds[k] & read:
                result.discard(k)
                changed = True
    return result
