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


def _fill(croutes, members, ccaps=None) -> list[float]:
    """Progressive filling over classes of flows: ``members[c]`` flows share route ``croutes[c]``
    (and cap ``ccaps[c]``); returns each class's per-flow rate (GB/s)."""
    if ccaps is None:
        ccaps = [None] * len(croutes)
    m = len(croutes)
    residual: dict[str, float] = {}
    users: dict[str, list[tuple[int, float]]] = {}
    for c, route in enumerate(croutes):
        for hop, cost in route:
            residual[hop] = 1.0
            users.setdefault(hop, []).append((c, cost * members[c]))
    rates = [0.0] * m
    frozen = [False] * m
    live = m
    while live:
        step = math.inf
        for hop, us in users.items():
            load = 0.0
            for c, w in us:
                if not frozen[c]:
                    load += w
            if load > 0:
                step = min(step, residual[hop] / load)
        for c in range(m):
            if not frozen[c] and ccaps[c] is not None:
                step = min(step, ccaps[c] - rates[c])
        step = max(step, 0.0)
        for c in range(m):
            if not frozen[c]:
                rates[c] += step
        for hop, us in users.items():
            load = 0.0
            for c, w in us:
                if not frozen[c]:
                    load += w
            residual[hop] -= step * load
        for hop, us in users.items():
            if residual[hop] <= _FULL:
                for c, _ in us:
                    if not frozen[c]:
                        frozen[c] = True
                        live -= 1
        for c in range(m):
            if not frozen[c] and ccaps[c] is not None and rates[c] >= ccaps[c] * (1 - _FULL):
                frozen[c] = True
                live -= 1
    return rates


def max_min_rates(routes, caps=None) -> list[float]:
    """The max-min fair rates (GB/s) of flows along ``routes`` (each a sequence of (hop, s/GB)).

    Progressive filling: every unfrozen flow's rate grows by the same amount until a hop is full
    or a flow reaches its cap; the flows through a full hop freeze.  Flows with the same route (and
    cap) get the same rate, so they are filled as one class of that many flows: the cost per call
    grows with the distinct routes, not with the flows.

    Parameters
    ----------
    routes : sequence of routes
        Each a non-empty sequence of ``(hop, seconds per GB)``.
    caps : sequence of float or None, optional
        A per-flow upper rate (None: none).

    Returns
    -------
    list of float
        GB/s per flow, in the order of ``routes``.
    """
    n = len(routes)
    if n == 0:
        return []
    caps = list(caps) if caps is not None else [None] * n
    class_of: dict = {}
    members: list[int] = []            # flows per class
    croutes: list = []
    ccaps: list = []
    index = [0] * n
    for i, route in enumerate(routes):
        if not route:
            raise ValueError(f"flow {i} has an empty route")
        key = (tuple(route), caps[i])
        c = class_of.get(key)
        if c is None:
            c = class_of[key] = len(croutes)
            croutes.append(tuple(route))
            ccaps.append(caps[i])
            members.append(0)
        members[c] += 1
        index[i] = c
    rates = _fill(croutes, members, ccaps)
    return [rates[index[i]] for i in range(n)]


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
    # with simulate(..., record=True): (hop, start s, end s, fraction of the hop's time in use)
    segments: list = field(default_factory=list)

    def rate_GBps(self, transfers: list[Transfer], i: int) -> float:
        """Transfer ``i``'s average rate from its start to its end."""
        t = self.finish_s[i] - transfers[i].start_s
        return transfers[i].nbytes / 1e9 / t if t > 0 else math.inf


def simulate(transfers: list[Transfer], record: bool = False) -> FlowResult:
    """Run ``transfers`` to their ends with max-min fair sharing; rates change only at starts and ends.

    Transfers along the same routes form a class: they share one rate, so each event costs in
    proportion to the classes in flight and their hops, not to the transfers (a class keeps the
    service S each of its transfers has had since it began, and each transfer the S at which it
    ends; the next to end is the one with the least).

    Parameters
    ----------
    transfers : list of Transfer
        What moves, from when, along which routes.
    record : bool
        Also keep each hop's use between events (``FlowResult.segments``: for a timeline).

    Returns
    -------
    FlowResult
        Each transfer's end (seconds), each hop's bytes and busy time, the number of events.
    """
    order = sorted(range(len(transfers)), key=lambda i: (transfers[i].start_s, i))
    pending = [(transfers[i].start_s, i) for i in order]
    heapq.heapify(pending)
    finish = [math.nan] * len(transfers)
    result = FlowResult(finish)
    classes: dict = {}          # routes -> class
    live: list = []             # classes with transfers in flight
    now = 0.0
    while pending or live:
        rates = _fill([c["route"] for c in live], [len(c["heap"]) for c in live]) if live else []
        next_start = pending[0][0] if pending else math.inf
        next_end = min(((c["heap"][0][0] - c["served"]) / r for c, r in zip(live, rates) if r > 0),
                       default=math.inf)
        dt = min(next_start - now, max(next_end, 0.0))
        if live and dt > 0:
            for c, r in zip(live, rates):
                c["served"] += r * dt
            for hop in set().union(*(c["hops"] for c in live)):
                result.hop_busy_s[hop] = result.hop_busy_s.get(hop, 0.0) + dt
            if record:
                use: dict[str, float] = {}
                for c, r in zip(live, rates):
                    for hop, cost in c["route"]:
                        use[hop] = use.get(hop, 0.0) + r * cost * len(c["heap"])
                result.segments.extend((hop, now, now + dt, min(u, 1.0)) for hop, u in use.items())
        now += max(dt, 0.0)
        result.events += 1
        still = []
        for c in live:
            eps = 1e-12 * max(1.0, c["served"])
            while c["heap"] and c["heap"][0][0] - c["served"] <= eps:
                _, i = heapq.heappop(c["heap"])
                finish[i] = now
                for hop, frac in c["share"].items():       # all its bytes crossed its hops
                    result.hop_bytes[hop] = result.hop_bytes.get(hop, 0.0) + transfers[i].nbytes * frac
            if c["heap"]:
                still.append(c)
        live = still
        while pending and pending[0][0] <= now:
            _, i = heapq.heappop(pending)
            t = transfers[i]
            if t.nbytes == 0:
                finish[i] = now
                continue
            key = tuple(tuple(r) for r in t.routes)
            c = classes.get(key)
            if c is None:
                share: dict[str, float] = {}      # the fraction of the bytes that crosses each hop
                for route in t.routes:
                    for hop, _ in route:
                        share[hop] = share.get(hop, 0.0) + 1.0 / len(t.routes)
                c = classes[key] = {"route": stripe(t.routes), "heap": [], "served": 0.0, "share": share,
                                    "hops": frozenset(share)}
            if not c["heap"]:
                live.append(c)
            heapq.heappush(c["heap"], (c["served"] + t.nbytes / 1e9, i))
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
