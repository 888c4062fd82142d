"""Transfers sharing hops: max-min fair rates by progressive filling, advanced event by event.

Each transfer in flight is a *flow* along a route of hops (:mod:`g10core.machine.topology`); a flow
at rate r GB/s takes r x cost of each hop's time (cost: seconds per GB on that hop), and the flows
on a hop together take at most all of it.  The rates are max-min fair (Bertsekas and Gallager,
*Data Networks*, 2nd ed., Sec. 6.5.2, progressive filling): all flows' rates grow together until a
hop is full; the flows through it freeze; the others go on growing.  So two equal flows on one hop
get half each, and a flow held back elsewhere leaves the rest of a shared hop to the others.

A RAID0 transfer is striped evenly over its drives and its stripes move in lockstep (a request
completes with its last stripe): it is one flow whose cost on each hop is the sum, over the drives'
routes through that hop, of the hop's cost / the number of drives (:func:`stripe`).  So n alike
drives read n times one, up to the first hop they all share, and the slowest drive sets the pace.

The model is fluid (a flow's bytes move at its rate, pipelined along its route: no store and
forward, no per-request latency) and event-driven: rates are recomputed when a flow starts or
ends, never per byte.  Cost per event: O(flows x hops on their routes) per filling round, at most
one round per hop.  Times are seconds (float): the standalone model of the machine; the
simulator's own clock is integer cycles.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

__all__ = ["Transfer", "FlowResult", "max_min_rates", "simulate", "steady_rate_GBps", "stripe"]

# a hop whose load is within this of full is saturated (floats from sums of costs)
_FULL = 1e-12


def stripe(routes) -> tuple:
    """One route for a transfer striped evenly over ``routes`` (one per RAID0 drive), stripes in lockstep:
    a hop's cost is the sum of its costs over the routes through it, divided by their number.

    Parameters
    ----------
    routes : sequence of routes
        Each a sequence of ``(hop, seconds per GB)``.

    Returns
    -------
    tuple
        ``(hop, seconds per GB)`` pairs, hops in first-seen order.
    """
    if len(routes) == 1:
        return tuple(routes[0])
    cost: dict[str, float] = {}
    for route in routes:
        for hop, c in route:
            cost[hop] = cost.get(hop, 0.0) + c / len(routes)
    return tuple(cost.items())


def max_min_rates(routes, caps=None) -> list[float]:
    """The max-min fair rates (GB/s) of flows along ``routes`` (each a sequence of (hop, s/GB)).

    ``caps``: an optional per-flow upper rate (None: none).  Progressive filling: every unfrozen
    flow's rate grows by the same amount until a hop is full or a flow reaches its cap.
    """
    n = len(routes)
    rates = [0.0] * n
    if n == 0:
        return rates
    residual: dict[str, float] = {}
    users: dict[str, list[tuple[int, float]]] = {}
    for i, route in enumerate(routes):
        if not route:
            raise ValueError(f"flow {i} has an empty route")
        for hop, cost in route:
            residual[hop] = 1.0
            users.setdefault(hop, []).append((i, cost))
    frozen = [False] * n
    caps = list(caps) if caps is not None else [None] * n
    live = n
    while live:
        step = math.inf
        for hop, us in users.items():
            load = sum(c for i, c in us if not frozen[i])
            if load > 0:
                step = min(step, residual[hop] / load)
        for i in range(n):
            if not frozen[i] and caps[i] is not None:
                step = min(step, caps[i] - rates[i])
        step = max(step, 0.0)
        for i in range(n):
            if not frozen[i]:
                rates[i] += step
        for hop, us in users.items():
            residual[hop] -= step * sum(c for i, c in us if not frozen[i])
        for hop, us in users.items():
            if residual[hop] <= _FULL:
                for i, _ in us:
                    if not frozen[i]:
                        frozen[i] = True
                        live -= 1
        for i in range(n):
            if not frozen[i] and caps[i] is not None and rates[i] >= caps[i] * (1 - _FULL):
                frozen[i] = True
                live -= 1
    return rates


@dataclass(frozen=True)
class Transfer:
    """``nbytes`` starting at ``start_s`` along ``routes``: one route, or one per RAID0 drive (even stripes)."""

    start_s: float
    nbytes: float
    routes: tuple
    name: str = ""

    def __post_init__(self):
        if not self.routes:
            raise ValueError(f"transfer {self.name!r}: no route")
        if not (self.nbytes >= 0 and math.isfinite(self.nbytes)) or not (self.start_s >= 0):
            raise ValueError(f"transfer {self.name!r}: nbytes and start_s must be finite and >= 0")


@dataclass
class FlowResult:
    """What :func:`simulate` found: each transfer's end, each hop's bytes and busy time."""

    finish_s: list[float]
    hop_bytes: dict[str, float] = field(default_factory=dict)
    hop_busy_s: dict[str, float] = field(default_factory=dict)
    events: int = 0

    def rate_GBps(self, transfers: list[Transfer], i: int) -> float:
        """Transfer ``i``'s average rate from its start to its end."""
        t = self.finish_s[i] - transfers[i].start_s
        return transfers[i].nbytes / 1e9 / t if t > 0 else math.inf


def simulate(transfers: list[Transfer]) -> FlowResult:
    """Run ``transfers`` to their ends with max-min fair sharing; rates change only at starts and ends."""
    order = sorted(range(len(transfers)), key=lambda i: (transfers[i].start_s, i))
    pending = [(transfers[i].start_s, i) for i in order]
    heapq.heapify(pending)
    finish = [math.nan] * len(transfers)
    # active flows: [transfer index, route, remaining GB, size GB, hop -> share of the bytes]
    active: list[list] = []
    result = FlowResult(finish)
    now = 0.0
    while pending or active:
        rates = max_min_rates([f[1] for f in active]) if active else []
        next_start = pending[0][0] if pending else math.inf
        next_end = min((f[2] / r for f, r in zip(active, rates) if r > 0), default=math.inf)
        dt = min(next_start - now, next_end)
        if active and dt > 0:
            used = set()
            for f, r in zip(active, rates):
                moved = min(f[2], r * dt)
                f[2] -= moved
                for hop, frac in f[4].items():
                    result.hop_bytes[hop] = result.hop_bytes.get(hop, 0.0) + moved * frac * 1e9
                    used.add(hop)
            for hop in used:
                result.hop_busy_s[hop] = result.hop_busy_s.get(hop, 0.0) + dt
        now += max(dt, 0.0)
        result.events += 1
        still = []
        for f, r in zip(active, rates):
            if f[2] <= f[3] * 1e-12 or (r > 0 and f[2] / r <= 1e-15 * max(now, 1.0)):
                finish[f[0]] = now
            else:
                still.append(f)
        active = still
        while pending and pending[0][0] <= now:
            _, i = heapq.heappop(pending)
            t = transfers[i]
            if t.nbytes == 0:
                finish[i] = now
                continue
            size = t.nbytes / 1e9
            share: dict[str, float] = {}      # the fraction of the bytes that crosses each hop
            for route in t.routes:
                for hop, _ in route:
                    share[hop] = share.get(hop, 0.0) + 1.0 / len(t.routes)
            active.append([i, stripe(t.routes), size, size, share])
    return result


def steady_rate_GBps(routes_per_transfer) -> list[float]:
    """Each transfer's rate (GB/s) when all of them run at once and none ends (max-min fair).

    Parameters
    ----------
    routes_per_transfer : sequence
        Per transfer, its routes (one, or one per RAID0 drive: :func:`stripe`).

    Returns
    -------
    list of float
        GB/s per transfer.
    """
    return max_min_rates([stripe(routes) for routes in routes_per_transfer])
