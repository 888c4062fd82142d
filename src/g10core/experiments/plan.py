"""The planner: the least value of a configuration key that reaches a fraction of ideal.

"How much SSD bandwidth per GPU does this model need under G10 to run at 80 % of ideal?"
:func:`plan` answers it by running the simulator at chosen values of one key (``--vary``)
between ``lo`` and ``hi``, every other key fixed, and searching for the least value whose
run's fraction of ideal (``normalized_performance = ideal / time``; a failed run counts 0)
is at least ``target``:

1. **Scan.**  ``samples`` values across the range (geometrically spaced when ``lo > 0``,
   the way bandwidths and capacities are compared; else evenly), both ends included.
   If the fraction falls between two samples (by more than :data:`FLAT`, 0.001 of ideal) the
   model is not monotone in the key here, and the plan says so (``monotone: false``, a note
   naming where, and whether a larger value falls below the target again); it still answers.
   A fall between the bisection's runs (the scan did not see it) is said the same way.
2. **Answer from the scan.**  The target met at ``lo``: ``lo`` is the minimum (``met_at_lo``),
   only an upper bound of the least value (unless ``lo`` is the least value the key takes, 0
   or its inclusive minimum: then every value meets it, an exact answer).  Met by no sample:
   the range cannot reach it (``minimum`` None).  In both the range does not bracket the
   target (``bracketed`` False: the result says so in :attr:`PlanResult.unbracketed`, one
   line, which ``g10sim plan`` prints with exit 2; :func:`plan` returns the result, it does
   not raise).  Else the least sample that meets it and the sample before it bracket the
   crossing.
3. **Bisection** of that bracket (geometric midpoints when ``lo > 0``) until it is narrower
   than ``tolerance`` (relative, 1 % by default) of its upper end; with ``jobs`` workers each
   step runs ``jobs`` points at once and cuts the bracket into ``jobs + 1`` parts.  The
   minimum is the bracket's upper end: the least value run that meets the target, with the
   crossing in ``(bracket[0], bracket[1]]``.  Where the scan found the model not monotone
   the bisection refines the first crossing; a larger value may fall below the target again
   (the note names where), and ``sampled_minimum`` keeps the least sampled value that met it.

Values are rounded to a few significant digits (integers for an integer key) so that runs
have readable keys and a plan run twice asks for the same runs.

With two keys (``vary`` of two entries) the plan is a **frontier**: for each of ``points``
values of the first key on a grid across its range, the least value of the second by the
search above; the searches advance in step, so their runs share the workers.  A frontier is
bracketed when at least one of its points is: grid values where the second key's range is
not reached, or met at its low end, are part of the answer (the frontier's shape) as long as
one point locates a crossing; where none does, nothing of the frontier was found.

Every run goes through the sweep executors (:func:`g10core.experiments.sweep.run_sweep`:
this process, local processes or Dask) into a results store (``out``; a temporary one when
not given).  Runs are keyed as a sweep's are, so a plan over a store that has its runs
(an earlier plan, a sweep of the same configurations) runs nothing again.

Keys a plan refuses (:class:`~g10core.errors.ConfigError`, one line naming the key): unknown
keys; keys that are not numbers or take one of a few values (``choices``); keys the policy
does not read (:func:`g10core.policies.modelled.ignored_parameters`, and the policy's
``not_applicable``); keys that are part of what a preset measures rather than the machine
(:data:`STRUCTURE_KEYS`); a key also given in ``sets``; a range whose ends the
configuration refuses.
"""
from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..config import DEFAULT_PRESET, SimConfig, resolve
from ..errors import ConfigError, InputError, SimulationError, did_you_mean
from ..params import SECTIONS, declaration
from . import sweep as sw

PLAN_SCHEMA = "g10core-plan"
PLAN_SCHEMA_VERSION = 1

# keys a plan does not vary although they are numbers: they set what is measured or how, not the machine
STRUCTURE_KEYS = {
    "run.iterations": "the number of iterations simulated sets what is measured (the steady state after "
                      "the cold start), not the machine",
    "gpu.frequency_GHz": "the simulation clock moves results only by rounding to whole cycles (the GPU's "
                         "speed is gpu.model's)",
    "gpu.page_size_bytes": "traces are laid out in 4 KiB pages: only 4096 is supported",
    "noise.kernel_time_sigma": "kernel-time noise is a perturbation of the trace, not a resource",
    "noise.seed": "a random seed is not a resource",
}

TOLERANCE = 0.01     # relative width of the final bracket
SAMPLES = 5          # values of the scan, both ends included
POINTS = 5           # values of the first key of a frontier
# a fraction that falls by less than this between samples is flat, not falling (a run at saturation
# wiggles by a few 1e-4 of ideal: the slots' rounding)
FLAT = 1e-3


@dataclass(frozen=True)
class Axis:
    """A key the plan varies and its range (:func:`check_axis` builds it, checked)."""

    key: str
    lo: float
    hi: float
    integer: bool
    floor: bool = False      # lo is the least value the key takes (0, or its inclusive minimum)

    @property
    def geometric(self) -> bool:
        return self.lo > 0

    def grid(self, n: int, digits: int) -> list:
        """``n`` values from ``lo`` to ``hi`` (both included), rounded, distinct."""
        if n < 2:
            raise ValueError(f"{self.key}: at least 2 values across the range, not {n}")
        out = []
        for i in range(n):
            f = i / (n - 1)
            x = (self.lo * (self.hi / self.lo) ** f if self.geometric else self.lo + f * (self.hi - self.lo))
            x = self.lo if i == 0 else self.hi if i == n - 1 else self.round(x, digits)
            if not out or x > out[-1]:
                out.append(x)
        return out

    def between(self, lo, hi, k: int, digits: int) -> list:
        """Up to ``k`` values strictly inside ``(lo, hi)`` cutting it into ``k + 1`` parts, rounded."""
        out = []
        for i in range(1, k + 1):
            f = i / (k + 1)
            x = lo * (hi / lo) ** f if self.geometric and lo > 0 else lo + f * (hi - lo)
            x = self.round(x, digits)
            if lo < x < hi and (not out or x > out[-1]):
                out.append(x)
        return out

    def round(self, x: float, digits: int):
        if self.integer:
            return int(round(x))
        return float(f"{x:.{digits}g}")

    def narrow(self, lo, hi, tolerance: float) -> bool:
        """Is ``(lo, hi]`` narrow enough to stop?"""
        if self.integer:
            return hi - lo <= max(1, math.floor(tolerance * hi))
        return hi - lo <= tolerance * hi


class _Search:
    """The least value of ``axis`` reaching ``target``, the other keys at ``fixed`` (module docstring)."""

    def __init__(self, axis: Axis, target: float, tolerance: float, samples: int, digits: int, fixed: dict):
        self.axis, self.target, self.tolerance, self.digits = axis, target, tolerance, digits
        self.fixed = dict(fixed)
        self.scan = axis.grid(samples, digits)
        self.seen: dict = {}              # value -> fraction of ideal
        self.phase = "scan"
        self.bracket: tuple | None = None
        self.monotone = True              # over every run (the scan's and the bisection's)
        self.falls: list = []             # (value, fraction, next value, its fraction): where the scan fell
        self.run_falls: list = []         # where it fell between runs of the bisection (the scan did not see)
        self.minimum = None
        self.sampled_minimum = None
        self.met_at_lo = False

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def propose(self, width: int) -> list:
        """The values to run next (none when done)."""
        if self.phase == "scan":
            return [v for v in self.scan if v not in self.seen]
        if self.phase == "bisect":
            return self.axis.between(*self.bracket, max(1, width), self.digits)
        return []

    def feed(self, fractions: dict) -> None:
        """Take the fractions of the values :meth:`propose` gave; advance."""
        self.seen.update(fractions)
        if self.phase == "scan":
            vals = self.scan
            fr = [self.seen[v] for v in vals]
            for (a, fa), (b, fb) in zip(zip(vals, fr), zip(vals[1:], fr[1:])):
                if fb < fa - FLAT:
                    self.monotone = False
                    self.falls.append((a, fa, b, fb))
            meets = [v for v, f in zip(vals, fr) if f >= self.target]
            if not meets:
                self.phase = "done"
                return
            first = meets[0]
            self.sampled_minimum = first
            if first == vals[0]:
                self.minimum, self.met_at_lo, self.phase = first, True, "done"
                return
            self.bracket = (vals[vals.index(first) - 1], first)
            self.phase = "bisect"
        else:
            lo, hi = self.bracket
            inside = sorted(v for v in fractions if lo < v < hi)
            new_lo, new_hi = lo, hi
            for v in inside:
                if self.seen[v] >= self.target:
                    new_hi = v
                    break
                new_lo = v
            self.bracket = (new_lo, new_hi)
        if self.axis.narrow(*self.bracket, self.tolerance) or not self.axis.between(*self.bracket, 1, self.digits):
            self.minimum, self.phase = self.bracket[1], "done"
            self._check_all_runs()

    def _check_all_runs(self) -> None:
        """With the bisection's runs beside the scan's, where does the fraction fall?"""
        vals = sorted(self.seen)
        falls = [(a, self.seen[a], b, self.seen[b]) for a, b in zip(vals, vals[1:])
                 if self.seen[b] < self.seen[a] - FLAT]
        self.run_falls = [f for f in falls if f not in self.falls]
        if self.run_falls:
            self.monotone = False


@dataclass
class PlanResult:
    """What :func:`plan` found (:meth:`to_dict` is the ``--json`` document).

    Attributes
    ----------
    keys : tuple of str
        The keys varied: one, or (grid key, searched key) for a frontier.
    key : str
        The key whose least value is searched (the last of ``keys``).
    target, tolerance : float
        The fraction of ideal to reach; the relative width of the final bracket.
    ranges : dict
        key -> [lo, hi].
    monotone, scan_monotone : bool
        Whether the fraction of ideal never fell (by more than :data:`FLAT`) as the key grew, over
        every run / over the scan's.
    minimum : float or int or None
        The least value found (one key), or the least over the frontier (two keys); None where
        the range cannot reach the target; the range's low end where the target is met there
        (``met_at_lo``: only an upper bound of the least value).
    bracketed : bool
        Whether the range brackets the target: a crossing was located inside it (two keys: at
        one point of the frontier at least).  False where no value in the range reaches it, or
        the low end already does.
    unbracketed : str or None
        Where not bracketed, one line saying so: the key, the range, the target and what the
        runs found (the line ``g10sim plan`` prints on stderr: exit 1 where no value reaches the
        target, ``minimum`` None; exit 2 where the low end already does); else None.
    lo_is_floor : bool
        The low end of ``key``'s range is the least value the key takes (0, or its inclusive
        minimum, e.g. 0.1 for ``ssd.bandwidth_GBps``): the target met there is an exact answer
        (every value of the key meets it), bracketed, not an upper bound.
    runs : list of dict
        Every run of the plan: ``value`` (of ``key``), ``values`` (every varied key),
        ``fraction`` of ideal, ``meets``, ``failed``, ``time_s``, ``ideal_time_s``, ``run_key``
        and ``new`` (run by this plan, not found in the store).
    frontier : list of dict or None
        Two keys: per grid value of the first, ``{keys[0]: value, "minimum", "bracket",
        "monotone", "met_at_lo", "sampled_minimum"}``.
    """

    trace: str
    policy: str
    preset: str
    keys: tuple
    target: float
    tolerance: float
    ranges: dict
    minimum: float | int | None
    bracket: list | None
    monotone: bool
    scan_monotone: bool
    met_at_lo: bool
    sampled_minimum: float | int | None
    notes: list
    runs: list
    frontier: list | None = None
    minimum_at: dict | None = None
    bracketed: bool = True
    unbracketed: str | None = None
    lo_is_floor: bool = False
    store: str | None = None
    wall_s: float = 0.0
    jobs: int = 1
    base_config_hash: str = ""
    fixed: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.keys[-1]

    @property
    def new_runs(self) -> int:
        return sum(1 for r in self.runs if r["new"])

    @property
    def minimum_is_upper_bound(self) -> bool:
        """Is ``minimum`` the range's low end, where the target is already met, and the key
        takes lower values (the least value may be lower)?"""
        return self.minimum is not None and self.met_at_lo and not self.lo_is_floor

    def to_dict(self) -> dict:
        """The plan as the JSON document ``g10sim plan --json`` writes (schema, question, answer, runs).

        Returns
        -------
        dict
            ``frontier`` is present only for a two-key plan.
        """
        d = {"schema": PLAN_SCHEMA, "schema_version": PLAN_SCHEMA_VERSION, "g10core_version": __version__,
             "trace": self.trace, "policy": self.policy, "preset": self.preset, "config_hash": self.base_config_hash,
             "set": self.fixed, "key": self.key, "keys": list(self.keys), "target": self.target,
             "tolerance": self.tolerance, "range": self.ranges[self.key], "ranges": self.ranges,
             "minimum": self.minimum, "minimum_is_upper_bound": self.minimum_is_upper_bound,
             "bracketed": self.bracketed, "unbracketed": self.unbracketed, "lo_is_floor": self.lo_is_floor,
             "bracket": self.bracket,
             "monotone": self.monotone, "scan_monotone": self.scan_monotone, "met_at_lo": self.met_at_lo,
             "sampled_minimum": self.sampled_minimum, "notes": list(self.notes),
             "run_count": len(self.runs), "new_runs": self.new_runs, "wall_s": round(self.wall_s, 3),
             "jobs": self.jobs, "store": self.store, "runs": self.runs}
        if len(self.keys) == 2:
            d["frontier"] = self.frontier
            d["minimum_at"] = self.minimum_at
        return d


# ---- checks ------------------------------------------------------------------------------

def parse_range(text: str, key: str) -> tuple[float, float]:
    """``"LO:HI"`` -> (lo, hi); a ConfigError naming ``key`` otherwise."""
    lo_t, sep, hi_t = str(text).partition(":")
    try:
        if not sep:
            raise ValueError
        lo, hi = float(lo_t), float(hi_t)
    except ValueError:
        raise ConfigError(f"--range {text!r} of {key}: expected LO:HI, two numbers, e.g. 1:64") from None
    return lo, hi


def check_axis(key: str, rng, base: SimConfig, policy_cls, *, sets=()) -> Axis:
    """The axis of ``key`` over ``rng`` ((lo, hi), ``"LO:HI"`` or None: the default range),
    refused with a :class:`ConfigError` naming the key where a plan cannot vary it."""
    from ..policies.modelled import ignored_parameters
    from ..simulator import Simulator

    section, dot, name = key.partition(".")
    if not dot or section not in SECTIONS:
        raise ConfigError(f"--vary {key!r}: expected section.key of a configuration key, e.g. ssd.bandwidth_GBps; "
                          f"sections: {', '.join(SECTIONS)}")
    try:
        p = declaration(key)
    except KeyError:
        names = [f"{section}.{f}" for f in SECTIONS[section].__dataclass_fields__]
        hint = did_you_mean(key, names)
        raise ConfigError(f"--vary {key}: unknown configuration key" + (f"; {hint}" if hint else "")) from None
    if p.type not in (int, float) or p.choices is not None:
        what = ("takes one of " + ", ".join(map(str, p.choices)) if p.choices is not None
                else f"is {'true or false' if p.type is bool else 'a name'}")
        raise ConfigError(f"--vary {key}: not a numeric key (it {what}): a plan bisects a number; compare its "
                          "values with g10sim sweep")
    if key in STRUCTURE_KEYS:
        raise ConfigError(f"--vary {key}: a plan does not vary it: {STRUCTURE_KEYS[key]}")
    if p.min is not None and p.min == p.max:
        raise ConfigError(f"--vary {key}: only {p.min:g} is allowed")
    if any(s.split("=", 1)[0].strip() == key for s in sets):
        raise ConfigError(f"--vary {key}: also given by --set; give it one or the other")
    current = getattr(getattr(base, section), name)
    if rng is None:
        if current is None or current == 0:
            raise ConfigError(f"--vary {key}: its value is {current}; give --range LO:HI")
        lo, hi = current / 16, current * 16
        if p.min is not None and lo <= p.min:
            lo = p.min * 1.001 if p.min_exclusive else p.min
        if p.max is not None:
            hi = min(hi, p.max)
    else:
        lo, hi = parse_range(rng, key) if isinstance(rng, str) else (float(rng[0]), float(rng[1]))
    if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
        raise ConfigError(f"--range {lo:g}:{hi:g} of {key}: LO must be less than HI")
    if lo < 0:
        raise ConfigError(f"--range {lo:g}:{hi:g} of {key}: LO must be >= 0")
    integer = p.type is int
    if integer:
        if not (float(lo).is_integer() and float(hi).is_integer()):
            if rng is None:
                lo, hi = math.ceil(lo), math.floor(hi)
            else:
                raise ConfigError(f"--range {lo:g}:{hi:g} of {key}: {key} is an integer; give whole numbers")
        lo, hi = int(lo), int(hi)
        if not lo < hi:
            raise ConfigError(f"--vary {key}: its range [{lo}, {hi}] holds one value; give --range LO:HI")
    else:
        lo, hi = float(lo), float(hi)
    if rng is None:
        # the default range starts where the simulator can run (a bandwidth / 16 can move no page
        # per transfer slot): double LO until it can
        while lo * 2 < hi and not _runs(base, section, name, lo):
            lo = lo * 2 if integer else float(f"{lo * 2:.4g}")
    # both ends must be configurations the simulator runs (the values between are checked as they run)
    for end, v in (("LO", lo), ("HI", hi)):
        try:
            cfg = base.with_overrides({section: {name: v}})
            Simulator(cfg)
        except ConfigError as exc:
            raise ConfigError(f"--range of {key}: {end} = {v:g} is refused: {' '.join(str(exc).split())}") from None
        unread = set(ignored_parameters(cfg, policy_cls))
        if key in unread or key in policy_cls.not_applicable:
            raise ConfigError(f"--vary {key}: policy {policy_cls.name!r} does not model it (its result is the same "
                              "at every value; docs/guide/configuration.md, Which parameters each policy models)")
    floor = lo == 0 or (p.min is not None and not p.min_exclusive and lo <= p.min)
    return Axis(key, lo, hi, integer, floor)


def _runs(base: SimConfig, section: str, name: str, value) -> bool:
    from ..simulator import Simulator

    try:
        Simulator(base.with_overrides({section: {name: value}}))
    except ConfigError:
        return False
    return True


# ---- the plan ------------------------------------------------------------------------------

def plan(trace, policy: str, target: float, vary, *, preset: str = DEFAULT_PRESET, config_file=None, sets=(),
         gpu: str | None = None, tolerance: float = TOLERANCE, samples: int = SAMPLES, points: int = POINTS,
         out=None, jobs: int = 1, dask: str | None = None, progress: bool = False, log=None,
         traces_dir=None) -> PlanResult:
    """The least value of a key for which ``trace`` under ``policy`` reaches ``target`` of ideal.

    Parameters
    ----------
    trace : str or path
        A trace file, or a shipped trace's name (``g10sim trace list``).
    policy : str
        A registered policy, or ``FILE.py:NAME``.
    target : float
        The fraction of ideal to reach, in (0, 1] (``normalized_performance >= target``).
    vary : dict or sequence of (key, range)
        One key (its least value is searched) or two (a frontier: for each of ``points``
        values of the first, the least of the second).  A range is ``(lo, hi)``, ``"LO:HI"``
        or None (the key's value / 16 to x 16, within its allowed range, the low end doubled
        until the simulator can run it).
    preset, config_file, sets, gpu
        The configuration every run starts from, as ``g10sim run`` builds it (``sets``:
        ``"section.key=value"`` strings; ``gpu``: ``gpu.model``).
    tolerance : float
        Stop when the bracket is narrower than this fraction of its upper end (default 1 %).
    samples : int
        Values of the first scan across the range (at least 2; default 5).
    points : int
        Values of the first key of a frontier (at least 2; default 5).
    out : str or path, optional
        The results store (resumable: runs it has are not run again); default: a temporary one.
    jobs : int
        Local worker processes (1: this process), or Dask workers with ``dask="local"``;
        each bisection step runs up to ``jobs`` points at once.
    dask : str, optional
        ``"local"`` or a scheduler's address (:func:`g10core.experiments.sweep.make_executor`).
    progress : bool
        A progress bar per step on stderr.
    log : callable, optional
        Called with a line of text after each step (the command line prints it on stderr).
    traces_dir : str or path, optional
        Where trace names resolve.

    Returns
    -------
    PlanResult
        Also where the range does not bracket the target (``bracketed`` False, ``unbracketed``
        the one line saying why); the command line maps that to exit 2.

    Raises
    ------
    ConfigError
        A key or range the plan cannot use (one line naming the key), or a bad target.
    SimulationError
        A run raised an error (the store keeps it).

    Examples
    --------
    >>> from g10core.experiments.plan import plan
    >>> r = plan("llama-7b-s2048-b1", "g10", 0.8, {"ssd.bandwidth_GBps": (0.5, 64)},
    ...          sets=["gpu.memory_GiB=80"])                                # doctest: +SKIP
    >>> r.minimum                                                          # doctest: +SKIP
    4.6
    """
    from .. import policies as registry

    t0 = time.perf_counter()
    if not (isinstance(target, (int, float)) and 0 < target <= 1):
        raise ConfigError(f"--target {target!r}: must be a fraction of ideal in (0, 1], e.g. 0.8")
    if not (0 < tolerance < 1):
        raise ConfigError(f"--tolerance {tolerance!r}: must be in (0, 1), e.g. 0.01")
    if samples < 2 or points < 2:
        raise ConfigError(f"--samples {samples} / --points {points}: each must be >= 2")
    items = list(vary.items()) if isinstance(vary, dict) else [tuple(v) for v in vary]
    if not 1 <= len(items) <= 2:
        raise ConfigError(f"--vary: give one key (its least value) or two (a frontier), not {len(items)}")
    if len(items) == 2 and items[0][0] == items[1][0]:
        raise ConfigError(f"--vary {items[0][0]}: given twice")
    _check_trace(str(trace), traces_dir)
    sets = list(sets or ())
    base = resolve(preset, config_file, ([f"gpu.model={gpu}"] if gpu else []) + sets)
    try:
        policy_cls = registry.get(policy)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"--policy {policy}: {' '.join(str(exc.args[0] if exc.args else exc).split())}") from None
    axes = [check_axis(k, r, base, policy_cls, sets=sets) for k, r in items]
    digits = max(4, math.ceil(-math.log10(tolerance)) + 2)
    searched = axes[-1]
    if len(axes) == 1:
        searches = [_Search(searched, target, tolerance, samples, digits, {})]
    else:
        searches = [_Search(searched, target, tolerance, samples, digits, {axes[0].key: v})
                    for v in axes[0].grid(points, digits)]
    jobs = max(1, int(jobs))

    trace_name = str(trace)
    runs_by_point: dict = {}        # (fixed items, value) -> Run
    rows: dict = {}                 # run_key -> the run's entry in PlanResult.runs
    all_runs: list = []
    tmp = None if out is not None else tempfile.TemporaryDirectory(prefix="g10plan-")
    store = Path(out if out is not None else tmp.name)
    name = f"plan {searched.key}" if len(axes) == 1 else f"plan {axes[0].key} x {searched.key}"
    try:
        with sw.make_executor(jobs, dask) as ex:
            step = 0
            while True:
                active = [s for s in searches if not s.done]
                if not active:
                    break
                width = max(1, jobs // len(active))
                asked = [(s, s.propose(width)) for s in active]
                todo = []
                for s, values in asked:
                    for v in values:
                        point = {**s.fixed, searched.key: v}
                        ident = (tuple(sorted(s.fixed.items())), v)
                        if ident not in runs_by_point:
                            runs_by_point[ident] = _make_run(point, trace_name, policy, base, traces_dir)
                            todo.append(runs_by_point[ident])
                before = set(sw.ResultStore(store).records()) if (store / sw.RUNS_FILE).exists() else set()
                all_runs.extend(todo)
                sweep = sw.Sweep(name=name, source="<plan>", preset=base.preset,
                                 grid_keys=tuple(a.key for a in axes), runs=tuple(all_runs))
                st = sw.run_sweep(sweep, store, jobs=jobs, dask=dask, progress=progress, retry_errors=True,
                                  executor=ex)
                recs = sw.ResultStore(store).records()
                step += 1
                for s, values in asked:
                    fractions = {}
                    for v in values:
                        run = runs_by_point[(tuple(sorted(s.fixed.items())), v)]
                        rec = recs.get(run.run_key)
                        if rec is None or rec.get("error"):
                            why = rec.get("error") if rec else "no record"
                            raise SimulationError(f"{trace_name} under {policy} at {_point_text(run.grid)}: {why} "
                                                  f"(the store {store} keeps it)")
                        frac = float(rec.get("normalized_performance") or 0.0)
                        fractions[v] = frac
                        rows[run.run_key] = {
                            "value": v, "values": dict(run.grid), "fraction": frac, "meets": frac >= target,
                            "failed": bool(rec.get("failed")), "failure_reason": rec.get("failure_reason"),
                            "time_s": rec.get("time_s"), "ideal_time_s": rec.get("ideal_time_s"),
                            "run_key": run.run_key, "new": run.run_key not in before}
                    s.feed(fractions)
                    if log is not None and values:
                        log(_step_line(s, fractions, target, step, len(rows), st))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return _result(trace_name, policy, base, axes, searches, target, tolerance, rows, all_runs,
                   None if out is None else str(out), time.perf_counter() - t0, jobs, sets, gpu)


def _check_trace(name: str, traces_dir) -> None:
    """The trace exists and reads (before any run), or one line naming it."""
    from ..workload import tracestore

    path = sw.resolve_trace_name(name, Path("."), None if traces_dir is None else Path(traces_dir))
    if path is None:
        hint = did_you_mean(name, tracestore.available_traces()) if "/" not in name else ""
        raise InputError(f"{name}: no such trace (a path, or a shipped name: g10sim trace list)"
                         + (f"; {hint}" if hint else ""))
    try:
        sw._trace_identity(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable trace is bad input here
        msg = " ".join(str(exc).split())
        raise InputError(msg if str(path) in msg or name in msg else f"{name}: {msg}") from None


def _make_run(point: dict, trace: str, policy: str, base: SimConfig, traces_dir) -> "sw.Run":
    doc = {"name": "plan", "traces": [trace], "policies": [policy], "grid": {k: [v] for k, v in point.items()}}
    s = sw.parse_sweep(doc, source="<plan>", base_dir=".", traces_dir=traces_dir, base_config=base)
    return s.runs[0]


def _point_text(point: dict) -> str:
    return ", ".join(f"{k} = {v:g}" for k, v in point.items())


def _step_line(s: _Search, fractions: dict, target: float, step: int, nruns: int, st: dict) -> str:
    got = ", ".join(f"{v:g} -> {f:.3f}" for v, f in sorted(fractions.items()))
    where = f"{_point_text(s.fixed)}: " if s.fixed else ""
    if s.phase == "bisect":
        state = f"crossing in ({s.bracket[0]:g}, {s.bracket[1]:g}]"
    elif s.minimum is not None:
        state = f"least {s.axis.key} = {s.minimum:g}"
    else:
        state = f"{target:g} not reached"
    return f"plan: step {step}: {where}{s.axis.key} {got}; {state} ({nruns} runs)"


def _search_summary(s: _Search) -> dict:
    return {"minimum": s.minimum, "bracket": list(s.bracket) if s.bracket and s.minimum is not None
            and not s.met_at_lo else None, "monotone": s.monotone, "scan_monotone": not s.falls,
            "met_at_lo": s.met_at_lo,
            "sampled_minimum": s.sampled_minimum}


def _notes(s: _Search, target: float, where: str = "") -> list:
    key, ax = s.axis.key, s.axis
    out = []
    if s.falls:
        a, fa, b, fb = s.falls[0]
        line = (f"{where}not monotone: the fraction of ideal falls from {fa:.3f} at {key} = {a:g} to {fb:.3f} at "
                f"{b:g}")
        if s.sampled_minimum is not None:
            lo = s.scan[s.scan.index(s.sampled_minimum) - 1] if s.sampled_minimum != s.scan[0] else None
            line += (f"; the least sampled value that meets {target:g} is {s.sampled_minimum:g}"
                     + (f" (bracket ({lo:g}, {s.sampled_minimum:g}])" if lo is not None else "")
                     + ("" if s.met_at_lo else f", refined to {s.minimum:g}"))
            again = [v for v in s.scan if v > s.sampled_minimum and s.seen[v] < target]
            if again:
                line += f"; {key} = {again[0]:g} falls below {target:g} again"
        out.append(line)
    if s.run_falls:
        a, fa, b, fb = s.run_falls[0]
        again = [v for v in sorted(s.seen) if s.minimum is not None and v > s.minimum and s.seen[v] < target]
        out.append(f"{where}not monotone between the bisection's runs: the fraction of ideal falls from {fa:.3f} at "
                   f"{key} = {a:g} to {fb:.3f} at {b:g}"
                   + (f" ({len(s.run_falls)} such falls)" if len(s.run_falls) > 1 else "")
                   + (f"; {key} = {again[0]:g}, above the minimum, falls below {target:g} again" if again else
                      f"; every larger value run meets {target:g}"))
    if s.met_at_lo and ax.floor:
        out.append(f"{where}the target {target:g} is already met at {key} = {ax.lo:g}, the least value {key} "
                   "takes: every value meets it")
    elif s.met_at_lo:
        out.append(f"{where}the target {target:g} is already met at the low end of the range, {key} = {ax.lo:g}: "
                   "the least value may be lower (give a lower LO)")
    elif s.minimum is None:
        best = max(s.seen.values()) if s.seen else 0.0
        out.append(f"{where}the range {key} = {ax.lo:g} .. {ax.hi:g} cannot reach {target:g} of ideal (at best "
                   f"{best:.3f})")
    return out


def _result(trace, policy, base, axes, searches, target, tolerance, rows, all_runs, store, wall, jobs, sets,
            gpu) -> PlanResult:
    keys = tuple(a.key for a in axes)
    ranges = {a.key: [a.lo, a.hi] for a in axes}
    runs = [rows[r.run_key] for r in all_runs if r.run_key in rows]
    runs.sort(key=lambda r: tuple(r["values"][k] for k in keys))
    fixed = {"sets": list(sets)} | ({"gpu": gpu} if gpu else {})
    common = dict(trace=trace, policy=policy, preset=base.preset, keys=keys, target=target, tolerance=tolerance,
                  ranges=ranges, runs=runs, store=store, wall_s=wall, jobs=jobs, base_config_hash=base.hash,
                  fixed=fixed, lo_is_floor=axes[-1].floor)
    if len(axes) == 1:
        s = searches[0]
        summ = _search_summary(s)
        bracketed = _located(s)
        return PlanResult(minimum=s.minimum, bracket=summ["bracket"], monotone=s.monotone,
                          scan_monotone=not s.falls, met_at_lo=s.met_at_lo,
                          sampled_minimum=s.sampled_minimum, notes=_notes(s, target), bracketed=bracketed,
                          unbracketed=None if bracketed else _unbracketed([s], target), **common)
    frontier, notes = [], []
    for s in searches:
        (k1, v1), = s.fixed.items()
        frontier.append({k1: v1, **_search_summary(s)})
        notes += _notes(s, target, where=f"at {k1} = {v1:g}: ")
    found = [f for f in frontier if f["minimum"] is not None]
    best = min(found, key=lambda f: (f["minimum"], f[keys[0]])) if found else None
    bracketed = any(_located(s) for s in searches)
    return PlanResult(minimum=None if best is None else best["minimum"], bracket=None if best is None else
                      best["bracket"], monotone=all(s.monotone for s in searches),
                      scan_monotone=not any(s.falls for s in searches),
                      met_at_lo=bool(best and best["met_at_lo"]),
                      sampled_minimum=None if best is None else best["sampled_minimum"], notes=notes,
                      frontier=frontier, minimum_at=None if best is None else {keys[0]: best[keys[0]]},
                      bracketed=bracketed, unbracketed=None if bracketed else _unbracketed(searches, target),
                      **common)


def _located(s: _Search) -> bool:
    """Did the search locate the least value: a crossing inside the range, or the target met at
    the least value the key takes (nothing lower to try)?"""
    return s.minimum is not None and (not s.met_at_lo or s.axis.floor)


def _unbracketed(searches: list, target: float) -> str:
    """One line: the range of the searched key does not bracket ``target`` (at any point of a
    frontier); what the runs found, and which end of ``--range`` to move."""
    ax = searches[0].axis
    head = f"--range {ax.lo:g}:{ax.hi:g} of {ax.key} does not bracket the target {target:g}"
    # nothing reached: a result (g10sim plan exits 1), not a range to correct
    none_reach = f"no value of {ax.key} in [{ax.lo:g}, {ax.hi:g}] reaches the target {target:g} of ideal"
    low = [s for s in searches if s.met_at_lo and not s.axis.floor]
    high = [s for s in searches if s.minimum is None]
    seen = [(f, v, s) for s in searches for v, f in s.seen.items()]
    best_f, best_v, best_s = max(seen, key=lambda t: (t[0], -t[1])) if seen else (0.0, ax.hi, searches[0])
    if len(searches) == 1:
        s = searches[0]
        if s.met_at_lo:
            return (f"{head}: the low end, {ax.key} = {s.minimum:g}, already reaches {s.seen[s.minimum]:.3f} of "
                    "ideal (the least value may be lower); widen --range (a lower LO)")
        return (f"{none_reach}: the best run reaches {best_f:.3f} of ideal at {ax.key} = {best_v:g}; widen --range "
                + ("(a higher HI)" if best_v == s.scan[-1] else
                   f"(a higher HI), or vary another key: the fraction does not grow above {ax.key} = {best_v:g}"))
    (k1, _), = searches[0].fixed.items()
    grid = [s.fixed[k1] for s in searches]
    if not low:
        return (f"{none_reach} at any of the {len(searches)} values of {k1} in {min(grid):g} .. {max(grid):g}: the best "
                f"run reaches {best_f:.3f} of ideal at {k1} = {best_s.fixed[k1]:g}, {ax.key} = {best_v:g}; widen "
                f"--range of {ax.key} (a higher HI)")
    parts = []
    if high:
        parts.append(f"not reached at {len(high)} (the best run reaches {best_f:.3f} of ideal at {k1} = "
                     f"{best_s.fixed[k1]:g}, {ax.key} = {best_v:g})")
    if low:
        parts.append(f"met at the low end at {len(low)} (the least value may be lower)")
    move = "a higher HI" if not low else "a lower LO" if not high else "a lower LO and a higher HI"
    return (f"{head} at any of the {len(searches)} values of {k1} in {min(grid):g} .. {max(grid):g}: "
            f"{'; '.join(parts)}; widen --range of {ax.key} ({move})")


# ---- output --------------------------------------------------------------------------------

def format_plan(r: PlanResult) -> str:
    """The plan as text: the question, each run, the answer (and the frontier), the notes.

    Parameters
    ----------
    r : PlanResult

    Returns
    -------
    str
        Lines without a final newline, as ``g10sim plan`` prints them.
    """
    pct = f"{r.tolerance * 100:g} %"
    setting = ", ".join(r.fixed.get("sets", [])) + (f", gpu {r.fixed['gpu']}" if r.fixed.get("gpu") else "")
    lo, hi = r.ranges[r.key]
    lines = [f"plan: least {r.key} in {lo:g} .. {hi:g} for {r.trace} under {r.policy} to reach {r.target:g} of "
             f"ideal (preset {r.preset}" + (f"; {setting.strip(', ')}" if setting.strip(", ") else "") + ")"]
    keys = r.keys
    head = "".join(f"  {k:>22}" for k in keys) + "  fraction of ideal"
    lines.append(head)
    for run in r.runs:
        mark = "meets" if run["meets"] else ("failed: " + (run["failure_reason"] or "")[:50] if run["failed"] else "")
        lines.append(("".join(f"  {run['values'][k]:>22g}" for k in keys)
                      + f"  {run['fraction']:>17.4f}  {mark}").rstrip())
    if len(keys) == 2:
        lines.append(f"frontier: least {keys[1]} per {keys[0]} (to {pct})")
        for f in r.frontier:
            lo2, hi2 = r.ranges[keys[1]]
            if f["minimum"] is None:
                what = f"not reached in {lo2:g} .. {hi2:g}"
            else:
                what = f">= {f['minimum']:g}" + (
                    f"  crossing in ({f['bracket'][0]:g}, {f['bracket'][1]:g}]" if f["bracket"] else
                    ("  (met at the low end, the least value it takes)" if r.lo_is_floor else
                     "  (met at the low end)") if f["met_at_lo"] else "")
            lines.append(f"  {keys[0]} = {f[keys[0]]:<10g} {keys[1]} {what}")
    elif r.minimum is not None and r.bracket:
        lines.append(f"minimum {r.key} = {r.minimum:g} (to {pct}: the target is crossed in "
                     f"({r.bracket[0]:g}, {r.bracket[1]:g}])")
    elif r.minimum is not None:
        lines.append(f"minimum {r.key} = {r.minimum:g} (the low end of the range"
                     + (", the least value the key takes)" if r.lo_is_floor else "; the least value may be lower)"))
    else:
        lines.append(f"minimum {r.key}: none in {r.ranges[r.key][0]:g} .. {r.ranges[r.key][1]:g}")
    lines += r.notes
    lines.append(f"{len(r.runs)} runs ({r.new_runs} new), {r.wall_s:.1f} s wall with {r.jobs} job(s)"
                 + (f"; store {r.store}" if r.store else ""))
    return "\n".join(lines)


def plot_plan(r: PlanResult, path) -> Path:
    """Draw the plan (matplotlib Agg, written atomically): one key, the fraction of ideal of each run
    against the key with the target and the minimum; two keys, the frontier over every run.

    Parameters
    ----------
    r : PlanResult
    path : str or path
        The image file; the format from its suffix.

    Returns
    -------
    Path
        The file written.
    """
    from .report import _new_figure, _save

    fig = _new_figure(5.0, 3.4)
    ax = fig.add_subplot(1, 1, 1)
    keys = r.keys
    if len(keys) == 1:
        xs = [run["value"] for run in r.runs]
        ys = [run["fraction"] for run in r.runs]
        ax.plot(xs, ys, "o-", ms=3, lw=0.8, label="runs")
        ax.axhline(r.target, color="grey", ls="--", lw=0.8, label=f"target {r.target:g}")
        if r.minimum is not None:
            ax.axvline(r.minimum, color="C3", lw=0.8, label=f"minimum {r.minimum:g}")
        ax.set_ylabel("fraction of ideal")
        ax.set_xlabel(keys[0])
        if r.ranges[keys[0]][0] > 0:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
    else:
        k1, k2 = keys
        meets = [run for run in r.runs if run["meets"]]
        short = [run for run in r.runs if not run["meets"]]
        ax.scatter([x["values"][k1] for x in meets], [x["values"][k2] for x in meets], s=10, c="C2",
                   label=f">= {r.target:g} of ideal")
        ax.scatter([x["values"][k1] for x in short], [x["values"][k2] for x in short], s=10, facecolors="none",
                   edgecolors="C1", label=f"< {r.target:g}")
        fr = [f for f in r.frontier if f["minimum"] is not None]
        ax.plot([f[k1] for f in fr], [f["minimum"] for f in fr], "k-", lw=1.0, label="frontier")
        ax.set_xlabel(k1)
        ax.set_ylabel(f"least {k2}")
        for k, setter in ((k1, ax.set_xscale), (k2, ax.set_yscale)):
            if r.ranges[k][0] > 0:
                setter("log")
    ax.set_title(f"{r.trace} under {r.policy}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)
