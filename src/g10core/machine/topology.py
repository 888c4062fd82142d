"""Routes through a machine: which hops a transfer crosses, and at what cost on each.

A *hop* is one resource a transfer shares with the others in flight on it: one direction of a PCIe
link (a GPU's, a drive's, a switch's uplink), a drive's flash (one hop for both directions when its
duplex rule is ``shared``: reads / read bandwidth + writes / write bandwidth <= the time, as
``ssd.duplex`` says; two when ``full``), a socket's memory (reads and writes share the DRAM), the
root complex's peer-to-peer forwarding (only where the machine gives ``p2p_GBps``), the link
between two sockets (each direction), and a GPU's NVLink (each direction).

A route is a tuple of ``(hop, seconds per GB)``: a flow at rate r GB/s uses r x cost of each hop's
time, and a hop's users together use at most all of it (:mod:`g10core.machine.flows`).

The PCIe tree: a transfer between two devices climbs from the first one's switch to the lowest
switch both hang below, then down (peer-to-peer: GPUDirect Storage reads a drive into a GPU so);
devices whose chains end at different sockets cross the root complexes and the inter-socket link.
A transfer to or from host memory climbs to the socket whose memory it uses.
"""
from __future__ import annotations

from .description import Machine, Switch

__all__ = ["Topology", "Route"]

Route = tuple  # of (hop name, seconds per GB)


class Topology:
    """The hops of a :class:`~g10core.machine.description.Machine` and the route of each transfer."""

    def __init__(self, machine: Machine):
        self.machine = m = machine
        # hop -> its bandwidth in GB/s for one direction (for reports; a shared flash hop: its read rate)
        self.bandwidth: dict[str, float] = {}
        for g in range(m.gpus.count):
            self.bandwidth[f"gpu{g} link up"] = self.bandwidth[f"gpu{g} link down"] = m.gpus.link_GBps
            if m.nvlink_GBps is not None:
                self.bandwidth[f"gpu{g} nvlink out"] = self.bandwidth[f"gpu{g} nvlink in"] = m.nvlink_GBps
        for d in range(m.drives.count):
            self.bandwidth[f"drive{d} link up"] = self.bandwidth[f"drive{d} link down"] = m.drives.link_GBps
            if m.drives.duplex == "shared":
                self.bandwidth[f"drive{d} flash"] = m.drives.read_GBps
            else:
                self.bandwidth[f"drive{d} flash read"] = m.drives.read_GBps
                self.bandwidth[f"drive{d} flash write"] = m.drives.write_GBps
        for s in m.switches:
            if s.uplink_GBps is not None:
                self.bandwidth[f"{s.name} uplink up"] = self.bandwidth[f"{s.name} uplink down"] = s.uplink_GBps
        for k in m.sockets:
            self.bandwidth[f"{k.name} memory"] = k.memory_bandwidth_GBps
            if k.p2p_GBps is not None:
                self.bandwidth[f"{k.name} root complex"] = k.p2p_GBps
        if m.inter_socket_GBps is not None:
            for a in m.sockets:
                for b in m.sockets:
                    if a.index != b.index:
                        self.bandwidth[f"{a.name}->{b.name}"] = m.inter_socket_GBps
        self._chain = {s.name: self._chain_of(s) for s in m.switches}

    # ---- the tree ----

    def _chain_of(self, switch: Switch) -> list[Switch]:
        chain = [switch]
        while not chain[-1].parent.startswith("socket"):
            chain.append(self.machine.switch(chain[-1].parent))
        return chain

    def _cost(self, hop: str, GBps: float | None = None) -> tuple[str, float]:
        return (hop, 1.0 / (self.bandwidth[hop] if GBps is None else GBps))

    def _up(self, switches) -> list:
        return [self._cost(f"{s.name} uplink up") for s in switches if s.uplink_GBps is not None]

    def _down(self, switches) -> list:
        return [self._cost(f"{s.name} uplink down") for s in reversed(switches) if s.uplink_GBps is not None]

    def _rc(self, socket: int) -> list:
        hop = f"socket{socket} root complex"
        return [self._cost(hop)] if hop in self.bandwidth else []

    def _across(self, a: int, b: int) -> list:
        return [] if a == b else [self._cost(f"socket{a}->socket{b}")]

    def _between(self, src: Switch, dst: Switch) -> list:
        """The hops from below switch ``src`` to below switch ``dst`` (peer to peer)."""
        up, down = self._chain[src.name], self._chain[dst.name]
        common = next((s for s in up if s in down), None)
        if common is not None:      # root ports forward peer to peer in the root complex
            rc = self._rc(self.machine.socket_of(common)) if common.kind == "root-ports" else []
            return self._up(up[:up.index(common)]) + rc + self._down(down[:down.index(common)])
        a, b = self.machine.socket_of(src), self.machine.socket_of(dst)
        hops = self._up(up) + self._rc(a) + self._across(a, b)
        if a != b:
            hops += self._rc(b)
        return hops + self._down(down)

    def _to_socket(self, src: Switch, socket: int) -> list:
        a = self.machine.socket_of(src)
        return self._up(self._chain[src.name]) + self._across(a, socket)

    def _from_socket(self, socket: int, dst: Switch) -> list:
        b = self.machine.socket_of(dst)
        return self._across(socket, b) + self._down(self._chain[dst.name])

    # ---- device ends ----

    def _flash(self, d: int, write: bool) -> tuple[str, float]:
        m = self.machine
        if m.drives.duplex == "shared":
            return (f"drive{d} flash", 1.0 / (m.drives.write_GBps if write else m.drives.read_GBps))
        return self._cost(f"drive{d} flash write" if write else f"drive{d} flash read")

    def gpu_socket(self, g: int) -> int:
        return self.machine.socket_of(self.machine.switch_of_gpu(g))

    def drive_socket(self, d: int) -> int:
        return self.machine.socket_of(self.machine.switch_of_drive(d))

    # ---- routes ----

    def drive_to_gpu(self, d: int, g: int) -> Route:
        """A GPUDirect Storage read of drive ``d`` into GPU ``g``."""
        m = self.machine
        return tuple([self._flash(d, False), self._cost(f"drive{d} link up")]
                     + self._between(m.switch_of_drive(d), m.switch_of_gpu(g)) + [self._cost(f"gpu{g} link down")])

    def gpu_to_drive(self, g: int, d: int) -> Route:
        """A GPUDirect Storage write from GPU ``g`` to drive ``d``."""
        m = self.machine
        return tuple([self._cost(f"gpu{g} link up")] + self._between(m.switch_of_gpu(g), m.switch_of_drive(d))
                     + [self._cost(f"drive{d} link down"), self._flash(d, True)])

    def drive_to_host(self, d: int, socket: int | None = None) -> Route:
        """A read of drive ``d`` into the memory of ``socket`` (default: the drive's own)."""
        m = self.machine
        socket = self.drive_socket(d) if socket is None else socket
        return tuple([self._flash(d, False), self._cost(f"drive{d} link up")]
                     + self._to_socket(m.switch_of_drive(d), socket) + [self._cost(f"socket{socket} memory")])

    def host_to_drive(self, d: int, socket: int | None = None) -> Route:
        m = self.machine
        socket = self.drive_socket(d) if socket is None else socket
        return tuple([self._cost(f"socket{socket} memory")] + self._from_socket(socket, m.switch_of_drive(d))
                     + [self._cost(f"drive{d} link down"), self._flash(d, True)])

    def host_to_gpu(self, g: int, socket: int | None = None) -> Route:
        """A copy from the memory of ``socket`` (default: the GPU's own) into GPU ``g``."""
        m = self.machine
        socket = self.gpu_socket(g) if socket is None else socket
        return tuple([self._cost(f"socket{socket} memory")] + self._from_socket(socket, m.switch_of_gpu(g))
                     + [self._cost(f"gpu{g} link down")])

    def gpu_to_host(self, g: int, socket: int | None = None) -> Route:
        m = self.machine
        socket = self.gpu_socket(g) if socket is None else socket
        return tuple([self._cost(f"gpu{g} link up")] + self._to_socket(m.switch_of_gpu(g), socket)
                     + [self._cost(f"socket{socket} memory")])

    def gpu_to_gpu(self, a: int, b: int) -> Route:
        """A peer copy: over NVLink where the machine has it, else over the PCIe tree."""
        m = self.machine
        if m.nvlink_GBps is not None:
            return (self._cost(f"gpu{a} nvlink out"), self._cost(f"gpu{b} nvlink in"))
        return tuple([self._cost(f"gpu{a} link up")] + self._between(m.switch_of_gpu(a), m.switch_of_gpu(b))
                     + [self._cost(f"gpu{b} link down")])

    def volume_read(self, g: int) -> list[Route]:
        """GPU ``g``'s GDS read of its volume: one route per drive (RAID0 stripes the bytes evenly)."""
        return [self.drive_to_gpu(d, g) for d in self.machine.volume_of_gpu(g).drives]

    def volume_write(self, g: int) -> list[Route]:
        return [self.gpu_to_drive(g, d) for d in self.machine.volume_of_gpu(g).drives]

    def describe(self, route: Route) -> str:
        """``drive0 flash -> drive0 link up -> ...`` (one line)."""
        return " -> ".join(h for h, _ in route)
