"""Eviction rules of the page-level replay, registered by name.

A rule is one compiled ``_evict.Evictor`` subclass plus one :func:`register` line here.
:func:`resolve` turns a name or ``FILE.py:FUNC`` into an :class:`EvictionRule` once; every
later step reads the rule's fields, and the Python layer builds the compiled evictor
(:meth:`EvictionRule.evictor`) that the replay receives.  Built in:

=========  ==================================================================================
arrival    the oldest-arrived GPU page not in transfer: the published simulator's "LRU"
           (its recency list is touched only on arrival, so it is FIFO by arrival).  Base
           UVM and G10's fallback.  ``lru`` is accepted as the artifact's name for it, with
           a warning that says so (:data:`ALIAS_MEANING`): it is not least recently used.
deepum     DeepUM+: arrival order skipping the tensors of the next ``scheduler.prefetch_degree``
           kernels; dead pages dropped without a transfer.
belady     Belady's MIN at tensor granularity: the resident tensor whose next use is farthest
           in the future (dead data first), its pages in arrival order; dead pages dropped.
=========  ==================================================================================

A user's rule is a Python function in a file, ``FILE.py:FUNC``, compiled with numba into a
C callback that the compiled ``ScoreEvictor`` calls without the GIL::

    def score(now_kernel, tensor, resident_pages, size_pages, last_use_kernel,
              next_use_kernel, arrival_seq):
        return next_use_kernel          # Belady's rule: farthest next use first

Whenever the replay needs a victim and has no tensor to take pages from (at the first
eviction after each kernel begin, and when the tensor being evicted has no page left on
the GPU), it calls the function once for every tensor with pages on the GPU that are not
in transfer, and evicts the tensor with the highest score (ties: the tensor that came to
the GPU first), its pages oldest first.  The running kernel's tensors are never offered: a
kernel starts only once all its pages are on the GPU, so evicting one of them re-queues it as a
fault, and a rule that preferred them (largest tensor first) evicted the waiting kernel's own
pages for ever.  Only a fault that finds nothing else (every other page on the GPU queued to
leave) takes them, the oldest-arrived tensor first; a prefetch then waits.  The arguments, all
integers:

* ``now_kernel``: the running kernel's index in the iteration (0 .. K-1);
* ``tensor``: the tensor's index in the trace;
* ``resident_pages``: its pages on the GPU and not in transfer (> 0); ``size_pages``: all its pages;
* ``last_use_kernel``: the latest kernel at or before now that uses it; uses in the previous
  iteration count as k - K; ``-NEVER`` if none;
* ``next_use_kernel``: the first kernel at or after now that uses it; uses in the next
  iteration count as K + k; ``NEVER`` (= 2**62, beyond every real one) when it has no use
  left in the simulated iterations.  Dead data (a tensor past its last read) has no use
  left in its iteration: its next use is its rebirth, K + its first kernel, after every
  tensor still used in the iteration;
* ``arrival_seq``: increases each time a tensor comes to the GPU with no page there before
  (smaller = arrived earlier).

Pages of a tensor whose data is dead at the running kernel are dropped without a transfer;
others go to host memory (to the SSD once host memory is full or its slot quota spent).
The function must be compilable by numba in nopython mode and return a number.  It is
compiled once and cached on disk (numba's cache, beside the file or in
``NUMBA_CACHE_DIR``), so a second run pays no compilation.  A call that raises (an
``assert``, a division by zero) or returns NaN does not print a traceback per call: its
score counts as the lowest until the next kernel begins, where the run stops and is
refused as bad input (exit 2), naming the function, the first such call's arguments and
what the function raises for them (:func:`check_score_failures`).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ._evict import NEVER, ArrivalOrderEvictor, DeepUMWindowEvictor, ScoreEvictor
from ._pagetable import PageTable
from ..errors import EvictionRuleError, ScoreFunctionError, guarded, is_outside
from ..files import import_user_file, is_user_file_spec

SCORE_ARGUMENTS = ("now_kernel", "tensor", "resident_pages", "size_pages", "last_use_kernel",
                   "next_use_kernel", "arrival_seq")
SCORE_SIGNATURE = "float64(int64, int64, int64, int64, int64, int64, int64)"


@dataclass(frozen=True, eq=False)
class EvictionRule:
    """An eviction rule, resolved once (:func:`resolve`) from its name or ``FILE.py:FUNC``.

    Every step after resolution reads its fields, never its name: the replay receives the
    compiled evictor :meth:`evictor` builds, the configuration check reads :attr:`window`.
    A rule equals its label (``resolve("lru") == "arrival"``).
    """

    label: str                     # how results name it: the registered name, or file.py:FUNC
    description: str
    build: Callable = field(repr=False)   # (page table, constants, arrays) -> _evict.Evictor
    arrival_order: bool = False    # the oldest-arrived page first, every victim transferred: the far-
    #                                fault handler's own least-recently-migrated order stands in for it
    #                                (fault.victims = policy), and no dead page is dropped
    window: bool = False           # DeepUM+'s window: reads scheduler.prefetch_degree (constants "window")
    future_knowledge: bool = False  # reads the tensors' next uses (Belady's MIN; a user's score function)
    score: UserScore | None = None  # a user's score function (None: a registered rule)

    @property
    def name(self) -> str:
        return self.label

    @property
    def user(self) -> bool:
        """A user's score function (``FILE.py:FUNC``)."""
        return self.score is not None

    def evictor(self, consts: dict, arrays: dict):
        """The compiled evictor for one replay, on a new page table of the replay's inputs
        (``simulator.replay_inputs``); a replay takes it as its ``evictor``."""
        return self.build(page_table(consts, arrays), consts, arrays)

    def __eq__(self, other):
        if isinstance(other, EvictionRule):
            return (self.label, self.score) == (other.label, other.score)
        if isinstance(other, str):
            return self.label == other
        return NotImplemented

    def __hash__(self):
        return hash(self.label)

    def __str__(self):
        return self.label


EvictorEntry = EvictionRule        # the registry's entries were named so before they were rules

EVICTORS: dict[str, EvictionRule] = {}
ALIASES = {"lru": "arrival"}       # the artifact's name for the arrival-order rule
# what an alias means, said when a user names a rule by it (Simulator.run warns with it once)
ALIAS_MEANING = {
    "lru": "eviction rule 'lru' is the published simulator's name for 'arrival': the oldest-arrived GPU page "
           "first (FIFO by arrival: its recency list is touched only when a page arrives), not least recently "
           "used; for least recently used by last use give least_recently_used.py:score",
}


def register(name: str, description: str, build: Callable, **flags) -> None:
    """Register a rule: ``build(page table, constants, arrays)`` returns its compiled evictor;
    ``flags``: :class:`EvictionRule`'s ``arrival_order``, ``window``, ``future_knowledge``."""
    if name in EVICTORS or name in ALIASES:
        raise ValueError(f"eviction rule {name!r} registered twice")
    if is_outside(build):       # a plug-in's builder: its exception names it (PluginError)
        build = guarded(build)
    EVICTORS[name] = EvictionRule(name, description, build, **flags)


def page_table(consts: dict, arrays: dict) -> PageTable:
    """A new page table for the replay of ``simulator.replay_inputs``'s constants and arrays."""
    tensors = {"first": arrays["t_first"], "pages": arrays["t_np"], "is_global": arrays["t_global"],
               "birth": arrays["t_birth"], "death": arrays["t_death"]}
    return PageTable(tensors, consts["gpu_pages"], consts["host_pages"])


def tensor_uses(consts: dict, arrays: dict) -> dict:
    """Every tensor's uses (kernel indices, ascending, unique) as CSR: {"off", "kernels"}."""
    K, T = int(consts["kernels"]), int(consts["tensors"])
    parts_k, parts_t = [], []
    for off, ts in ((arrays["in_off"], arrays["in_t"]), (arrays["out_off"], arrays["out_t"])):
        off = np.asarray(off, np.int64)
        parts_k.append(np.repeat(np.arange(K, dtype=np.int64), np.diff(off)))
        parts_t.append(np.asarray(ts, np.int64))
    k = np.concatenate(parts_k)
    t = np.concatenate(parts_t)
    pairs = np.unique(t * (K + 1) + k)
    t_sorted, k_sorted = pairs // (K + 1), pairs % (K + 1)
    off = np.zeros(T + 1, np.int64)
    np.cumsum(np.bincount(t_sorted, minlength=T), out=off[1:])
    return {"off": off, "kernels": k_sorted.astype(np.int64)}


def _kernels(arrays):
    return {name: arrays[name] for name in ("in_off", "in_t", "out_off", "out_t")}


register("arrival", "oldest-arrived GPU page first (the published simulator's 'LRU'; FIFO by arrival)",
         lambda pt, c, a: ArrivalOrderEvictor(pt), arrival_order=True)
register("deepum", "DeepUM+: arrival order, skipping the next prefetch_degree kernels' tensors; dead pages dropped",
         lambda pt, c, a: DeepUMWindowEvictor(pt, _kernels(a), int(c["window"])), window=True)
register("belady", "Belady's MIN per tensor: farthest next use first (dead data first), pages in arrival order",
         lambda pt, c, a: ScoreEvictor(pt, tensor_uses(c, a), int(c["kernels"]), int(c["iterations"])),
         future_knowledge=True)


# ---- user rules -----------------------------------------------------------------

@dataclass(frozen=True)
class UserScore:
    """A user's score function compiled to a C callback (``address``)."""

    spec: str                      # FILE.py:FUNC as given
    path: str                      # resolved file
    function: str
    cfunc: object = field(repr=False, compare=False)
    compile_s: float = 0.0         # seconds spent compiling or loading from the cache
    python_function: Callable | None = field(default=None, repr=False, compare=False)   # for error messages

    @property
    def address(self) -> int:
        return self.cfunc.address

    @property
    def name(self) -> str:
        return f"{Path(self.path).name}:{self.function}"


def is_user_rule(spec) -> bool:
    if isinstance(spec, EvictionRule):
        return spec.user
    return isinstance(spec, UserScore) or is_user_file_spec(spec)


def load_score_function(spec: str) -> UserScore:
    """Compile ``FILE.py:FUNC`` with numba; refuses a bad file or function, naming it."""
    import time

    where = f"--eviction {spec}"
    module, path, func_name = import_user_file(spec, where, EvictionRuleError,
                                               module_prefix="g10core_user_eviction_")
    func = getattr(module, func_name, None)
    if func is None or not callable(func):
        raise EvictionRuleError(f"{path}: has no function {func_name!r}")
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is None or len(params) != len(SCORE_ARGUMENTS) or any(
            p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise EvictionRuleError(
            f"{path}: function {func_name} must take exactly {len(SCORE_ARGUMENTS)} positional arguments "
            f"({', '.join(SCORE_ARGUMENTS)})")
    try:
        import numba
    except ImportError:
        raise EvictionRuleError(f"{where}: user eviction rules need numba (pip install numba)") from None
    t0 = time.perf_counter()
    try:
        # the user's function is cached on disk; the guard around it is a closure over it
        # (numba would file a new cache entry for it at every run) and takes ~0.1 s to compile
        user = numba.njit(cache=True)(func)
        compiled = numba.cfunc(SCORE_SIGNATURE, nopython=True)(_guarded(user))
    except Exception as exc:  # noqa: BLE001 - numba's typing/lowering errors
        first = " ".join(str(exc).strip().splitlines()[:1]) or type(exc).__name__
        raise EvictionRuleError(f"{path}: function {func_name} cannot be compiled by numba "
                                f"(nopython mode): {first}") from None
    return UserScore(spec=spec, path=str(path.resolve()), function=func_name, cfunc=compiled,
                     compile_s=time.perf_counter() - t0, python_function=func)


def _guarded(user):
    """The C callback around a user's jitted score function: an exception in it becomes a NaN
    score.  (An exception out of a numba cfunc is printed, traceback and all, at every call,
    and the call returns 0.)"""
    def guarded(now_kernel, tensor, resident_pages, size_pages, last_use_kernel, next_use_kernel,
                arrival_seq):
        try:
            return user(now_kernel, tensor, resident_pages, size_pages, last_use_kernel, next_use_kernel,
                        arrival_seq)
        except Exception:  # noqa: BLE001 - any: the compiled layer reports it after the run
            return math.nan
    return guarded


def user_rule(score: UserScore) -> EvictionRule:
    """The eviction rule of a user's compiled score function."""
    return EvictionRule(
        score.name, f"a user's score function ({score.spec})",
        lambda pt, c, a: ScoreEvictor(pt, tensor_uses(c, a), int(c["kernels"]), int(c["iterations"]), score.cfunc),
        future_knowledge=True, score=score)


def check_score_failures(rule, evictor) -> None:
    """Raise :class:`EvictionRuleError` if a user's score function raised or returned NaN in
    the run ``evictor`` (a ``ScoreEvictor``) served; the message names the function, how many
    calls failed, the first one's arguments and what the function raises for them.
    ``rule``: an :class:`EvictionRule` (or its :class:`UserScore`)."""
    spec = rule.score if isinstance(rule, EvictionRule) else rule
    failure = evictor.first_failure() if isinstance(spec, UserScore) and isinstance(evictor, ScoreEvictor) else None
    if failure is None:
        return
    count, args = failure
    shown = ", ".join(f"{name}={value}" for name, value in zip(SCORE_ARGUMENTS, args))
    what = "raised an exception or returned NaN"
    error, reason = "an exception or NaN", ""
    if spec.python_function is not None:
        try:
            value = spec.python_function(*args)
        except Exception as exc:  # noqa: BLE001 - the user's code: any exception is the answer
            what = f"raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
            error, reason = type(exc).__name__, str(exc)
        else:
            try:
                nan = math.isnan(float(value))
            except (TypeError, ValueError, OverflowError):
                nan = False
            what = ("returned NaN" if nan else
                    f"raised an exception compiled by numba (in Python it returns {value!r} here)")
            error = "NaN" if nan else "an exception compiled by numba"
    raise ScoreFunctionError(Path(spec.path).name, spec.function, error, reason, text=(
        f"--eviction {spec.spec}: {spec.function}({shown}) {what}; a score function must "
        f"return a number for every input ({count} call(s) of this run failed)"))


def resolve(spec) -> EvictionRule:
    """The :class:`EvictionRule` of ``spec``: a registered name (or alias), ``FILE.py:FUNC``
    (compiled here, once), a :class:`UserScore`, or a rule (returned as it is); refuses
    unknown names."""
    if isinstance(spec, EvictionRule):
        return spec
    if isinstance(spec, UserScore):
        return user_rule(spec)
    if not isinstance(spec, str):
        raise EvictionRuleError(f"eviction rule: expected a name or FILE.py:FUNC, got {type(spec).__name__}")
    if is_user_rule(spec):
        return user_rule(load_score_function(spec))
    name = ALIASES.get(spec, spec)
    if name not in EVICTORS:
        raise EvictionRuleError(f"unknown eviction rule {spec!r}; known: {', '.join(names())}, "
                                "or FILE.py:FUNC (a score function compiled with numba)")
    return EVICTORS[name]


def names() -> list[str]:
    return sorted(EVICTORS)


def label(spec) -> str:
    """How results name a rule: its registered name or FILE.py:FUNC."""
    if isinstance(spec, (EvictionRule, UserScore)):
        return spec.name
    return ALIASES.get(spec, spec) if isinstance(spec, str) else str(spec)


_LEGACY_CODES = {0: "arrival", 1: "deepum"}


def build_evictor(spec, pt, consts: dict, arrays: dict):
    """The compiled evictor for ``spec`` (a rule, a name, an old integer code, or a UserScore)
    on the page table ``pt``."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        spec = _LEGACY_CODES[int(spec)]
    return resolve(spec).build(pt, consts, arrays)


__all__ = ["NEVER", "EVICTORS", "EvictionRule", "EvictionRuleError", "UserScore", "build_evictor",
           "load_score_function", "names", "register", "resolve", "tensor_uses", "label", "is_user_rule",
           "check_score_failures", "page_table", "user_rule"]
