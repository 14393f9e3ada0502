"""Example models used throughout the book; every random one is seeded.

SSMs are returned as :class:`~ssmheads.models.LinearSSM`, attention layers as
:class:`~ssmheads.models.MultiHeadAttention`. ``gallery`` builds one of each
layer of Chapter 1 with matching widths, for figures and explorers.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_array, check_allocation, check_positive_int, check_seed, check_total
from .models import Convolution, LinearSSM, MultiHeadAttention, PositionwiseLinear

__all__ = [
    "rotation_matrix",
    "rotation",
    "diagonal",
    "random_stable",
    "random_attention",
    "jordan",
    "plateau",
    "random_with_lag_rank",
    "gallery",
    "GALLERY_NAMES",
]


#: Largest state size of the random systems, whose eigenvalues are computed (O(N^3)): a few seconds.
MAX_RANDOM_STATE = 2048


#: Most heads :func:`random_attention` draws.
MAX_RANDOM_HEADS = 4096


def _check_state_size(name: str, N: int) -> None:
    if N > MAX_RANDOM_STATE:
        raise ValueError(f"{name} must be at most {MAX_RANDOM_STATE} (drawing the system needs the eigenvalues "
                         f"of an {name} x {name} matrix, O({name}^3) work); got {N}")


def _finite_scalar(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a real number; got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real number; got {value!r}") from exc
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return x


def rotation_matrix(theta: float) -> np.ndarray:
    """The 2 x 2 rotation by angle ``theta`` (radians), shape ``(2, 2)``.

    Used in Chapter 1, Section 1.4.
    """
    return _rotation_matrix(_finite_scalar("theta", theta))


def _rotation_matrix(theta: float) -> np.ndarray:
    """Core of :func:`rotation_matrix` for a checked float ``theta``."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def rotation(theta: float, rho: float = 1.0) -> LinearSSM:
    """The damped rotation SSM ``A = rho R(theta)``, ``B = C = I_2`` (so ``N = d = p = 2``).

    Used in Chapter 1, Section 1.4.

    Its lag operators are ``K_l = rho^l (cos(l theta) I + sin(l theta) J)`` with
    ``J = R(pi/2)``: they sweep a 2-dimensional span unless ``theta`` is a multiple of pi.

    Parameters
    ----------
    theta : float
        Rotation angle per step, in radians.
    rho : float
        Damping; the spectral radius is ``|rho|``.
    """
    theta, rho = _finite_scalar("theta", theta), _finite_scalar("rho", rho)
    return LinearSSM(rho * _rotation_matrix(theta), np.eye(2), np.eye(2))


def diagonal(eigenvalues, B=None, C=None) -> LinearSSM:
    """The SSM with ``A = diag(eigenvalues)``; ``B`` and ``C`` default to the identity.

    Used in Chapter 2.

    Parameters
    ----------
    eigenvalues : array, shape (N,)
        Real eigenvalues (repeats allowed).
    B : array, shape (N, d), optional
    C : array, shape (p, N), optional
    """
    lam = as_array("eigenvalues", eigenvalues, 1, "(N,)")
    if lam.size < 1:
        raise ValueError("eigenvalues must contain at least one value; got an empty array")
    N = lam.size
    for name, M, axis in (("B", B, 0), ("C", C, 1)):
        shape = np.shape(M) if M is not None else None
        if shape is not None and len(shape) == 2 and shape[axis] != N:
            raise ValueError(f"{name} has shape {shape}, but axis {axis} must be {N}, the number of eigenvalues "
                             f"(eigenvalues has shape {lam.shape}, so the state size is N = {N})")
    check_allocation("eigenvalues", (N, N), "the transition matrix A", "use fewer eigenvalues")
    return LinearSSM(np.diag(lam), np.eye(N) if B is None else B, np.eye(N) if C is None else C)


def random_stable(N: int, d: int, p: int, rho: float = 0.9, seed: int = 0) -> LinearSSM:
    """A random SSM whose transition has spectral radius exactly ``rho``.

    Used in Chapter 1, Section 1.3.

    ``A`` is a Gaussian matrix rescaled to spectral radius ``rho``; ``B`` and ``C``
    are Gaussian with variance ``1/N``. Drawn from ``np.random.default_rng(seed)``.

    Parameters
    ----------
    N, d, p : int
        State size, token width, output width.
    rho : float
        Target spectral radius, ``rho > 0``.
    seed : int
    """
    N, d, p = (check_positive_int(name, v) for name, v in (("N", N), ("d", d), ("p", p)))
    _check_state_size("N", N)
    check_allocation("d", (N, d), "B", "use a smaller d")
    check_allocation("p", (p, N), "C", "use a smaller p")
    # A, B, C, their draws and the layer's copies, and the eigenvalue work on A
    check_total("N, d and p", 3.0 * (N * N + N * d + p * N), f"A, B and C (N = {N}, d = {d}, p = {p})",
                "use a smaller N, d or p")
    rho = _finite_scalar("rho", rho)
    if rho <= 0:
        raise ValueError(f"rho must be positive; got {rho}")
    return _random_stable(N, d, p, rho, check_seed(seed))


def _random_stable(N: int, d: int, p: int, rho: float, seed: int) -> LinearSSM:
    """Core of :func:`random_stable`: the draws, on checked sizes, ``rho > 0`` and seed."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((N, N))
    A = G * (rho / np.max(np.abs(np.linalg.eigvals(G))))
    B = rng.standard_normal((N, d)) / np.sqrt(N)
    C = rng.standard_normal((p, N)) / np.sqrt(N)
    return LinearSSM(A, B, C)


def random_attention(H: int, d: int, p: int | None = None, d_k: int | None = None,
                     d_v: int | None = None, seed: int = 0, causal: bool = True,
                     kernel: str = "softmax", scale: float = 1.0) -> MultiHeadAttention:
    """A random multi-head attention layer, drawn from ``np.random.default_rng(seed)``.

    Used in Chapter 1, Section 1.5.

    Entries of every projection are Gaussian with variance ``1 / fan_in``, and the
    query weights are multiplied by ``scale`` (larger ``scale`` gives sharper attention).

    Parameters
    ----------
    H, d : int
        Number of heads (at most ``MAX_RANDOM_HEADS`` = 4096) and token width.
    p, d_k, d_v : int, optional
        Output, key and value widths; default ``d``.
    seed : int
    causal : bool
    kernel : {"softmax", "linear"}
    scale : float
    """
    H, d = check_positive_int("H", H), check_positive_int("d", d)
    if H > MAX_RANDOM_HEADS:
        raise ValueError(f"H must be at most {MAX_RANDOM_HEADS} heads (a layer with more is slow to draw and "
                         f"to run, and no example needs it); got {H}")
    given_name = {name: (name if v is not None else "d") for name, v in (("p", p), ("d_k", d_k), ("d_v", d_v))}
    p, d_k, d_v = (d if v is None else check_positive_int(name, v)
                   for name, v in (("p", p), ("d_k", d_k), ("d_v", d_v)))
    scale = _finite_scalar("scale", scale)
    if not isinstance(kernel, str) or kernel not in ("softmax", "linear"):
        raise ValueError(f"kernel must be 'softmax' or 'linear'; got {kernel!r}")
    for dims in ((("H", H), ("d_k", d_k), ("d", d)), (("H", H), ("d_v", d_v), ("d", d)),
                 (("H", H), ("p", p), ("d_v", d_v))):
        name = max(dims, key=lambda item: item[1])[0]  # the largest extent is the one to blame,
        name = given_name.get(name, name)                # named as the caller passed it (default: d)
        check_allocation(name, tuple(v for _, v in dims), f"a weight array (H = {H} heads)",
                         "use fewer heads or smaller widths")
    # four weight arrays, each drawn then scaled (a temporary) and copied by the layer; the message
    # names the arguments that set the sizes (as the caller passed them)
    sizes = {"H": H, **{given_name[k]: v for k, v in (("d_k", d_k), ("d_v", d_v), ("p", p))}, "d": d}
    names = ", ".join(f"{k} = {v}" for k, v in sizes.items())
    check_total(names, 3.0 * H * (2 * d_k * d + d_v * d + p * d_v), f"the four weight arrays (H = {H} heads)",
                "use fewer heads or smaller widths")
    return _random_attention(H, d, p, d_k, d_v, check_seed(seed), causal, kernel, scale)


def _random_attention(H: int, d: int, p: int, d_k: int, d_v: int, seed: int, causal: bool, kernel: str,
                      scale: float) -> MultiHeadAttention:
    """Core of :func:`random_attention`: the draws, on checked sizes, seed and scale."""
    rng = np.random.default_rng(seed)
    W_Q = rng.standard_normal((H, d_k, d)) * (scale / np.sqrt(d))
    W_K = rng.standard_normal((H, d_k, d)) / np.sqrt(d)
    W_V = rng.standard_normal((H, d_v, d)) / np.sqrt(d)
    W_O = rng.standard_normal((H, p, d_v)) / np.sqrt(H * d_v)
    return MultiHeadAttention(W_Q, W_K, W_V, W_O, causal=causal, kernel=kernel)


def jordan(blocks, B=None, C=None) -> LinearSSM:
    """The SSM whose ``A`` is a direct sum of Jordan blocks; ``B``, ``C`` default to the identity.

    Used in Chapter 2.

    Parameters
    ----------
    blocks : sequence of (eigenvalue, size)
        ``[(0.5, 2), (0.5, 1), (-0.2, 1)]`` gives ``A = J_2(0.5) + [0.5] + [-0.2]``
        (``N = 4``, minimal polynomial of degree 3).
    B : array, shape (N, d), optional
    C : array, shape (p, N), optional
    """
    pairs = []
    try:
        for item in blocks:
            lam, size = item
            pairs.append((_finite_scalar("eigenvalue", lam), check_positive_int("size", size)))
    except (TypeError, ValueError) as exc:
        if str(exc).startswith(("eigenvalue", "size")):
            raise ValueError(f"blocks must be a sequence of (eigenvalue, size) pairs with a finite eigenvalue "
                             f"and an integer size >= 1; {exc}") from None
        raise ValueError(f"blocks must be a sequence of (eigenvalue, size) pairs; got {blocks!r}") from exc
    if not pairs:
        raise ValueError("blocks must contain at least one (eigenvalue, size) pair; got none")
    N = sum(size for _, size in pairs)
    check_allocation("blocks", (N, N), f"A (the block sizes add up to N = {N})", "use smaller blocks")
    A = np.zeros((N, N))
    start = 0
    for lam, size in pairs:
        A[start:start + size, start:start + size] = lam * np.eye(size) + np.eye(size, k=1)
        start += size
    return LinearSSM(A, np.eye(N) if B is None else B, np.eye(N) if C is None else C)


def plateau() -> LinearSSM:
    """The nilpotent system of Example 2.1, where ``k(n)`` stalls and then grows.

    Used in Chapter 2, Example 2.1.

    ``A`` shifts ``e_1 -> e_2 -> e_3 -> 0``, ``B = e_1`` (one input channel) and
    ``C = [[1, 1, 0], [0, 0, 1]]`` (two output channels). Then
    ``K_0 = K_1 = (1, 0)^T`` and ``K_2 = (0, 1)^T``, so ``k(1), k(2), k(3) = 1, 1, 2``.
    """
    A = np.eye(3, k=-1)
    B = np.array([[1.0], [0.0], [0.0]])
    C = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    return LinearSSM(A, B, C)


def random_with_lag_rank(k: int, d: int, p: int, rho: float = 0.9, seed: int = 0) -> LinearSSM:
    """A random stable SSM with state size ``N = k`` whose lag span has dimension exactly ``k``.

    Used in Chapter 2, Proposition 2.2 (attainment).

    ``A = Q diag(lambda) Q^T`` with a random orthogonal ``Q`` and ``k`` distinct
    eigenvalues spread over ``[-rho, rho]``, and Gaussian ``B``, ``C`` (so
    ``k(n) = min(n, k)``: the bound is attained, Proposition 2.2). ``A`` is normal, so ``||A^l|| = rho^l`` and the
    computed lags carry no amplified rounding error (a non-normal ``A`` can make
    rounding look like an extra dimension). Requires ``k <= p * d``, since the span
    lives in the ``pd``-dimensional space of ``p x d`` matrices.

    Parameters
    ----------
    k, d, p : int
        Lag-span dimension, token width, output width; ``1 <= k <= p * d``.
    rho : float
        Spectral radius, ``0 < rho``.
    seed : int
    """
    k, d, p = (check_positive_int(name, v) for name, v in (("k", k), ("d", d), ("p", p)))
    if k > p * d:
        raise ValueError(f"k must be at most p * d = {p * d} (the dimension of the space of p x d matrices); got {k}")
    _check_state_size("k", k)
    check_allocation("d", (k, d), "B", "use a smaller d")
    check_allocation("p", (p, k), "C", "use a smaller p")
    rho = _finite_scalar("rho", rho)
    if rho <= 0:
        raise ValueError(f"rho must be positive; got {rho}")
    rng = np.random.default_rng(check_seed(seed))
    if k == 1:
        lam = np.array([rho])
    else:  # distinct, well separated, signs mixed; the largest modulus is rho
        lam = rho * np.linspace(-1.0, 1.0, k) * rng.choice([-1.0, 1.0])
        lam = np.where(np.abs(lam) < 1e-3, 0.5 * rho / k, lam)
    Q, _ = np.linalg.qr(rng.standard_normal((k, k)))  # random orthogonal eigenvectors
    A = Q @ np.diag(lam) @ Q.T
    B = rng.standard_normal((k, d)) / np.sqrt(k)
    C = rng.standard_normal((p, k)) / np.sqrt(k)
    return LinearSSM(A, B, C)


#: Names of the six layers of Chapter 1's gallery, in the order of :func:`gallery`.
GALLERY_NAMES = (
    "position-wise linear",
    "causal convolution",
    "LTI SSM",
    "softmax attention, 1 head",
    "softmax attention, 4 heads",
    "linear attention",
)


def gallery(d: int = 2, seed: int = 0) -> dict:
    """One layer of each kind in Chapter 1, all mapping width ``d`` to width ``d``.

    Used in Chapter 1, Section 1.6.

    The keys are :data:`GALLERY_NAMES`: a position-wise linear map, a causal
    convolution with 3 taps, a stable LTI SSM (state size ``2d``, spectral radius 0.8),
    softmax attention with 1 and with 4 heads (``scale=2`` for visible structure),
    and causal linear attention with 1 head.

    Parameters
    ----------
    d : int
        Token width (``p = d``).
    seed : int
        Seed for every random draw.

    Returns
    -------
    dict mapping name to layer
    """
    d = check_positive_int("d", d)
    if 2 * d > MAX_RANDOM_STATE:
        raise ValueError(f"d must be at most {MAX_RANDOM_STATE // 2} (the gallery's SSM has state size 2d, "
                         f"and drawing it needs its eigenvalues); got {d}")
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    # d <= MAX_RANDOM_STATE / 2 keeps every draw below the limits the public constructors check
    return {
        "position-wise linear": PositionwiseLinear(rng.standard_normal((d, d)) / np.sqrt(d)),
        "causal convolution": Convolution(rng.standard_normal((3, d, d)) / np.sqrt(d)),
        "LTI SSM": _random_stable(2 * d, d, d, 0.8, seed),
        "softmax attention, 1 head": _random_attention(1, d, d, d, d, seed, True, "softmax", 2.0),
        "softmax attention, 4 heads": _random_attention(4, d, d, d, d, seed + 1, True, "softmax", 2.0),
        "linear attention": _random_attention(1, d, d, d, d, seed + 2, True, "linear", 1.0),
    }
