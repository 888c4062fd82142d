"""Kernel-time noise (the paper's Fig. 19), drawn exactly as the published simulator draws it.

The published simulator perturbs every kernel's three profiled times by one random
ratio per kernel, after its G10 scheduler has planned on the unperturbed times:

* the engine is a C++ ``std::mt19937``; the artifact's configs seed it per model
  (BERT 15, ResNet152 10, SENet154 25) and write ``ran_seed 1`` for the others, which
  the simulator treats as "do not reseed": those draw from the engine's default seed,
  5489 (:data:`DEFAULT_ENGINE_SEED`);
* ``std::uniform_real_distribution<double>(1 - sigma, 1 + sigma)`` is drawn once per
  kernel in kernel order; the ratio is clipped to [0.1, 1.9];
* each of the kernel's times (ideal, all-faulting, outputs-faulting; integer cycles) is
  multiplied by the ratio and truncated back to an integer (``long *= double``).

libstdc++ builds a double in [0, 1) from a 32-bit engine with ``generate_canonical``:
two draws, the first the low word, ``(x1 + x2 * 2^32) / 2^64`` in double arithmetic (a
result of 1.0 after rounding becomes the largest double below 1); the distribution
returns ``u * (b - a) + a``.  :func:`uniform_real` does the same operations in numpy on
the raw 32-bit outputs of numpy's MT19937 bit generator, whose state is set the way
``std::mt19937(seed)`` initialises its own (``init_genrand``), so the ratios are the
same doubles bit for bit (``tests/test_noise.py`` compares them with a compiled C++
program).

Config: ``noise.kernel_time_sigma`` (0: no noise) and ``noise.seed`` (-1: the
published per-model seed, :func:`published_seed`).
"""
from __future__ import annotations

import numpy as np

# std::mt19937's default seed (what a default-constructed engine starts from)
DEFAULT_ENGINE_SEED = 5489

# ran_seed per model in the artifact's genconfigs.py (the rest: 1, i.e. not reseeded)
PUBLISHED_SEEDS = {"bert_base": 15, "resnet152": 10, "senet154": 25}

RATIO_MIN, RATIO_MAX = 0.1, 1.9     # the artifact's clip of a drawn ratio

_MT_N = 624


def published_seed(model: str) -> int:
    """The engine seed the published Fig. 19 runs of ``model`` used."""
    return PUBLISHED_SEEDS.get(model, DEFAULT_ENGINE_SEED)


def mt19937_uint32(seed: int, n: int) -> np.ndarray:
    """The first ``n`` outputs of ``std::mt19937(seed)`` (uint64 array of 32-bit values)."""
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed = {seed}: must be in [0, 2^32)")
    key = np.empty(_MT_N, np.uint64)
    x = int(seed)
    key[0] = x
    for i in range(1, _MT_N):                       # init_genrand, as std::mt19937's constructor
        x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
        key[i] = x
    bitgen = np.random.MT19937()
    bitgen.state = {"bit_generator": "MT19937", "state": {"key": key.astype(np.uint32), "pos": _MT_N}}
    return np.asarray(bitgen.random_raw(int(n)), np.uint64)


def uniform_real(seed: int, n: int, low: float, high: float) -> np.ndarray:
    """``n`` draws of libstdc++'s ``uniform_real_distribution<double>(low, high)`` on ``mt19937(seed)``."""
    raw = mt19937_uint32(seed, 2 * int(n)).astype(np.float64)
    lo_word, hi_word = raw[0::2], raw[1::2]
    canonical = (lo_word + hi_word * 4294967296.0) / 18446744073709551616.0
    canonical = np.where(canonical >= 1.0, np.nextafter(1.0, 0.0), canonical)
    return canonical * (float(high) - float(low)) + float(low)


def kernel_time_ratios(n_kernels: int, sigma: float, seed: int) -> np.ndarray:
    """One clipped ratio per kernel, in kernel order (all 1.0 when ``sigma`` is 0)."""
    if sigma == 0:
        return np.ones(int(n_kernels))
    ratios = uniform_real(seed, n_kernels, 1.0 - sigma, 1.0 + sigma)
    return np.clip(ratios, RATIO_MIN, RATIO_MAX)


def perturb_cycles(cycles: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    """``long *= double`` per kernel: the product in double, truncated toward zero."""
    return (np.asarray(cycles, np.int64).astype(np.float64) * ratios).astype(np.int64)


def noisy_kernel_cycles(t11, t10, t00, *, sigma: float, seed: int):
    """(t11, t10, t00) with the noise applied; the inputs when ``sigma`` is 0."""
    if sigma == 0:
        return t11, t10, t00
    ratios = kernel_time_ratios(len(t11), sigma, seed)
    return perturb_cycles(t11, ratios), perturb_cycles(t10, ratios), perturb_cycles(t00, ratios)


def resolve_seed(seed: int, model: str) -> int:
    """``noise.seed``, or the published seed of ``model`` when it is -1."""
    return published_seed(model) if int(seed) == -1 else int(seed)
