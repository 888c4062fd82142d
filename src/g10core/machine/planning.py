"""The planner over a machine: the fewest drives, or the least switch uplink, that reach a target
fraction of ideal.

``g10sim machine plan TRACE --machine M --policy P --gpus N --target 0.8``: the ranks' volume is
cut to its first k drives, taken one switch at a time in turn (so k drives spread over the switches
before any switch gets a second), and data-parallel training (:mod:`g10core.machine.training`)
runs at each k the search visits.  More drives never make a run slower for a reason the machine
would not have (each drive adds bandwidth and no hop loses any), so the search is a bisection over
k: about log2(drives) + 1 runs.  The fraction of ideal is the ideal iteration (the trace's kernel
times) over the slowest GPU's iteration, all-reduce included.

``--vary uplink`` instead gives every PCIe switch the same uplink, from the PCIe ladder of
generation x lanes (:func:`uplink_ladder`, ordered by bandwidth), and bisects for the slowest uplink
that reaches the target: a faster uplink never slows a run either (one hop gains bandwidth).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..link.pcie import GENERATIONS
from .description import Machine, Volume, pcie_raw_GBps
from .training import data_parallel

__all__ = ["fewest_drives", "DrivePlan", "drive_order", "least_uplink", "UplinkPlan", "uplink_ladder"]

# the widths a switch's uplink takes (x32 ports are not built as uplinks)
UPLINK_LANES = (1, 2, 4, 8, 16)


def _run(trace, policy: str, machine: Machine, n: int, preset: str, sets) -> tuple:
    """One data-parallel run: (fraction of ideal, iteration s, busiest hop); a failed run reaches 0."""
    res = data_parallel(trace, policy, machine, n, preset=preset, sets=sets)
    if res.failed:
        return (0.0, float("inf"), None)
    ideal = max(g["ideal_s"] for g in res.per_gpu)
    return (ideal / res.iteration_s, res.iteration_s, res.busiest_hop())


def _least_reaching(frac, lo: int, hi: int, target: float) -> int | None:
    """The least i in [lo, hi] with ``frac(i) >= target`` (``frac`` never falls as i grows), or None."""
    if frac(hi) < target:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if frac(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def drive_order(machine: Machine, drives) -> list[int]:
    """``drives`` taken one switch at a time in turn (the switches in file order).

    Parameters
    ----------
    machine : Machine
        The machine.
    drives : sequence of int
        The drives to order (a volume's).

    Returns
    -------
    list of int
        The same drives, spread over the switches first.
    """
    per_switch = [[d for d in s.drives if d in set(drives)] for s in machine.switches]
    out = []
    while any(per_switch):
        for lst in per_switch:
            if lst:
                out.append(lst.pop(0))
    return out


@dataclass
class DrivePlan:
    """What :func:`fewest_drives` found: ``drives`` (None when even all of them miss the target) and
    every run, ``k -> (fraction of ideal, iteration s, busiest hop)``."""

    target: float
    drives: int | None
    runs: dict

    def to_dict(self) -> dict:
        """JSON-able."""
        return {"target": self.target, "drives": self.drives,
                "runs": {str(k): {"fraction_of_ideal": f, "iteration_s": t, "busiest_hop": h}
                         for k, (f, t, h) in sorted(self.runs.items())}}


def fewest_drives(trace, policy: str, machine: Machine, target: float, n_gpus: int | None = None, *,
                  preset: str = "default", sets=()) -> DrivePlan:
    """The fewest drives of the GPUs' volume for which data-parallel training reaches ``target``.

    Parameters
    ----------
    trace : str or path
        The trace.
    policy : str
        A policy that moves data (tensor or page level).
    machine : Machine
        The machine; the first GPU's volume gives the drives to choose from.
    target : float
        The fraction of ideal to reach, in (0, 1].
    n_gpus : int, optional
        Ranks (default all).
    preset : str
        The configuration preset.
    sets : sequence of str
        Overrides after the machine's.

    Returns
    -------
    DrivePlan
        The fewest drives (None if all of them miss the target) and each run made.
    """
    if not 0 < target <= 1:
        raise ValueError(f"--target {target:g}: must be in (0, 1]")
    n = machine.gpus.count if n_gpus is None else int(n_gpus)
    order = drive_order(machine, machine.volume_of_gpu(0).drives)
    runs: dict = {}

    def frac(k: int) -> float:
        if k not in runs:
            m = replace(machine, volumes=(Volume(f"first {k}", tuple(sorted(order[:k])), tuple(range(n))),))
            runs[k] = _run(trace, policy, m, n, preset, sets)
        return runs[k][0]

    return DrivePlan(target, _least_reaching(frac, 1, len(order), target), runs)


def uplink_ladder() -> list[tuple[int, int]]:
    """Every PCIe uplink (generation, lanes) from Gen3 x1 up, by bandwidth per direction; of two
    with the same bandwidth (Gen3 x16 and Gen4 x8), the older generation's."""
    out: dict = {}
    for gen in sorted(g for g in GENERATIONS if g >= 3):
        for lanes in UPLINK_LANES:
            out.setdefault(pcie_raw_GBps(gen, lanes), (gen, lanes))
    return [out[b] for b in sorted(out)]


@dataclass
class UplinkPlan:
    """What :func:`least_uplink` found: ``uplink`` (generation, lanes), None when even the fastest
    misses the target, and every run, ``(generation, lanes) -> (fraction of ideal, iteration s,
    busiest hop)``."""

    target: float
    uplink: tuple[int, int] | None
    runs: dict

    @property
    def uplink_GBps(self) -> float | None:
        return None if self.uplink is None else pcie_raw_GBps(*self.uplink)

    def to_dict(self) -> dict:
        """JSON-able."""
        return {"target": self.target, "uplink": None if self.uplink is None else
                {"generation": self.uplink[0], "lanes": self.uplink[1], "GBps": self.uplink_GBps},
                "runs": {f"Gen{g} x{n}": {"GBps": pcie_raw_GBps(g, n), "fraction_of_ideal": f, "iteration_s": t,
                                          "busiest_hop": h}
                         for (g, n), (f, t, h) in sorted(self.runs.items(), key=lambda kv: pcie_raw_GBps(*kv[0]))}}


def least_uplink(trace, policy: str, machine: Machine, target: float, n_gpus: int | None = None, *,
                 preset: str = "default", sets=()) -> UplinkPlan:
    """The slowest PCIe switch uplink (every switch alike) with which data-parallel training reaches
    ``target``.

    Parameters
    ----------
    trace : str or path
        The trace.
    policy : str
        A policy that moves data (tensor or page level).
    machine : Machine
        The machine; its PCIe switches (``kind = "pcie-switch"``) get the uplink tried.
    target : float
        The fraction of ideal to reach, in (0, 1].
    n_gpus : int, optional
        Ranks (default all).
    preset : str
        The configuration preset.
    sets : sequence of str
        Overrides after the machine's.

    Returns
    -------
    UplinkPlan
        The slowest uplink that reaches the target (None if the fastest misses it) and each run.
    """
    if not 0 < target <= 1:
        raise ValueError(f"--target {target:g}: must be in (0, 1]")
    if not any(s.kind == "pcie-switch" for s in machine.switches):
        raise ValueError(f"{machine.path}: no PCIe switch with an uplink (every switch is root ports): "
                         "nothing for --vary uplink to plan")
    n = machine.gpus.count if n_gpus is None else int(n_gpus)
    ladder = uplink_ladder()
    runs: dict = {}

    def frac(i: int) -> float:
        gen, lanes = ladder[i]
        if (gen, lanes) not in runs:
            m = replace(machine, switches=tuple(replace(s, uplink_generation=gen, uplink_lanes=lanes)
                                                if s.kind == "pcie-switch" else s for s in machine.switches))
            runs[gen, lanes] = _run(trace, policy, m, n, preset, sets)
        return runs[gen, lanes][0]

    rung = _least_reaching(frac, 0, len(ladder) - 1, target)
    return UplinkPlan(target, None if rung is None else ladder[rung], runs)

