"""``g10sim ssd``: a steady-state microbenchmark of the SSD model.

What it runs (every step in the compiled layer; single-page commands, closed
loop: a new command is issued whenever one of the ``queue_depth`` slots frees):

1. cold fill: the whole logical space written once, sequentially;
2. warm-up: ``overwrites - 1`` passes of the workload, U page writes each;
3. measured write pass: one more pass of U writes -> WAF, GC count and time,
   write bandwidth and latency;
4. measured reads: U/4 single-page reads drawn from the same workload
   -> read bandwidth and latency.

Workloads: ``sequential`` (lpn 0, 1, ..., U-1 per pass), ``uniform`` (each
write picks a page uniformly at random), ``hotcold:H/C`` (H % of the writes go
to the first C % of the pages, uniformly; the rest to the other pages).

The device is the preset with ``pages_per_block`` and OP applied and its
blocks per plane scaled so that the user capacity is ``capacity_GiB``
(default 8 GiB for a quick run; WAF depends on blocks per plane, and the
output states the geometry used).
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from ..errors import ConfigError
from ..params import declaration
from ..ssd import SSD, parse_victim, percentile_us, ssd_preset

DEFAULTS = {
    "preset": "zssd",
    "op": 0.07,
    "pages_per_block": 256,
    "victim": "greedy",
    "workload": "uniform",
    "overwrites": 6,
    "capacity_GiB": 8.0,
    "queue_depth": None,        # the preset's
    "seed": 0,
}
_CHUNK = 1 << 20                # lpns generated per numpy call
_QUEUE_DEPTH = declaration("ssd.queue_depth")
MAX_QUEUE_DEPTH = int(_QUEUE_DEPTH.max)      # NVMe's largest I/O queue (64 Ki commands)


def parse_workload(text: str) -> tuple[str, float, float]:
    """``sequential`` | ``uniform`` | ``hotcold:H/C`` -> (kind, hot write share, hot page share)."""
    t = str(text).strip().lower()
    if t in ("sequential", "uniform"):
        return t, 0.0, 0.0
    if t.startswith("hotcold"):
        _, _, arg = t.partition(":")
        arg = arg or "80/20"
        try:
            h, c = (float(x) for x in arg.split("/"))
        except ValueError:
            h = c = -1.0
        if not (0 < h < 100 and 0 < c < 100):
            raise ConfigError(f"--workload {text!r}: expected hotcold:H/C with 0 < H, C < 100, e.g. hotcold:80/20")
        return "hotcold", h / 100, c / 100
    raise ConfigError(f"--workload {text!r}: must be sequential, uniform or hotcold:H/C (e.g. hotcold:80/20)")


def _lambertw0(x: float) -> float:
    """Principal branch of Lambert W for -1/e <= x < 0 (Halley iteration)."""
    if x <= -1 / math.e:
        return -1.0
    w = -1 + math.sqrt(2 * (1 + math.e * x))          # series near the branch point
    if x > -0.25:
        w = x
    for _ in range(100):
        ew = math.exp(w)
        f = w * ew - x
        step = f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2))
        w -= step
        if abs(step) < 1e-15 * max(1.0, abs(w)):
            break
    return w


def closed_form_waf(alpha: float) -> dict:
    """Steady-state WAF of uniform random single-page overwrites (detailed_model.md §5)."""
    return {
        "fifo": alpha / (alpha + _lambertw0(-alpha * math.exp(-alpha))),
        "random": alpha / (alpha - 1),
    }


class _Workload:
    def __init__(self, kind, hot_writes, hot_pages, n_pages, seed):
        self.kind, self.n = kind, n_pages
        self.rng = np.random.default_rng(seed)
        self.hot_writes = hot_writes
        self.n_hot = max(1, min(n_pages - 1, int(round(hot_pages * n_pages))))
        self.next_seq = 0

    def draw(self, count: int) -> np.ndarray:
        if self.kind == "sequential":
            out = (self.next_seq + np.arange(count, dtype=np.int64)) % self.n
            self.next_seq = int((self.next_seq + count) % self.n)
            return out
        if self.kind == "uniform":
            return self.rng.integers(0, self.n, count, dtype=np.int64)
        hot = self.rng.random(count) < self.hot_writes
        out = self.rng.integers(self.n_hot, self.n, count, dtype=np.int64)
        out[hot] = self.rng.integers(0, self.n_hot, int(hot.sum()), dtype=np.int64)
        return out


def _pass(ssd: SSD, wl: _Workload, count: int, write: bool, now: int) -> int:
    done = now
    left = count
    while left > 0:
        k = min(left, _CHUNK)
        done = max(done, ssd.core.run_pages(wl.draw(k), write, now, True))
        now = ssd.core.py_next_issue_time(now)
        left -= k
    return done


def build_device(preset: str = DEFAULTS["preset"], op: float = DEFAULTS["op"],
                 pages_per_block: int = DEFAULTS["pages_per_block"], victim: str = DEFAULTS["victim"],
                 capacity_GiB: float | None = DEFAULTS["capacity_GiB"], queue_depth: int | None = None,
                 seed: int = 0):
    """The spec the microbenchmark runs: a preset with these overrides, scaled to ``capacity_GiB``."""
    parse_victim(victim, "--victim")
    spec = ssd_preset(preset)
    over = {"overprovisioning": op, "pages_per_block": pages_per_block, "victim_policy": victim, "seed": seed}
    if queue_depth is not None:
        if (isinstance(queue_depth, bool) or not isinstance(queue_depth, (int, np.integer))
                or not _QUEUE_DEPTH.min <= queue_depth <= MAX_QUEUE_DEPTH):
            raise ConfigError(f"--queue-depth {queue_depth!r}: must be an integer in "
                              f"[{_QUEUE_DEPTH.min}, {MAX_QUEUE_DEPTH}] "
                              "(NVMe commands in flight)")
        over["queue_depth"] = int(queue_depth)
    try:
        spec = replace(spec, **over).check()
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("ssd.overprovisioning", "--op (ssd.overprovisioning)")
                          .replace("ssd.pages_per_block", "--pages-per-block (ssd.pages_per_block)")) from None
    if capacity_GiB is not None:
        if not (capacity_GiB > 0 and math.isfinite(capacity_GiB)):
            raise ConfigError(f"--capacity-GiB {capacity_GiB!r}: must be > 0")
        spec = spec.with_user_capacity(int(capacity_GiB * (1 << 30)))
    return spec


def run_microbenchmark(preset: str = DEFAULTS["preset"], op: float = DEFAULTS["op"],
                       pages_per_block: int = DEFAULTS["pages_per_block"], victim: str = DEFAULTS["victim"],
                       workload: str = DEFAULTS["workload"], overwrites: int = DEFAULTS["overwrites"],
                       capacity_GiB: float | None = DEFAULTS["capacity_GiB"], queue_depth: int | None = None,
                       seed: int = 0, progress=None) -> dict:
    """Cold fill, warm-up, one measured write pass and U/4 measured reads; returns a dict
    with ``waf``, ``gc_count``, ``read_GBps``, ``write_GBps``, ``latency_us`` {p50, p99}
    and the details (see the module docstring)."""
    if isinstance(overwrites, bool) or not isinstance(overwrites, int) or overwrites < 1:
        raise ConfigError(f"--overwrites {overwrites!r}: must be an integer >= 1 (the last pass is measured)")
    kind, hot_w, hot_p = parse_workload(workload)
    spec = build_device(preset, op, pages_per_block, victim, capacity_GiB, queue_depth, seed)
    wall0 = time.perf_counter()
    ssd = SSD(spec)
    U = ssd.logical_pages
    wl = _Workload(kind, hot_w, hot_p, U, seed)
    say = progress or (lambda msg: None)

    say(f"cold fill: {U} pages sequentially")
    now = ssd.core.py_write(0, U, 0)
    for i in range(overwrites - 1):
        say(f"warm-up pass {i + 1}/{overwrites - 1}: {U} {kind} writes")
        now = _pass(ssd, wl, U, True, now)
    ssd.reset_stats()
    say(f"measured pass: {U} {kind} writes")
    now = _pass(ssd, wl, U, True, now)
    ws = ssd.stats()
    write_hist = ssd.core.histograms()[1]
    n_reads = max(1, U // 4)
    now = ssd.core.py_idle_at()          # let the write backlog drain: reads see an idle device
    ssd.reset_stats()
    say(f"measured reads: {n_reads} {kind} reads")
    now = _pass(ssd, wl, n_reads, False, now)
    rs = ssd.stats()
    both = write_hist + ssd.core.histograms()[0]
    wall = time.perf_counter() - wall0

    hz = spec.clock_GHz * 1e9
    total_host_writes = U * overwrites
    out = {
        "waf": ws["waf"],
        "gc_count": ws["gc_count"],
        "read_GBps": rs["read_bytes"] / (rs["window_cycles"] / hz) / 1e9 if rs["window_cycles"] else 0.0,
        "write_GBps": ws["write_bytes"] / (ws["window_cycles"] / hz) / 1e9 if ws["window_cycles"] else 0.0,
        "latency_us": {q: percentile_us(both, ssd.bucket_bounds, int(q[1:]) / 100, spec.clock_GHz * 1e3)
                       for q in ("p50", "p99")},
        "write_latency_us": ws["write_latency_us"],
        "read_latency_us": rs["read_latency_us"],
        "gc_time_us": ws["gc_time_us"],
        "gc_copies": ws["gc_copies"],
        "host_write_pages": ws["host_write_pages"],
        "flash_program_pages": ws["flash_program_pages"],
        "erase_counts": ssd.erase_count_summary(),
        "warmup": (f"cold sequential fill of {U} pages, then {overwrites - 1} {workload} pass(es) of {U} "
                   f"writes; measured: pass {overwrites} ({U} writes), then {n_reads} reads"),
        "settings": {"preset": preset, "op": op, "pages_per_block": pages_per_block, "victim": victim,
                     "workload": workload, "overwrites": overwrites, "capacity_GiB": capacity_GiB,
                     "queue_depth": spec.queue_depth, "seed": seed},
        "device": dict(spec.describe(), blocks_per_plane=spec.blocks_per_plane,
                       page_size_bytes=spec.page_size_bytes, n_channels=spec.n_channels,
                       planes_per_channel=spec.planes_per_channel, gc_free_blocks_min=spec.gc_free_blocks_min),
        "wall_s": wall,
        "simulated_page_writes_per_s": {"host": total_host_writes / wall},
    }
    if kind == "uniform":
        out["closed_form_waf"] = closed_form_waf(spec.alpha)
    return out
