"""A machine as data: GPUs, PCIe switches, drives, CPU sockets and NVLink, read from a TOML file.

A machine file (``--machine FILE``; shipped ones by name, :func:`shipped`) says::

    name = "DGX A100"
    sources = ["NVIDIA DGX A100 User Guide, Hardware Overview", ...]

    [gpus]                      # every GPU alike
    model = "A100-80GB"         # a row of g10core.gpus
    count = 8
    link_generation = 4         # optional: the model's PCIe generation and lanes
    link_lanes = 16

    [drives]                    # every drive alike
    count = 8
    read_GBps = 7.0
    write_GBps = 3.8            # optional: the read bandwidth
    duplex = "shared"           # reads and writes add up (ssd.duplex), or "full"
    capacity_GiB = 3576
    link_generation = 4
    link_lanes = 4

    [[sockets]]                 # socket 0, 1, ...: the root complex and its memory
    memory_GiB = 1024
    memory_bandwidth_GBps = 204.8

    [inter_socket]              # needed with two sockets or more
    bandwidth_GBps = 128        # per direction

    [[switches]]
    name = "sw0"
    parent = "socket0"          # a socket, or another switch's name (a cascade)
    kind = "pcie-switch"        # or "root-ports": devices on the socket's own root ports, no uplink
    uplink_generation = 4
    uplink_lanes = 16
    gpus = [0, 1]
    drives = [0, 1]

    [nvlink]                    # optional: GPU <-> GPU over NVLink / NVSwitch
    bandwidth_GBps = 300        # per GPU per direction
    allreduce_busbw_GBps = 200  # optional: a published NCCL all-reduce bus bandwidth on this machine

    [[volumes]]                 # optional RAID0 volumes; default: one of every drive, for every GPU
    name = "raid"
    drives = [0, 1, 2, 3]
    gpus = [0, 1]

Every GPU and every drive sits behind exactly one switch; every switch's chain of parents ends at a
socket; a GPU reads the drives of its volume over a route (:mod:`g10core.machine.topology`).  A file
that breaks a rule is refused with one line naming the file and the entry (:class:`MachineError`).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import MachineError
from ..files import read_text
from ..gpus import GPUS
from ..link.pcie import GENERATIONS

__all__ = ["Machine", "GPUSet", "DriveSet", "Socket", "Switch", "Volume", "load", "parse", "shipped",
           "shipped_names", "pcie_raw_GBps"]

LANES = (1, 2, 4, 8, 16, 32)
DUPLEX = ("shared", "full")
SWITCH_KINDS = ("pcie-switch", "root-ports")


def pcie_raw_GBps(generation: int, lanes: int) -> float:
    """Raw bandwidth per direction after line encoding, GB/s (Gen3 x16: 15.754), as the configuration's
    ``link.bandwidth_GBps`` counts it (:mod:`g10core.link.pcie`)."""
    gts, enc = GENERATIONS[generation]
    return round(float(gts * enc * lanes / 8), 3)


@dataclass(frozen=True)
class GPUSet:
    model: str
    count: int
    link_generation: int
    link_lanes: int

    @property
    def in_table(self) -> bool:
        """Whether ``model`` is a row of :data:`g10core.gpus.GPUS` (a trace can run on it)."""
        return self.model in GPUS

    @property
    def link_GBps(self) -> float:
        return pcie_raw_GBps(self.link_generation, self.link_lanes)


@dataclass(frozen=True)
class DriveSet:
    count: int
    read_GBps: float
    write_GBps: float
    duplex: str
    capacity_GiB: float
    link_generation: int
    link_lanes: int

    @property
    def link_GBps(self) -> float:
        return pcie_raw_GBps(self.link_generation, self.link_lanes)


@dataclass(frozen=True)
class Socket:
    index: int
    memory_GiB: float
    memory_bandwidth_GBps: float
    # root-complex peer-to-peer forwarding limit (None: no limit of its own)
    p2p_GBps: float | None = None

    @property
    def name(self) -> str:
        return f"socket{self.index}"


@dataclass(frozen=True)
class Switch:
    name: str
    parent: str                     # "socketN" or a switch name
    kind: str
    uplink_generation: int
    uplink_lanes: int
    gpus: tuple[int, ...]
    drives: tuple[int, ...]

    @property
    def uplink_GBps(self) -> float | None:
        """The uplink's bandwidth per direction; None for root ports (no uplink of their own)."""
        if self.kind == "root-ports":
            return None
        return pcie_raw_GBps(self.uplink_generation, self.uplink_lanes)


@dataclass(frozen=True)
class Volume:
    name: str
    drives: tuple[int, ...]
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Machine:
    """A validated machine description (build with :func:`load` or :func:`parse`)."""

    name: str
    path: str
    gpus: GPUSet
    drives: DriveSet
    sockets: tuple[Socket, ...]
    switches: tuple[Switch, ...]
    volumes: tuple[Volume, ...]
    inter_socket_GBps: float | None
    nvlink_GBps: float | None
    allreduce_busbw_GBps: float | None = None
    sources: tuple[str, ...] = field(default=(), compare=False)

    def switch_of_gpu(self, gpu: int) -> Switch:
        return next(s for s in self.switches if gpu in s.gpus)

    def switch_of_drive(self, drive: int) -> Switch:
        return next(s for s in self.switches if drive in s.drives)

    def switch(self, name: str) -> Switch:
        return next(s for s in self.switches if s.name == name)

    def volume_of_gpu(self, gpu: int) -> Volume:
        """The volume GPU ``gpu`` offloads to (the first that names it)."""
        return next(v for v in self.volumes if gpu in v.gpus)

    def socket_of(self, switch: Switch) -> int:
        """The socket a switch's chain of parents ends at."""
        s = switch
        while not s.parent.startswith("socket"):
            s = self.switch(s.parent)
        return int(s.parent[len("socket"):])

    @property
    def host_memory_GiB(self) -> float:
        return sum(s.memory_GiB for s in self.sockets)

    @property
    def memory_bandwidth_GBps(self) -> float:
        return sum(s.memory_bandwidth_GBps for s in self.sockets)

    def to_dict(self) -> dict:
        return {"name": self.name, "path": self.path,
                "gpus": {"model": self.gpus.model, "count": self.gpus.count,
                         "link_generation": self.gpus.link_generation, "link_lanes": self.gpus.link_lanes},
                "drives": {"count": self.drives.count, "read_GBps": self.drives.read_GBps,
                           "write_GBps": self.drives.write_GBps, "duplex": self.drives.duplex,
                           "capacity_GiB": self.drives.capacity_GiB,
                           "link_generation": self.drives.link_generation, "link_lanes": self.drives.link_lanes},
                "sockets": [{"memory_GiB": s.memory_GiB, "memory_bandwidth_GBps": s.memory_bandwidth_GBps,
                             "p2p_GBps": s.p2p_GBps} for s in self.sockets],
                "inter_socket_GBps": self.inter_socket_GBps, "nvlink_GBps": self.nvlink_GBps,
                "allreduce_busbw_GBps": self.allreduce_busbw_GBps,
                "switches": [{"name": s.name, "parent": s.parent, "kind": s.kind,
                              "uplink_generation": s.uplink_generation, "uplink_lanes": s.uplink_lanes,
                              "gpus": list(s.gpus), "drives": list(s.drives)} for s in self.switches],
                "volumes": [{"name": v.name, "drives": list(v.drives), "gpus": list(v.gpus)} for v in self.volumes],
                "sources": list(self.sources)}


# ---- shipped machines ------------------------------------------------------------------------

def shipped_names() -> list[str]:
    """The machines shipped with g10core (``--machine NAME``)."""
    return sorted(p.name[:-5] for p in resources.files(__package__).joinpath("data").iterdir()
                  if p.name.endswith(".toml"))


def shipped(name: str) -> Machine:
    """A shipped machine by name (``dgx-a100``, ``dgx-2``, ``dgx-h100``, ``workstation-1gpu-4ssd``)."""
    names = shipped_names()
    if name not in names:
        raise MachineError(f"unknown machine {name!r}; shipped: {', '.join(names)} (or give a .toml file)")
    res = resources.files(__package__).joinpath("data", name + ".toml")
    return parse(res.read_text(encoding="utf-8"), name)


def load(spec) -> Machine:
    """A machine from a shipped name or a TOML file path.

    Parameters
    ----------
    spec : str or path
        A shipped machine's name (:func:`shipped_names`) or a machine file.

    Returns
    -------
    Machine
        The validated machine; a bad file raises :class:`~g10core.errors.MachineError`, one line
        naming the file and the entry.
    """
    text = str(spec)
    if not text.endswith(".toml") and "/" not in text and text in shipped_names():
        return shipped(text)
    path = Path(spec)
    if not path.exists():
        if text.endswith(".toml") or "/" in text:
            raise MachineError(f"{text}: no such machine file")
        return shipped(text)     # the unknown-name message lists the shipped ones
    return parse(read_text(path, "machine file (TOML)", MachineError), text)


# ---- parsing and validation ------------------------------------------------------------------

class _Reader:
    """Typed access to one TOML table; every error names the file and the entry."""

    def __init__(self, path: str, entry: str, table):
        self.path, self.entry = path, entry
        if not isinstance(table, dict):
            self.fail(f"must be a table of key = value, not {type(table).__name__}")
        self.table = dict(table)
        self.used: set[str] = set()

    def fail(self, reason: str):
        raise MachineError(f"{self.path}: {self.entry}: {reason}")

    def get(self, key, kind, default=None, required=True):
        self.used.add(key)
        if key not in self.table:
            if required and default is None:
                self.fail(f"missing key {key!r}")
            return default
        value = self.table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            self.fail(f"{key} = {value!r}: expected an integer")
        if kind is float and not isinstance(value, float):
            self.fail(f"{key} = {value!r}: expected a number")
        if kind is str and not isinstance(value, str):
            self.fail(f"{key} = {value!r}: expected a string")
        if kind is list and not isinstance(value, list):
            self.fail(f"{key} = {value!r}: expected a list")
        return value

    def positive(self, key, kind=float, default=None, required=True, maximum=1e7):
        value = self.get(key, kind, default, required)
        if value is not None and not (0 < value <= maximum):
            self.fail(f"{key} = {value!r}: must be > 0 and <= {maximum:g}")
        return value

    def choice(self, key, choices, default=None):
        value = self.get(key, str if isinstance(choices[0], str) else int, default)
        if value not in choices:
            self.fail(f"{key} = {value!r}: must be one of {', '.join(map(str, choices))}")
        return value

    def indices(self, key, count: int, what: str) -> tuple[int, ...]:
        values = self.get(key, list, default=[], required=False)
        out = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < count:
                self.fail(f"{key}: {v!r} is not a {what} index (0..{count - 1})")
            if v in out:
                self.fail(f"{key}: {what} {v} is listed twice")
            out.append(v)
        return tuple(out)

    def done(self):
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            self.fail(f"unknown key {unknown[0]!r}")


def parse(text: str, path: str = "<machine>") -> Machine:
    """A validated :class:`Machine` from TOML text.

    Parameters
    ----------
    text : str
        The machine file's text (the module docstring gives its tables).
    path : str
        What errors call it (the file's path, or a shipped machine's name).

    Returns
    -------
    Machine
        The machine; a broken rule raises :class:`~g10core.errors.MachineError`.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MachineError(f"{path}: not valid TOML: {exc}") from None
    top = _Reader(path, "top level", data)
    name = top.get("name", str, default=Path(path).stem, required=False)
    sources = top.get("sources", list, default=[], required=False)

    g = _Reader(path, "[gpus]", top.get("gpus", dict))
    model = g.get("model", str)
    count = g.positive("count", int, maximum=1024)
    if model in GPUS:
        gen_default, lanes_default = GPUS[model].pcie_generation, GPUS[model].pcie_lanes
    else:
        gen_default = lanes_default = None       # a GPU outside the table must name its link
    gpus = GPUSet(model, count, g.choice("link_generation", tuple(GENERATIONS), gen_default),
                  g.choice("link_lanes", LANES, lanes_default))
    g.done()

    d = _Reader(path, "[drives]", top.get("drives", dict))
    dcount = d.positive("count", int, maximum=1024)
    read = d.positive("read_GBps")
    drives = DriveSet(dcount, read, d.positive("write_GBps", default=read, required=False),
                      d.choice("duplex", DUPLEX, "shared"), d.positive("capacity_GiB", maximum=1 << 24),
                      d.choice("link_generation", tuple(GENERATIONS)), d.choice("link_lanes", LANES))
    d.done()

    raw_sockets = top.get("sockets", list)
    if not raw_sockets:
        top.fail("[[sockets]]: at least one socket")
    sockets = []
    for i, t in enumerate(raw_sockets):
        r = _Reader(path, f"[[sockets]] {i}", t)
        sockets.append(Socket(i, r.positive("memory_GiB", maximum=1 << 24), r.positive("memory_bandwidth_GBps"),
                              r.positive("p2p_GBps", required=False)))
        r.done()

    inter = None
    if "inter_socket" in data:
        r = _Reader(path, "[inter_socket]", top.get("inter_socket", dict))
        inter = r.positive("bandwidth_GBps")
        r.done()
    nvlink = busbw = None
    if "nvlink" in data:
        r = _Reader(path, "[nvlink]", top.get("nvlink", dict))
        nvlink = r.positive("bandwidth_GBps")
        busbw = r.positive("allreduce_busbw_GBps", required=False)
        r.done()

    switches: list[Switch] = []
    for i, t in enumerate(top.get("switches", list)):
        r = _Reader(path, f"[[switches]] {i}", t)
        sname = r.get("name", str)
        r.entry = f"[[switches]] {sname!r}"
        if sname.startswith("socket"):
            r.fail("a switch's name may not start with 'socket' (the sockets' names)")
        if any(s.name == sname for s in switches):
            r.fail("two switches have this name")
        kind = r.choice("kind", SWITCH_KINDS, "pcie-switch")
        parent = r.get("parent", str)
        if kind == "root-ports" and not parent.startswith("socket"):
            r.fail(f"parent = {parent!r}: root ports belong to a socket ('socket0', ...)")
        uplink = (r.choice("uplink_generation", tuple(GENERATIONS)), r.choice("uplink_lanes", LANES)) \
            if kind == "pcie-switch" else (0, 0)
        switches.append(Switch(sname, parent, kind, *uplink, r.indices("gpus", count, "GPU"),
                               r.indices("drives", dcount, "drive")))
        r.done()
    if not switches:
        top.fail("[[switches]]: at least one (a GPU or drive behind no switch has no route)")

    _check_tree(path, switches, len(sockets))
    for what, n, attr in (("gpu", count, "gpus"), ("drive", dcount, "drives")):
        for k in range(n):
            behind = [s.name for s in switches if k in getattr(s, attr)]
            if not behind:
                raise MachineError(f"{path}: {what} {k}: behind no switch (list it in one [[switches]] {attr})")
            if len(behind) > 1:
                raise MachineError(f"{path}: {what} {k}: behind two switches ({behind[0]!r} and {behind[1]!r})")

    volumes = []
    raw_volumes = top.get("volumes", list, default=[], required=False)
    for i, t in enumerate(raw_volumes):
        r = _Reader(path, f"[[volumes]] {i}", t)
        vname = r.get("name", str)
        r.entry = f"[[volumes]] {vname!r}"
        vd = r.indices("drives", dcount, "drive")
        if not vd:
            r.fail("drives: at least one")
        vg = r.indices("gpus", count, "GPU")
        volumes.append(Volume(vname, vd, vg))
        r.done()
    if not volumes:
        volumes = [Volume("all", tuple(range(dcount)), tuple(range(count)))]
    for k in range(count):
        if not any(k in v.gpus for v in volumes):
            raise MachineError(f"{path}: gpu {k}: in no [[volumes]] gpus (which drives does it offload to?)")
    top.done()

    machine = Machine(str(name), path, gpus, drives, tuple(sockets), tuple(switches), tuple(volumes), inter,
                      nvlink, busbw, tuple(map(str, sources)))
    _check_routes(machine)
    return machine


def _check_tree(path: str, switches: list[Switch], n_sockets: int) -> None:
    """Every switch's parent exists and its chain of parents ends at a socket (no cycle)."""
    by_name = {s.name: s for s in switches}
    for s in switches:
        p = s.parent
        if p.startswith("socket"):
            if p[6:] not in {str(i) for i in range(n_sockets)}:
                raise MachineError(f"{path}: [[switches]] {s.name!r}: parent {p!r} is not a socket "
                                   f"(socket0..socket{n_sockets - 1})")
        elif p not in by_name:
            raise MachineError(f"{path}: [[switches]] {s.name!r}: parent {p!r} is neither a socket nor a switch")
    for s in switches:
        chain, cur = [s.name], s
        while not cur.parent.startswith("socket"):
            cur = by_name[cur.parent]
            if cur.name in chain:
                loop = " -> ".join(chain[chain.index(cur.name):] + [cur.name])
                raise MachineError(f"{path}: [[switches]] {s.name!r}: the parents make a cycle ({loop})")
            chain.append(cur.name)


def _check_routes(m: Machine) -> None:
    """Every GPU reaches every drive of its volume (two sockets need [inter_socket])."""
    for v in m.volumes:
        for g in v.gpus:
            gs = m.socket_of(m.switch_of_gpu(g))
            for d in v.drives:
                ds = m.socket_of(m.switch_of_drive(d))
                if gs != ds and m.inter_socket_GBps is None:
                    raise MachineError(
                        f"{m.path}: [[volumes]] {v.name!r}: gpu {g} (socket{gs}) has no route to drive {d} "
                        f"(socket{ds}): give [inter_socket] bandwidth_GBps")
