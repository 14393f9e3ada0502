"""The interaction operator ``W`` and what can be read off it (Chapter 1).

A sequence map in *interaction form* computes ``y_i = sum_j W_ij(X) x_j``.
Arrays follow the book's conventions:

* a sequence ``X`` has shape ``(n, d)``; token ``i`` is the row ``X[i]``;
* an interaction operator ``W`` has shape ``(n, n, p, d)``; ``W[i, j]`` is the
  ``p x d`` block ``W_ij(X)``;
* lag operators ``K`` have shape ``(L, p, d)``; ``K[l]`` acts at lag ``l = i - j``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._validate import as_array, check_allocation, check_positive_int, check_size

__all__ = [
    "apply_interaction",
    "toeplitz_operator",
    "block_norms",
    "causality_violation",
    "toeplitz_deviation",
    "operator_of_linear_map",
    "trivial_interaction_form",
    "two_route_gap",
]


def _operator(W) -> np.ndarray:
    W = as_array("W", W, 4, "(n, n, p, d)")
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must have shape (n, n, p, d) with equal first two axes; got shape {W.shape}")
    if W.shape[0] < 1:
        raise ValueError(f"W has shape {W.shape}; the sequence length n must be at least 1")
    if W.shape[2] < 1 or W.shape[3] < 1:
        raise ValueError(f"W has shape {W.shape}; the block sizes p and d (axes 2 and 3) must be at least 1")
    return W


def _safe_scale(arr: np.ndarray) -> float:
    """1.0 when squares of ``arr`` neither overflow nor underflow, else ``max |arr|`` (to divide by)."""
    top = max(float(np.max(arr)), -float(np.min(arr))) if arr.size else 0.0  # max |arr|, no copy of arr
    return top if (top > 1e150 or 0.0 < top < 1e-150) else 1.0


#: The functions that read a whole operator ``W`` work on blocks of its rows of at most this many
#: entries (32 MiB), so that their temporaries stay small whatever the size of ``W``.
_ROW_ENTRIES = 2**22
#: Most blocks whose spectral norms :func:`block_norms` computes (one SVD each, about a
#: microsecond): ``2^20`` (``n = 1024``), about a second here; the Frobenius norms have no such limit.
MAX_SPECTRAL_BLOCKS = 2**20


def _rows(W: np.ndarray):
    """Slices of the first axis of ``W`` whose rows hold at most :data:`_ROW_ENTRIES` entries together."""
    per_row = max(1, W[0].size) if W.shape[0] else 1
    step = max(1, _ROW_ENTRIES // per_row)
    return [slice(a, min(a + step, W.shape[0])) for a in range(0, W.shape[0], step)]


def _toeplitz(K: np.ndarray, n: int) -> np.ndarray:
    """``W[i, j] = K[i - j]`` for ``0 <= i - j < L``, else 0.

    ``K`` has shape (L, p, d); ``W`` has shape (n, n, p, d). With
    ``seq`` = n - 1 zero blocks followed by ``K[0], ..., K[n - 1]``
    (``K`` padded with zero blocks), ``W[i, j] = seq[n - 1 + i - j]``:
    row ``i`` is a reversed window of ``seq``. The windows are a strided
    view, copied once into ``W``, so no (n, n) index array is made.
    """
    L, block = K.shape[0], K.shape[1:]
    # the taps K[0], ..., K[n - 1], zero blocks past the last of K
    if L >= n:
        taps = K[:n]
    else:
        taps = np.concatenate([K, np.zeros((n - L,) + block)])
    # seq[n - 1 + l] = K[l]; the n - 1 zeros are the lags l < 0
    seq = np.concatenate([np.zeros((n - 1,) + block), taps])
    # view[s, :, :, t] = seq[s + t], a window of n blocks per s
    view = np.lib.stride_tricks.sliding_window_view(seq, n, axis=0)
    # W[i, j] = view[i, ..., n - 1 - j] = seq[n - 1 + i - j]
    return np.ascontiguousarray(np.moveaxis(view, -1, 1)[:, ::-1])


def apply_interaction(W, X) -> np.ndarray:
    """Apply an interaction operator: ``y_i = sum_j W[i, j] @ X[j]``.

    Defined in Chapter 1, Definition 1.1.

    Parameters
    ----------
    W : array, shape (n, n, p, d)
        The interaction operator, ``W[i, j]`` the block acting from token ``j`` to output ``i``.
    X : array, shape (n, d)
        The input sequence, one token per row.

    Returns
    -------
    Y : ndarray, shape (n, p)
    """
    W = _operator(W)
    X = as_array("X", X, 2, "(n, d)")
    check_size("X", X, 0, W.shape[0], "the sequence length n of W")
    check_size("X", X, 1, W.shape[3], "the token width d of W")
    n, _, p, d = W.shape
    x = X.reshape(-1)  # (n d,): token j's features at j d ... j d + d - 1
    Y = np.empty((n, p))
    with np.errstate(over="ignore", invalid="ignore"):
        for rows in _rows(W):  # y_i = sum_j W[i, j] x_j: block rows of W as a matrix (r p, n d) times x
            Y[rows] = (W[rows].transpose(0, 2, 1, 3).reshape(-1, n * d) @ x).reshape(-1, p)
    if not np.all(np.isfinite(Y)):
        raise ValueError(f"W and X are too large together: W X overflows the largest float (max |W| = "
                         f"{max(float(np.max(W)), -float(np.min(W))):.3e}, max |X| = {np.max(np.abs(X)):.3e}); "
                         "rescale W or X")
    return Y


def toeplitz_operator(K, n: int, max_bytes: int | None = None) -> np.ndarray:
    """The causal block-Toeplitz operator ``W[i, j] = K[i - j]`` for ``0 <= i - j < L``, else 0.

    Derived in Chapter 1, Theorem 1.1.
    Used in Chapter 2; the layers of Chapter 1 lay out their taps the same way.

    This is the operator of every causal time-invariant linear layer: a
    convolution with ``L`` taps, or an LTI SSM with ``K[l] = C A^l B`` (``L >= n``).

    Parameters
    ----------
    K : array, shape (L, p, d)
        Lag operators; lags at or beyond ``L`` are zero.
    n : int
        Sequence length, ``n >= 1``.
    max_bytes : int, optional
        Largest ``W`` to build, in bytes; default ``MAX_ARRAY_BYTES`` of
        ``ssmheads._validate`` (1 GiB). A larger ``W`` raises a ``ValueError`` before
        anything is allocated; apply the lags as a convolution instead.

    Returns
    -------
    W : ndarray, shape (n, n, p, d)
    """
    K = as_array("K", K, 3, "(L, p, d)")
    n = check_positive_int("n", n)
    if K.shape[1] < 1 or K.shape[2] < 1:
        raise ValueError(f"K has shape {K.shape}; the block sizes p and d (axes 1 and 2) must be at least 1")
    check_allocation("n", (n, n) + K.shape[1:], "the operator W", "apply the lags as a convolution "
                     "(ssmheads.Convolution(K).forward) or use a smaller n", max_bytes)
    return _toeplitz(K, n)


def block_norms(W, ord: str = "fro") -> np.ndarray:
    """Norm of every block ``W[i, j]``: the picture of "who talks to whom".

    Used in Chapter 1, Section 1.6.

    Parameters
    ----------
    W : array, shape (n, n, p, d)
    ord : {"fro", "spectral"}
        Frobenius norm (default) or spectral norm of each ``p x d`` block.

    Returns
    -------
    norms : ndarray, shape (n, n)
    """
    W = _operator(W)
    if not isinstance(ord, str) or ord not in ("fro", "spectral"):
        raise ValueError(f"ord must be 'fro' or 'spectral'; got {ord!r}")
    blocks = W.shape[0] * W.shape[1]
    if ord == "spectral" and blocks > MAX_SPECTRAL_BLOCKS:
        raise ValueError(f"W has {blocks} blocks (n = {W.shape[0]}): their spectral norms (an SVD each) are above "
                         f"the limit of {MAX_SPECTRAL_BLOCKS} blocks (about a second here); use ord='fro', or the "
                         "blocks of a window of W")
    return _block_norms(W, ord)


def _block_norms(W: np.ndarray, ord: str) -> np.ndarray:
    """Core of :func:`block_norms` on a checked ``W`` of shape ``(n, n, p, d)``: norms ``(n, n)``."""
    scale = _safe_scale(W)  # entries beyond 1e150 or below 1e-150: square after dividing by max |W|
    norms = np.empty(W.shape[:2])
    for rows in _rows(W):  # block rows: no temporary of the size of W
        Wb = W[rows] if scale == 1.0 else W[rows] / scale
        if ord == "fro":
            norms[rows] = np.sqrt(np.einsum("ijpd,ijpd->ij", Wb, Wb))
        else:
            norms[rows] = np.linalg.norm(Wb, ord=2, axis=(2, 3))
    return norms if scale == 1.0 else scale * norms


def causality_violation(W) -> float:
    """Largest Frobenius norm of a block above the diagonal (``j > i``); 0 for a causal operator.

    Used in Chapter 1, Section 1.6.

    Parameters
    ----------
    W : array, shape (n, n, p, d)

    Returns
    -------
    float
    """
    norms = _block_norms(_operator(W), "fro")
    upper = np.triu(norms, k=1)
    return float(upper.max()) if upper.size else 0.0


def toeplitz_deviation(W) -> float:
    """How far ``W`` is from block-Toeplitz: ``max |W[i, j] - W[i + 1, j + 1]|`` over all entries.

    Used in Chapter 1, Section 1.6.

    Zero exactly when every block depends only on the offset ``i - j``. For a
    *causal, input-independent* operator this is time invariance of the map
    (delaying the input delays the output). It is not in general: an
    anti-causal shift is Toeplitz but not time-invariant, and an input-dependent
    operator (an MLP's, say) can fail the test at every input although its map
    is time-invariant.

    Parameters
    ----------
    W : array, shape (n, n, p, d)

    Returns
    -------
    float
    """
    W = _operator(W)
    if W.shape[0] < 2:
        return 0.0
    scale = _safe_scale(W)
    worst = 0.0
    for rows in _rows(W[1:]):  # block rows of W[i + 1, j + 1] - W[i, j]: no temporary of the size of W
        a, b = rows.start, rows.stop
        worst = max(worst, float(np.max(np.abs(W[a + 1:b + 1, 1:] / scale - W[a:b, :-1] / scale))))
    return scale * worst


#: Most unit probes (``n d``) :func:`operator_of_linear_map` evaluates ``f`` on: 4096, about a
#: second here for a map that costs ``O(n d)`` per call.
MAX_PROBES = 4096
#: Most entries of ``W`` that :func:`two_route_gap` builds and applies: ``2^25`` (256 MiB; about a
#: second here with the layer's two routes), ``n`` up to 2896 for ``p = d = 2``.
MAX_GAP_ENTRIES = 2**25


def operator_of_linear_map(f: Callable[[np.ndarray], np.ndarray], n: int, d: int,
                           max_bytes: int | None = None) -> np.ndarray:
    """Recover the interaction operator of a *linear* sequence map by probing it with unit tokens.

    Derived in Chapter 1, Proposition 1.2 (a linear map has one input-independent operator).

    For a linear map the operator is unique and equals the Jacobian,
    ``W[i, j] = d y_i / d x_j``: column ``c`` of ``W[i, j]`` is output ``i`` when the
    input is the unit vector ``e_c`` placed at position ``j`` and zeros elsewhere.
    All ``n * d`` probes are evaluated by ``f`` one at a time; at most ``MAX_PROBES``
    (4096) of them, else a ``ValueError`` naming ``n`` and ``d``.

    Parameters
    ----------
    f : callable
        Maps an array of shape ``(n, d)`` to an array of shape ``(n, p)``. Must be linear.
    n, d : int
        Sequence length and token width.
    max_bytes : int, optional
        Largest ``W`` to build, in bytes; default 1 GiB (``MAX_ARRAY_BYTES`` of
        ``ssmheads._validate``). The check runs before the first probe (with ``p = 1``)
        and again once ``f`` has shown its output width ``p``.

    Returns
    -------
    W : ndarray, shape (n, n, p, d)
    """
    if not callable(f):
        raise ValueError(f"f must be callable (a linear map from (n, d) arrays to (n, p) arrays); "
                         f"got {type(f).__name__}")
    n = check_positive_int("n", n)
    d = check_positive_int("d", d)
    instead = "probe a smaller n, or read the few blocks you need from f directly"
    check_allocation("n and d", (n, n, 1, d), "the operator W", instead, max_bytes)
    if n * d > MAX_PROBES:
        raise ValueError(f"n and d too large: n d = {n} x {d} = {n * d} unit probes, each a call of f on an (n, d) "
                         f"input, above the limit of {MAX_PROBES} (the work grows like (n d)^2); {instead}")
    W = None
    for j in range(n):
        for c in range(d):
            probe = np.zeros((n, d))
            probe[j, c] = 1.0
            try:
                y = f(probe)
            except Exception as exc:
                raise ValueError(f"f raised {type(exc).__name__} on the unit probe at position {j}, component "
                                 f"{c} (an input of shape (n, d) = ({n}, {d})): {exc}") from exc
            try:
                y = as_array("f(X)", y, 2, "(n, p)")
            except ValueError as exc:
                raise ValueError(f"f must return a finite array of shape (n, p) = ({n}, p); {exc}") from None
            if y.shape[0] != n or y.shape[1] < 1:
                raise ValueError(f"f must return an array of shape (n, p) = ({n}, p) with p >= 1; "
                                 f"got shape {y.shape}")
            if W is None:
                check_allocation("n, d and the output width p of f", (n, n, y.shape[1], d), "the operator W",
                                 instead, max_bytes)
                W = np.empty((n, n, y.shape[1], d))
            elif y.shape[1] != W.shape[2]:
                raise ValueError(f"f must return arrays of one shape (n, p); got p = {W.shape[2]} for the "
                                 f"first probe and shape {y.shape} later")
            W[:, j, :, c] = y
    return W


def trivial_interaction_form(Y, X, max_bytes: int | None = None) -> np.ndarray:
    """Proposition 1.1: an interaction form for *any* map, ``W_ij = y_i x_j^T / ||X||_F^2``.

    Derived in Chapter 1, Proposition 1.1.

    Given the output ``Y = F(X)`` of an arbitrary map on a nonzero input ``X``, this
    operator satisfies ``sum_j W_ij x_j = y_i``. It shows that "the" operator of a
    nonlinear map only exists relative to a construction.

    Parameters
    ----------
    Y : array, shape (n, p)
        Output of the map on ``X``.
    X : array, shape (n, d)
        A nonzero input.
    max_bytes : int, optional
        Largest ``W`` to build, in bytes; default 1 GiB (``MAX_ARRAY_BYTES`` of
        ``ssmheads._validate``).

    Returns
    -------
    W : ndarray, shape (n, n, p, d)
    """
    Y = as_array("Y", Y, 2, "(n, p)")
    X = as_array("X", X, 2, "(n, d)")
    check_size("Y", Y, 0, X.shape[0], "the sequence length n of X")
    for name, arr in (("Y", Y), ("X", X)):
        if arr.shape[0] < 1 or arr.shape[1] < 1:
            raise ValueError(f"{name} has shape {arr.shape}; n and its width must be at least 1")
    check_allocation("X", (X.shape[0], X.shape[0], Y.shape[1], X.shape[1]), "the operator W",
                     "use a shorter sequence", max_bytes)
    top = float(np.max(np.abs(X)))
    if top == 0.0:
        raise ValueError("X must be nonzero: the construction divides by ||X||_F^2")
    with np.errstate(over="ignore", under="ignore"):
        scale = float(np.sum(X * X))
    if 1e-290 < scale < 1e290:
        return np.einsum("ip,jd->ijpd", Y, X) / scale
    # ||X||^2 would overflow or underflow: W_ij = y_i (x_j / s)^T / (s ||X / s||^2), s = max |X|
    unit = X / top
    with np.errstate(over="ignore", invalid="ignore"):
        W = np.einsum("ip,jd->ijpd", Y / top, unit) / float(np.sum(unit * unit))
    if not np.all(np.isfinite(W)):
        raise ValueError(f"Y and X have incompatible scales: max |Y| / ||X||_F = "
                         f"{np.max(np.abs(Y)):.3e} / {top:.3e} overflows the largest float")
    return W


def two_route_gap(layer, X) -> float:
    """Relative gap between a layer's direct computation and its operator route.

    Used in Chapter 1, Section 1.5.

    Returns ``max |forward(X) - W(X) X| / max |forward(X)|`` (the denominator is
    taken as 1 when the output is zero), where ``W(X) = layer.interaction(X)``.
    It is at rounding level when the derivation of ``W`` is right, and it tests
    the derivation only where the two routes differ: the routes of a softmax
    :class:`~ssmheads.models.MultiHeadAttention` share the weights ``alpha``, so
    a wrong score scale or mask would pass (Chapter 1 checks the weights
    against their formula separately). ``W`` may hold at most ``MAX_GAP_ENTRIES``
    (``2^25``) entries, else a ``ValueError`` naming ``X``.

    Parameters
    ----------
    layer : object with ``forward(X)`` and ``interaction(X)``
        Any layer of :mod:`ssmheads.models`.
    X : array, shape (n, d)

    Returns
    -------
    float
    """
    if not (hasattr(layer, "forward") and hasattr(layer, "interaction")):
        raise ValueError(f"layer must have forward(X) and interaction(X) methods; got {type(layer).__name__}")
    shape = np.shape(X)
    if len(shape) == 2 and isinstance(getattr(layer, "p", None), int):
        entries = float(shape[0]) ** 2 * layer.p * shape[1]
        if entries > MAX_GAP_ENTRIES:
            raise ValueError(f"X has {shape[0]} tokens: the operator W (n, n, p, d) of the gap would have "
                             f"{entries:.3g} entries, above the limit of {MAX_GAP_ENTRIES:.3g} (256 MiB) of "
                             "two_route_gap; use a shorter X")
    # the operator first: its size guards refuse a long X before the direct route has run
    via_operator = apply_interaction(layer.interaction(X), X)
    direct = as_array("layer.forward(X)", layer.forward(X), 2, "(n, p)")
    if direct.shape != via_operator.shape:
        raise ValueError(f"layer.forward(X) has shape {direct.shape} but layer.interaction(X) X has shape "
                         f"{via_operator.shape}")
    scale = float(np.max(np.abs(direct))) if direct.size else 0.0
    scale = scale if scale > 0 else 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        gap = float(np.max(np.abs(direct - via_operator))) / scale
    if not np.isfinite(gap):  # the difference overflowed: form it after scaling
        gap = float(np.max(np.abs(direct / scale - via_operator / scale)))
    return gap
