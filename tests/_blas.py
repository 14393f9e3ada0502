"""A helper the measuring tests share (test_fuzz, test_limits): not a test module."""

import ctypes
import re


def one_blas_thread() -> None:
    """Run numpy's and scipy's OpenBLAS on one thread, so that CPU time measures the work (two threads
    contending on a shared machine spin, and their CPU time can be many times the work)."""
    maps = open("/proc/self/maps").read()
    for path in sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps))):
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                       "openblas_set_num_threads64_", "openblas_set_num_threads"):
            if hasattr(lib, symbol):
                getattr(lib, symbol)(ctypes.c_int(1))
                break
