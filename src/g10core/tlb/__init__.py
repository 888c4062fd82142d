"""GPU address translation: the TLB hierarchy's spec, validation, sampling and Python handle.

Defaults are ``detailed_model.md`` §2: per-SM L1 TLB of 64 entries, 8-way, 1 cycle; a shared
L2 of 2048 entries, 16-way, 20 cycles; an optional page-walk cache of 64 entries, 8-way,
10 cycles; 32 page walkers; walks of 100 cycles (4 KiB and 64 KiB pages, four levels) or
66 cycles (2 MiB pages, three levels); shootdowns of 15 cycles (L1s) and 200 cycles (L2);
108 SMs (A100).

The access stream, the latency-hiding model and the sampling method are described in
``_tlb.pyx``.  In short: each SM sweeps its contiguous share of every tensor a kernel
touches, in page order, spread evenly over the kernel's ideal time; an SM keeps
``overlap_translations`` translations in flight while it computes, so translation adds
time only when the SM's stream of lookups cannot keep up with its compute.

Sampling (``sample_modulus`` k > 1): each of ``sample_subsamples`` replicas simulates the
translation pages v with ``v % k == r`` (r distinct residues drawn from ``sample_seed``)
on a hierarchy scaled down by k (TLB sets first, then ways; the walkers in time dilated by k),
each lookup standing for the lookups up to its SM's next simulated one.  A level whose set count k divides is
simulated exactly on its sets r, r + k, ...; the others are scaled approximations.  The
estimate of a count is the mean over replicas of k x its count; its bound is the
half-width of a 99 % Student-t interval over the replicas, with the finite-population
correction sqrt(1 - m/k).  ``TLB.stats()`` reports both.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import ConfigError
from ..params import check_fields, declaration, from_key, namer

__all__ = ["TLBSpec", "TLB", "spec_from_config", "PAGE_SIZES", "translator_from_spec", "t_quantile_995",
           "adapt_subsamples", "SUBSAMPLES_CAP"]

PAGE_SIZES = declaration("tlb.page_size_bytes").choices                # 4096, 65536, 2097152
_PAGE_SHIFT = {size: (size // 4096).bit_length() - 1 for size in PAGE_SIZES}   # translation page = 4 KiB page >> shift
_WALK_LEVELS = {4096: 4, 65536: 4, 2097152: 3}  # radix levels a walk reads (64 KiB: a big PTE at level 4)
MODELS = declaration("tlb.model").choices                              # none, hierarchy
REUSE_MODES = declaration("tlb.reuse").choices                         # none, kernel, shape


def reuse_classes(n_pages, access_offsets, access_tensor, reuse: str):
    """Per kernel its reuse class for ``TLBHierarchy.attach_kernels`` (None: no reuse)."""
    K = len(access_offsets) - 1
    if reuse == "none":
        return None
    if reuse == "kernel":
        return np.arange(K, dtype=np.int64)
    ids: dict = {}
    out = np.empty(K, np.int64)
    sizes = np.asarray(n_pages, np.int64)[np.asarray(access_tensor, np.int64)]
    off = np.asarray(access_offsets, np.int64)
    for k in range(K):
        out[k] = ids.setdefault(sizes[off[k]:off[k + 1]].tobytes(), len(ids))
    return out


@dataclass(frozen=True)
class TLBSpec:
    """The GPU's translation hardware; ``check()`` validates every field.

    Each field is the ``[tlb]`` key of its name (``sms``: ``gpu.sms``) as ``config.py`` declares
    it: default, unit, range and description (``g10sim config show``); built alone, the
    translator models a hierarchy (``model = "hierarchy"``, the configuration's default is
    ``"none"``) and accepts the component's own limits (``params.Param.model_min``)."""
    model: str = from_key("tlb.model", default="hierarchy")
    page_size_bytes: int = from_key("tlb.page_size_bytes")
    sms: int = from_key("gpu.sms")
    l1_entries: int = from_key("tlb.l1_entries")
    l1_ways: int = from_key("tlb.l1_ways")
    l1_latency_cycles: int = from_key("tlb.l1_latency_cycles")
    l2_entries: int = from_key("tlb.l2_entries")
    l2_ways: int = from_key("tlb.l2_ways")
    l2_latency_cycles: int = from_key("tlb.l2_latency_cycles")
    pwc_enabled: bool = from_key("tlb.pwc_enabled")
    pwc_entries: int = from_key("tlb.pwc_entries")
    pwc_ways: int = from_key("tlb.pwc_ways")
    pwc_latency_cycles: int = from_key("tlb.pwc_latency_cycles")
    walkers: int = from_key("tlb.walkers")
    walk_latency_cycles: int = from_key("tlb.walk_latency_cycles")
    walk_latency_2MiB_cycles: int = from_key("tlb.walk_latency_2MiB_cycles")
    shootdown_l1_cycles: int = from_key("tlb.shootdown_l1_cycles")
    shootdown_l2_cycles: int = from_key("tlb.shootdown_l2_cycles")
    overlap_translations: int = from_key("tlb.overlap_translations")
    sample_modulus: int = from_key("tlb.sample_modulus")
    sample_subsamples: int = from_key("tlb.sample_subsamples")
    sample_seed: int = from_key("tlb.sample_seed")

    def check(self, prefix: str = "tlb", by_key: bool = False) -> "TLBSpec":
        """Validate every field; errors name ``<prefix>.<field>`` (``by_key``: the configuration's keys)."""
        check_fields(self, prefix, by_key)
        n = namer(self, prefix, by_key)
        for level in ("l1", "l2", "pwc"):
            entries, ways = getattr(self, f"{level}_entries"), getattr(self, f"{level}_ways")
            if ways > entries:
                raise ConfigError(f"{n(f'{level}_ways')} = {ways}: at most {n(f'{level}_entries')} = {entries}")
            if entries % ways:
                raise ConfigError(f"{n(f'{level}_entries')} = {entries}: must be a "
                                  f"multiple of {n(f'{level}_ways')} = {ways}")
        k = self.sample_modulus
        for level in ("l2", "pwc") if self.pwc_enabled else ("l2",):
            if k > getattr(self, f"{level}_entries"):
                raise ConfigError(f"{n('sample_modulus')} = {k}: at most {n(f'{level}_entries')} = "
                                  f"{getattr(self, f'{level}_entries')} (a replica keeps 1/modulus of each TLB)")
        if self.sample_subsamples > k:
            raise ConfigError(f"{n('sample_subsamples')} = {self.sample_subsamples}: at most "
                              f"{n('sample_modulus')} = {k} distinct residues exist")
        # sampling: a configuration's minimum (the 99 % bound needs a spread); 1 only in full simulation
        if k > 1 and self.sample_subsamples < declaration("tlb.sample_subsamples").min:
            raise ConfigError(f"{n('sample_subsamples')} = {self.sample_subsamples}: sampling needs at "
                              f"least 2 sub-samples to bound its error (or set {n('sample_modulus')} = 1)")
        return self

    # ---- derived ----

    @property
    def page_shift(self) -> int:
        return _PAGE_SHIFT[self.page_size_bytes]

    @property
    def walk_cycles(self) -> int:
        return self.walk_latency_2MiB_cycles if self.page_size_bytes == 2097152 else self.walk_latency_cycles

    @property
    def walk_last_level_cycles(self) -> int:
        """What a walk costs after a page-walk-cache hit: its last level."""
        return -(-self.walk_cycles // _WALK_LEVELS[self.page_size_bytes])

    @property
    def full(self) -> bool:
        return self.sample_modulus == 1

    def residues(self) -> list[int]:
        """The sub-samples' residues (sorted), drawn from ``sample_seed``."""
        k, m = self.sample_modulus, self.sample_subsamples
        if k == 1:
            return [0]
        rng = np.random.default_rng(self.sample_seed)
        return sorted(int(r) for r in rng.choice(k, size=m, replace=False))

    def replica_params(self) -> tuple[dict, dict]:
        """(the compiled ``tlb_params`` of one replica, which levels are sampled exactly)."""
        k = self.sample_modulus
        l1 = _scaled(self.l1_entries // self.l1_ways, self.l1_ways, k)
        l2 = _scaled(self.l2_entries // self.l2_ways, self.l2_ways, k)
        pwc = (_scaled(self.pwc_entries // self.pwc_ways, self.pwc_ways, k) if self.pwc_enabled
               else (0, 0, True))
        params = dict(
            sms=self.sms, page_shift=self.page_shift,
            l1_sets=l1[0], l1_ways=l1[1], l2_sets=l2[0], l2_ways=l2[1],
            pwc_sets=pwc[0], pwc_ways=pwc[1], walkers=self.walkers, overlap=self.overlap_translations,
            l1_latency=self.l1_latency_cycles, l2_latency=self.l2_latency_cycles,
            pwc_latency=self.pwc_latency_cycles if self.pwc_enabled else 0,
            walk_latency=self.walk_cycles, walk_last_level=self.walk_last_level_cycles,
            shootdown_l1=self.shootdown_l1_cycles, shootdown_l2=self.shootdown_l2_cycles,
            modulus=k, modulus_shift=k.bit_length() - 1,
        )
        exact = {"l1": l1[2], "l2": l2[2], "pwc": pwc[2]}
        return params, exact

    def to_dict(self) -> dict:
        return asdict(self)


def spec_from_config(cfg) -> TLBSpec:
    """The translator of a ``SimConfig`` (its ``[tlb]`` keys and ``gpu.sms``), checked; errors name the keys."""
    t = cfg.tlb
    spec = TLBSpec(
        model=t.model, page_size_bytes=t.page_size_bytes, sms=cfg.gpu.sms, l1_entries=t.l1_entries,
        l1_ways=t.l1_ways, l1_latency_cycles=t.l1_latency_cycles, l2_entries=t.l2_entries, l2_ways=t.l2_ways,
        l2_latency_cycles=t.l2_latency_cycles, pwc_enabled=t.pwc_enabled, pwc_entries=t.pwc_entries,
        pwc_ways=t.pwc_ways, pwc_latency_cycles=t.pwc_latency_cycles, walkers=t.walkers,
        walk_latency_cycles=t.walk_latency_cycles, walk_latency_2MiB_cycles=t.walk_latency_2MiB_cycles,
        shootdown_l1_cycles=t.shootdown_l1_cycles, shootdown_l2_cycles=t.shootdown_l2_cycles,
        overlap_translations=t.overlap_translations, sample_modulus=t.sample_modulus,
        # full simulation is one replica: the sub-sample count applies to sampling only
        sample_subsamples=t.sample_subsamples if t.sample_modulus != 1 else 1, sample_seed=t.sample_seed)
    return spec.check("tlb", by_key=True)


def _scaled(sets: int, ways: int, k: int) -> tuple[int, int, bool]:
    """(sets, ways, exact) of a level scaled down by k.

    k divides the set count: the replica holds exactly the sets r, r + k, ... of the full
    level.  Otherwise, when k divides the entries: one set of entries / k ways (the same
    reach per page, another set mapping).  When k exceeds the entries the level cannot
    keep its reach in a replica: it is left out (0 sets) and its hits show up one level
    down (a rounded-up level would hit where the full one misses)."""
    if sets % k == 0:
        return sets // k, ways, True
    entries = sets * ways
    if k <= entries:
        return 1, max(1, entries // k), False
    return 0, 0, False


# Two-sided 99 % Student-t quantiles t(0.995, df), df = 1..30 (standard tables).
_T995 = (63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
         2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
         2.771, 2.763, 2.756, 2.750)


def t_quantile_995(df: int) -> float:
    """t(0.995, df): the 99 % two-sided Student-t multiplier (2.576 in the normal limit)."""
    if df < 1:
        return math.inf
    if df <= 30:
        return _T995[df - 1]
    return 2.576 + 2.4 / df                 # within 0.3 % of the exact quantile for df > 30


# Systematic allowances of a sampled run, added to the statistical half-widths (see
# bench/README.md, "TLB sampling", for the deviations they were checked against):
TIMING_SYSTEMATIC = 0.25   # latency, walker queueing: x their estimate; cycles added: x the pipeline's work
LEVEL_SYSTEMATIC = 0.02    # a level kept with another set mapping: x the lookups it sees (hit <-> miss)

# Counts that a replica sees one k-th of (scaled by k); pwc_misses are one per region an SM
# enters, which every replica sees whole (scaled by 1).
_SCALED = ("accesses", "lookups", "l1_hits", "l1_misses", "l2_hits", "l2_pending_hits", "l2_misses",
           "pwc_hits", "walker_queue_cycles", "latency_cycles", "invalidated_l1", "invalidated_l2")


class TLB:
    """A translator built from a ``TLBSpec``; ``.core`` is the compiled object the replay
    cimports (``_tlb.TLBHierarchy``, or ``_tlb.NoTranslation`` for ``model = "none"``)."""

    def __init__(self, spec: TLBSpec | None = None):
        from ._tlb import NoTranslation, TLBHierarchy
        self.spec = (spec or TLBSpec()).check()
        if self.spec.model == "none":
            self.core = NoTranslation()
            self.exact_levels = {}
            return
        params, self.exact_levels = self.spec.replica_params()
        residues = self.spec.residues()
        self.residues = residues
        self.core = TLBHierarchy([params] * len(residues), residues)

    # ---- driving it from Python (the replay calls the core directly) ----

    def translate_kernel(self, start: int, duration: int, first_pages, n_pages) -> int:
        """Cycles translation adds to a kernel running [start, start + duration) that touches the
        tensors whose pages are [first_pages[i], first_pages[i] + n_pages[i])."""
        first = np.asarray(first_pages, dtype=np.int64).reshape(-1)
        count = np.asarray(n_pages, dtype=np.int64).reshape(-1)
        for name, v in (("start", start), ("duration", duration)):
            if isinstance(v, bool) or int(v) != v or v < 0 or v >= 2**62:
                raise ConfigError(f"{name} = {v!r}: must be an integer cycle >= 0")
        if first.shape != count.shape:
            raise ConfigError(f"first_pages and n_pages differ in length ({first.size} vs {count.size})")
        if first.size and (first.min() < 0 or count.min() < 0 or (first + count).max() >= 2**50):
            raise ConfigError("first_pages and n_pages must be >= 0 and below 2**50 pages")
        if first.size > 2**31 - 1:
            raise ConfigError("too many tensors in one kernel")
        return self.core.py_translate_kernel(int(start), int(duration), first, count)

    def attach_kernels(self, first_pages, n_pages, access_offsets, access_tensor, t11_cycles,
                       reuse: str = "none") -> None:
        """The kernel table the replay's ``kernel_cycles(k, now)`` translates: tensor t is pages
        [first_pages[t], first_pages[t] + n_pages[t]); kernel k touches
        access_tensor[access_offsets[k]:access_offsets[k + 1]] (in access order) for t11_cycles[k].

        ``reuse`` (``[tlb] reuse``): ``none`` translates every kernel; ``kernel`` translates each
        kernel once and reuses its estimate and counters when it runs again (later iterations);
        ``shape`` translates the first kernel of each shape (its tensors' page counts, in access
        order) and reuses it for the others, rescaled to their t11 (``_tlb._rescaled``).  Reuse
        assumes what a kernel's translation costs depends on its tensors' sizes, not on where
        they lie (a sweep over consecutive pages spreads over the TLB sets alike from any start)
        nor on what earlier kernels left in the TLBs (with tensors of MiBs to GiBs the L2's reach,
        8 MiB at 4 KiB pages, carries nothing across kernels that matters)."""
        first = np.asarray(first_pages, dtype=np.int64).reshape(-1)
        pages = np.asarray(n_pages, dtype=np.int64).reshape(-1)
        off = np.asarray(access_offsets, dtype=np.int64).reshape(-1)
        acc = np.asarray(access_tensor, dtype=np.int64).reshape(-1)
        t11 = np.asarray(t11_cycles, dtype=np.int64).reshape(-1)
        if first.shape != pages.shape:
            raise ConfigError(f"first_pages and n_pages differ in length ({first.size} vs {pages.size})")
        if first.size and (first.min() < 0 or pages.min() < 0 or (first + pages).max() >= 2**50):
            raise ConfigError("first_pages and n_pages must be >= 0 and below 2**50 pages")
        if off.size != t11.size + 1 or off.size == 0 or off[0] != 0 or off[-1] != acc.size \
                or (np.diff(off) < 0).any():
            raise ConfigError(f"access_offsets: need {t11.size + 1} monotone offsets from 0 to {acc.size}")
        if acc.size and (acc.min() < 0 or acc.max() >= first.size):
            raise ConfigError(f"access_tensor: tensor ids must be in [0, {first.size})")
        if t11.size and (t11.min() < 0 or t11.max() >= 2**62):
            raise ConfigError("t11_cycles must be >= 0")
        if reuse not in REUSE_MODES:
            raise ConfigError(f"tlb.reuse = {reuse!r}: must be one of {', '.join(REUSE_MODES)}")
        if self.spec.model != "none":
            self.core.attach_kernels(first, pages, off, acc.astype(np.int32), t11,
                                     reuse_classes(pages, off, acc, reuse))

    def invalidate(self, first_page: int, end_page: int) -> int:
        """Pages [first_page, end_page) left the GPU; returns the shootdown's cycles."""
        if not (0 <= first_page <= end_page < 2**50):
            raise ConfigError(f"invalidate({first_page}, {end_page}): need 0 <= first <= end < 2**50")
        return self.core.py_invalidate(int(first_page), int(end_page))

    def reset_stats(self):
        self.core.reset_stats()

    # ---- results ----

    def stats(self) -> dict:
        """Counters (estimates when sampled), derived rates, and the sampling's error bounds.

        ``bounds[name]`` is the half-width of a 99 % interval around ``name`` (0 in full
        simulation); ``sampling`` says how the estimate was made."""
        if self.spec.model == "none":
            return self.core.stats()
        k = self.spec.sample_modulus
        reps = self.core.replica_stats()
        top = self.core.hierarchy_stats()
        m = len(reps)
        out: dict = {"model": "hierarchy", "page_size_bytes": self.spec.page_size_bytes}
        bounds: dict = {}
        per_replica: dict = {}
        for name in _SCALED + ("pwc_misses",):
            scale = k if name in _SCALED else 1
            vals = [r[name] * scale for r in reps]
            per_replica[name] = vals
            out[name], bounds[name] = _estimate(vals, k)
        # exact where the hierarchy counts them itself
        out["accesses"], bounds["accesses"] = top["accesses"], 0.0
        out["lookups"], bounds["lookups"] = top["lookups"], 0.0
        out["max_walker_queue_cycles"] = max(r["max_walker_queue_cycles"] for r in reps)
        vals = [r["cycles_added"] for r in reps]
        per_replica["cycles_added"] = vals
        mean_r, half = _estimate(vals, k)
        out["cycles_added"] = top["cycles_added"]
        bounds["cycles_added"] = half + abs(mean_r - top["cycles_added"])
        systematic = {}
        if k > 1:
            # timing: a simulated lookup stands for the lookups around it and the walker pool is
            # a fluid server; the allowance is relative to the translation pipeline's work
            pipeline = out["latency_cycles"] / (self.spec.sms * self.spec.overlap_translations)
            for name, base in (("latency_cycles", out["latency_cycles"]),
                               ("walker_queue_cycles", out["walker_queue_cycles"]),
                               ("cycles_added", pipeline)):
                systematic[name] = TIMING_SYSTEMATIC * base
            # a level kept with another set mapping (or left out) moves lookups between hit and miss
            if not self.exact_levels["l1"]:
                shift = LEVEL_SYSTEMATIC * out["lookups"]
                for name in ("l1_hits", "l1_misses", "l2_hits", "l2_misses"):
                    systematic[name] = shift
            if not self.exact_levels["l2"]:
                for name in ("l2_hits", "l2_misses"):
                    systematic[name] = systematic.get(name, 0.0) + LEVEL_SYSTEMATIC * out["l1_misses"]
            for name, v in systematic.items():
                bounds[name] += v
        out["walks"], bounds["walks"] = out["l2_misses"], bounds["l2_misses"]
        for name in ("kernels", "kernels_reused", "invalidate_calls", "shootdowns_l1", "shootdowns_l2",
                     "shootdown_cycles"):
            out[name] = top[name]
        lk = max(out["lookups"], 1)
        out["l1_hit_rate"] = out["l1_hits"] / max(out["accesses"], 1)
        out["l1_lookup_hit_rate"] = (out["l1_hits"] - (out["accesses"] - out["lookups"])) / lk
        out["l2_hit_rate"] = out["l2_hits"] / out["l1_misses"] if out["l1_misses"] else 0.0
        out["pwc_hit_rate"] = (out["pwc_hits"] / (out["pwc_hits"] + out["pwc_misses"])
                               if out["pwc_hits"] + out["pwc_misses"] else 0.0)
        out["mean_walker_queue_cycles"] = out["walker_queue_cycles"] / out["walks"] if out["walks"] else 0.0
        out["mean_latency_cycles"] = out["latency_cycles"] / max(out["accesses"], 1)
        out["bounds"] = bounds
        out["sampling"] = {
            "modulus": k, "subsamples": m, "residues": list(self.residues), "confidence": 0.99,
            "exact_levels": dict(self.exact_levels), "per_replica": per_replica,
            "systematic": systematic,
            "method": "full simulation" if k == 1 else
                      "replicas of the hierarchy on translation pages v % modulus == residue, scaled by modulus",
        }
        out["precision"] = precision(out, k)
        return out


def _estimate(values, k: int) -> tuple[float, float]:
    """(mean, 99 % half-width) of independent sub-sample estimates of a total.

    The m residues are drawn without replacement from k: the finite-population correction
    sqrt(1 - m/k) makes the bound 0 when every residue was simulated."""
    m = len(values)
    mean = float(sum(values)) / m
    if k == 1 or m == k:
        return mean, 0.0
    if m < 2:
        return mean, math.inf
    var = sum((v - mean) ** 2 for v in values) / (m - 1)
    return mean, t_quantile_995(m - 1) * math.sqrt(var / m) * math.sqrt(1 - m / k)


TARGET_RELATIVE_BOUND = 0.10   # a reported rate's 99 % bound should be under this fraction of it
# reported rates: (hits, what they are a fraction of)
_RATES = {"l1_hit_rate": ("l1_hits", ("accesses",)), "l2_hit_rate": ("l2_hits", ("l1_misses",)),
          "pwc_hit_rate": ("pwc_hits", ("pwc_hits", "pwc_misses"))}


def precision(st: dict, k: int, target: float = TARGET_RELATIVE_BOUND) -> dict:
    """Per reported rate (and ``cycles_added``, the translation time): its value, its 99 % bound
    (absolute and relative to the value) and the sub-samples a bound under ``target`` of the
    value needs at this modulus (``subsamples_needed``; the run's own count when it has it), or
    None with the ``reason`` it cannot: the systematic allowance alone (a TLB level approximated
    at this modulus, the timing model) is over the target, or the value is 0 (a bound cannot be
    a fraction of 0: report it as "< bound").  :func:`adapt_subsamples` turns this into the
    sub-samples of the next run (the translation time is the replicas' mean, so they are chosen
    before a run, not added during it)."""
    samp = st["sampling"]
    m = samp["subsamples"]
    out = {}
    for name, (num, dens) in list(_RATES.items()) + [("cycles_added", ("cycles_added", ()))]:
        den = sum(st[d] for d in dens) if dens else 1.0
        if name in _RATES and not den:
            continue                                   # not looked up (no page-walk cache)
        value = st[num] / den
        bound = st["bounds"].get(num, 0.0) / den
        fixed = samp["systematic"].get(num, 0.0) / den
        reps = [v / den for v in samp["per_replica"].get(num, [])]
        if name == "cycles_added" and reps:
            fixed += abs(sum(reps) / len(reps) - value)     # the hierarchy's own estimate vs the replicas'
        rel = bound / abs(value) if value else (0.0 if bound == 0 else math.inf)
        d = {"value": value, "bound": bound, "relative_bound": rel, "subsamples": m, "subsamples_needed": m,
             "reason": None}
        if rel > target:
            d["subsamples_needed"] = None
            if value == 0:
                d["reason"] = "its value is 0: the bound is an upper limit"
            elif fixed >= target * abs(value):
                d["reason"] = (f"the sampling's systematic allowance alone is {100 * fixed / abs(value):.0f} % of it "
                               "(a TLB level approximated at this modulus, or the timing model): only full "
                               "simulation (tlb.sample_modulus = 1) bounds it closer")
            elif len(reps) >= 2:
                mean = sum(reps) / len(reps)
                sd = math.sqrt(sum((v - mean) ** 2 for v in reps) / (len(reps) - 1))
                for n in range(max(m, 2), k + 1):
                    half = 0.0 if n == k else t_quantile_995(n - 1) * sd / math.sqrt(n) * math.sqrt(1 - n / k)
                    if half + fixed < target * abs(value):
                        d["subsamples_needed"] = n
                        break
                d["reason"] = (None if d["subsamples_needed"] is not None else
                               f"even all {k} residues leave the bound over {100 * target:.0f} %")
        out[name] = d
    return out


SUBSAMPLES_CAP = 16    # adaptive sampling stops here (or at the modulus): each sub-sample is a replica


def adapt_subsamples(st: dict, k: int, runs: list, target: float = TARGET_RELATIVE_BOUND,
                     cap: int | None = None) -> tuple:
    """Adaptive sampling: the sub-samples the next run needs, or None when this one is final.

    ``st``: a sampled run's :meth:`TLB.stats` (with ``precision``); ``runs``: the sub-sample
    counts run so far (the first is ``tlb.sample_subsamples``).  A rate (or ``cycles_added``)
    whose 99 % bound exceeds ``target`` of its value and that more sub-samples can bound asks
    for the count :func:`precision` estimates from the replicas' spread (at least one more than
    now); the next run takes the largest such count, capped at ``cap`` (:data:`SUBSAMPLES_CAP`,
    and never more than the modulus ``k``: then every residue is simulated and the bound is 0).
    Returns ``(n, None)`` to run again with n sub-samples, or ``(None, info)``: ``info`` is the
    JSON record ``sampling.adaptive``: the counts run, the cap and whether it stopped the
    sampling (``cap_reached``), the rates still over the target, and those no sub-sample count
    can bound (value 0, or a systematic allowance over the target: ``unreachable``, with why)."""
    cap = min(SUBSAMPLES_CAP if cap is None else cap, k)
    m = st["sampling"]["subsamples"]
    need, over, unreachable = m, [], {}
    for name, d in st["precision"].items():
        rel = d["relative_bound"]
        if rel is None or rel > target:
            over.append(name)
            if d["subsamples_needed"] is None and d["reason"] and "residues" not in d["reason"]:
                unreachable[name] = d["reason"]
            else:                   # a count the spread asks for, or more than the modulus has
                need = max(need, d["subsamples_needed"] or k, m + 1)
    if k > 1 and need > m and m < cap:
        return min(need, cap), None
    helpable = [n for n in over if n not in unreachable]
    return None, {"runs": list(runs), "subsamples": m, "cap": cap, "target": target,
                  "cap_reached": bool(helpable) and m >= cap, "over_target": helpable,
                  "unreachable": unreachable}


def translator_from_spec(spec: TLBSpec | None) -> TLB:
    """A ``TLB`` for ``spec`` (``None``: the no-cost translator)."""
    return TLB(spec if spec is not None else TLBSpec(model="none"))


def translator(cfg, trace, arrays: dict, t11):
    """The ``[tlb]`` translator (``tlb.TLB``) with the replay's kernel table attached: each
    kernel's tensors in access order (inputs, then outputs), at the replay's first pages."""
    tlb = TLB(spec_from_config(cfg))
    K = trace.n_kernels
    n_in, n_out = np.diff(arrays["in_off"]), np.diff(arrays["out_off"])
    off = np.concatenate(([0], np.cumsum(n_in + n_out))).astype(np.int64)
    acc = np.empty(int(off[-1]), np.int64)
    for k in range(K):
        a, b = int(arrays["in_off"][k]), int(arrays["in_off"][k + 1])
        c, d = int(arrays["out_off"][k]), int(arrays["out_off"][k + 1])
        acc[off[k]:off[k] + b - a] = arrays["in_t"][a:b]
        acc[off[k] + b - a:off[k + 1]] = arrays["out_t"][c:d]
    tlb.attach_kernels(arrays["t_first"], arrays["t_np"], off, acc, t11, reuse=cfg.tlb.reuse)
    return tlb
