"""The student's function run in another process while a test computes its references (issue 26).

tools/make_otter.py copies the source of :func:`sandboxed` into every test cell of the
autograder (a test cell must be self-contained), and the test rebinds the student's
function to ``sandboxed(function, seconds)`` before it computes anything.

``sandboxed`` forks the grading kernel *at that moment*, before the test has computed a
single expected value: the child holds the student's function and nothing of the test.
Each call sends its arguments to the child, which calls the function there and sends back
the result, reduced to plain data (NumPy arrays and scalars, numbers, tuples, lists, dicts,
the library's own objects) and read back with an unpickler that builds nothing else. So:

* the answer cannot read an expected value from the test's frames, closures or memory:
  none exists in its process (a stack walk, ``gc``, ``inspect`` find only the child's own);
* the answer cannot call a reference: in the child, every routine the test switched off
  when it called (``reference_routines_off``) is switched off too, with the private cores
  behind the head routines (``heads._optimal_heads``, ``_rank``, ...), and every function
  of ``ssmheads.exercises`` (the checks and their references) raises;
* the answer cannot return an object that runs code later in the test (an ``__eq__``, an
  ``__array__`` that reads the test's frames): it comes back as plain data;
* a call that does not return within the question's ``seconds`` (all calls of the test
  together) is stopped, the child killed: the call raises ``TimeoutError``, and so does every
  later call of the same test, so a hang costs its own question only; an answer that ends
  its process (``os._exit``, a crash) raises ``RuntimeError`` saying so.

Where ``os.fork`` does not exist the function is returned as it is.
"""


def sandboxed(answer, seconds=20.0):
    """``answer`` run in a child process forked now; see the module's docstring."""
    import builtins
    import functools
    import io
    import os
    import pickle
    import select
    import signal
    import struct
    import sys
    import time
    import weakref

    if answer is None or answer is Ellipsis or not callable(answer) or not hasattr(os, "fork"):
        return answer

    MEMORY_HEADROOM = 4 << 30   # bytes an answer may allocate beyond the kernel's own

    cores = {"heads": ("_optimal_heads", "_best_heads", "_rank", "_head_count_curve", "_exact_heads",
                       "_pointing_functional", "_nonnegative_heads", "_nonzero_lags", "_weighted_columns")}

    def off_code():
        from ssmheads.exercises import _common
        return _common._write_it_yourself.__code__

    def switched_off():
        """(module, qualified name) of every library function whose code is switched off now."""
        try:
            code = off_code()
        except Exception:
            return []
        found = []
        for name, module in list(sys.modules.items()):
            if not name.startswith("ssmheads") or module is None:
                continue
            for key, value in list(vars(module).items()):
                if getattr(value, "__code__", None) is code and getattr(value, "__module__", None) == name:
                    found.append((name, key))
                elif isinstance(value, type) and value.__module__ == name:
                    for attr, member in list(vars(value).items()):
                        if getattr(member, "__code__", None) is code:
                            found.append((name, f"{key}.{attr}"))
        return found

    def write(fd, data):
        data = struct.pack("<Q", len(data)) + data
        while data:
            data = data[os.write(fd, data):]

    def read(fd, deadline=None):
        chunks, need, header = [], 8, True
        size = None
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    return "timeout"
            piece = os.read(fd, min(need, 1 << 20))
            if not piece:
                return None
            chunks.append(piece)
            need -= len(piece)
            if need == 0:
                if header:
                    size = struct.unpack("<Q", b"".join(chunks))[0]
                    chunks, need, header = [], size, False
                    if size == 0:
                        return b""
                else:
                    return b"".join(chunks)

    # ------------------------------------------------------------------ the child
    def plain(x, depth=0):
        import numpy as np

        if depth > 20:
            raise TypeError("a result nested more than 20 levels deep")
        if x is None or x is Ellipsis or type(x) in (bool, int, float, complex, str, bytes):
            return x
        if isinstance(x, np.generic) and type(x).__module__ == "numpy":
            return x
        for kind in (bool, int, float, complex):
            if isinstance(x, kind):
                return kind(x)
        if isinstance(x, np.ndarray):
            a = np.array(x, copy=True, subok=False)
            if a.dtype == object:
                flat = [plain(v, depth + 1) for v in a.reshape(-1)]
                out = np.empty(len(flat), dtype=object)
                out[:] = flat
                return out.reshape(a.shape)
            return a
        if isinstance(x, tuple):
            return tuple(plain(v, depth + 1) for v in x)
        if isinstance(x, list):
            return [plain(v, depth + 1) for v in x]
        if isinstance(x, dict):
            return {plain(k, depth + 1): plain(v, depth + 1) for k, v in x.items()}
        if type(x).__module__.split(".")[0] == "ssmheads":
            return x
        if hasattr(x, "__array__"):
            return plain(np.asarray(x), depth + 1)
        raise TypeError(f"returned a {type(x).__name__}, which grading cannot read back: return NumPy "
                        "arrays, numbers, tuples or lists")

    def child(requests, replies):
        import importlib

        sys.stdout = sys.stderr = io.StringIO()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            import resource
            cpu = int(seconds) + 5
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        except Exception:
            pass
        try:  # memory: what the kernel holds now and MEMORY_HEADROOM more, so that an answer
            # that allocates far more fails with MemoryError here instead of pushing the grader
            # (and the notebook graded beside it) into the system's out-of-memory killer
            import resource
            with open("/proc/self/status") as status:
                size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
            resource.setrlimit(resource.RLIMIT_AS, (size + MEMORY_HEADROOM, resource.RLIM_INFINITY))
        except Exception:
            pass
        raiser = off_code()
        # The checks and their references: nothing an answer needs.
        for name, module in list(sys.modules.items()):
            if name.startswith("ssmheads.exercises") and module is not None:
                for key, value in list(vars(module).items()):
                    if (getattr(value, "__module__", None) == name and hasattr(value, "__code__")
                            and value.__code__ is not raiser and not value.__code__.co_freevars
                            and key != "_write_it_yourself"):
                        value.__code__ = raiser
        saved = {}
        while True:
            message = read(requests)
            if not message:
                return
            routines, args, kwargs = pickle.loads(message)
            for f, code in saved.items():
                f.__code__ = code
            saved = {}
            modules = {m.split(".")[-1] for m, _ in routines}
            routines = list(routines) + [(f"ssmheads.{m}", core) for m in modules for core in cores.get(m, ())]
            for module, qualname in routines:
                try:
                    f = functools.reduce(getattr, qualname.split("."), importlib.import_module(module))
                    if not f.__code__.co_freevars:
                        saved.setdefault(f, f.__code__)
                        f.__code__ = raiser
                except Exception:
                    pass
            try:
                reply = ("ok", plain(answer(*args, **kwargs)))
            except BaseException as exc:   # reported to the test as what the answer raised
                reply = ("raise", type(exc).__name__, str(exc))
            try:
                data = pickle.dumps(reply, protocol=4)
            except Exception as exc:
                data = pickle.dumps(("raise", "TypeError", f"returned something grading cannot read back ({exc})"))
            write(replies, data)

    # ------------------------------------------------------------------ the parent
    class Plain(pickle.Unpickler):
        allowed = {("builtins", n) for n in ("complex", "set", "frozenset", "slice", "range", "bytearray")} | {
            (m, n) for m in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray", "numpy.core.numeric",
                             "numpy._core.numeric")
            for n in ("ndarray", "dtype", "_reconstruct", "scalar", "_frombuffer")} | {("copyreg", "_reconstructor")}

        def find_class(self, module, name):
            if (module, name) in self.allowed:
                return super().find_class(module, name)
            if module.split(".")[0] == "ssmheads":
                found = super().find_class(module, name)
                if isinstance(found, type):
                    return found
            if module == "builtins" and name == "object":
                return object
            raise pickle.UnpicklingError(f"{module}.{name}")

    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover (the child)
        try:
            os.close(requests_w)
            os.close(replies_r)
            child(requests_r, replies_w)
        finally:
            os._exit(0)
    os.close(requests_r)
    os.close(replies_w)
    state = {"deadline": time.monotonic() + float(seconds), "stopped": None}

    def close(pid=pid, fds=(requests_w, replies_r)):
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (OSError, ChildProcessError):
            pass

    def stop(why):
        state["stopped"] = why
        close()

    @functools.wraps(answer)
    def call(*args, **kwargs):
        if state["stopped"]:
            raise state["stopped"][0](state["stopped"][1])
        try:
            message = pickle.dumps((switched_off(), args, kwargs), protocol=4)
        except Exception as exc:
            raise TypeError(f"grading could not pass these arguments to another process ({exc})") from None
        write(requests_w, message)
        reply = read(replies_r, state["deadline"])
        if reply == "timeout":
            stop((TimeoutError, f"did not return within the {float(seconds):g} s this question allows "
                                "(an endless loop, or a computation far too slow?); grading stopped it"))
            raise TimeoutError(state["stopped"][1])
        if reply is None:
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = 0
            stop((RuntimeError, "ended the Python process that ran it (exit status "
                                f"{os.waitstatus_to_exitcode(status) if status else 'unknown'}): "
                                "do not call exit, and keep within memory"))
            raise RuntimeError(state["stopped"][1])
        try:
            kind, *rest = Plain(io.BytesIO(reply)).load()
        except Exception as exc:
            raise TypeError(f"returned something grading cannot read back ({exc})") from None
        if kind == "ok":
            return rest[0]
        name, text = rest
        error = getattr(builtins, name, None)
        if not (isinstance(error, type) and issubclass(error, Exception)):
            error = type(name, (Exception,), {"__module__": "submission"})
        raise error(text)

    weakref.finalize(call, close)
    return call
