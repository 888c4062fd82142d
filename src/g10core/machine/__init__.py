"""Machines with several GPUs, PCIe switches, drives and sockets (``--machine NAME|FILE``).

* :mod:`.description`: the machine file (TOML), parsed and validated; the shipped machines.
* :mod:`.topology`: the hops of a machine and each transfer's route over them.
* :mod:`.flows`: transfers sharing hops, max-min fair, event by event.
* :func:`single_gpu_sets`: one GPU of a machine as today's one-GPU configuration (``g10sim run --machine``).

docs/guide/machines.md describes them, with the published measurements beside ours.
"""
from __future__ import annotations

from .description import Machine, load, parse, shipped, shipped_names
from .flows import Transfer, max_min_rates, simulate, steady_rate_GBps
from .topology import Topology

__all__ = ["Machine", "Topology", "Transfer", "load", "parse", "shipped", "shipped_names", "max_min_rates",
           "simulate", "steady_rate_GBps", "single_gpu_sets", "single_gpu_rates"]


def _figure(x: float) -> float:
    """A rate as a configuration value: 9 significant digits (1 / (1 / 3.2) is 3.2)."""
    return float(f"{x:.9g}")


def single_gpu_rates(machine: Machine, gpu: int = 0) -> dict[str, float]:
    """GPU ``gpu``'s uncontended rates (GB/s) on its routes, the other GPUs idle: its volume read
    (RAID0 over the volume's drives) and write, and host memory to and from it.

    Parameters
    ----------
    machine : Machine
        The machine.
    gpu : int
        Which of its GPUs.

    Returns
    -------
    dict
        ``ssd_read``, ``ssd_write``, ``host_to_gpu``, ``gpu_to_host`` in GB/s.
    """
    topo = Topology(machine)
    return {"ssd_read": _figure(steady_rate_GBps([topo.volume_read(gpu)])[0]),
            "ssd_write": _figure(steady_rate_GBps([topo.volume_write(gpu)])[0]),
            "host_to_gpu": _figure(steady_rate_GBps([[topo.host_to_gpu(gpu)]])[0]),
            "gpu_to_host": _figure(steady_rate_GBps([[topo.gpu_to_host(gpu)]])[0])}


def single_gpu_sets(machine: Machine, gpu: int = 0, policy=None, preset: str = "default") -> list[str]:
    """``section.key=value`` overrides that put GPU ``gpu`` of ``machine``, alone, into today's one-GPU
    model: its GPU model and link, its volume's read and write rates (RAID0, capped by every hop of
    the route), the drives' duplex rule, host memory and the host route's rate.

    A machine of one GPU and one drive with the preset's figures gives the preset's configuration,
    so today's results.  With several GPUs the others are idle (no contention): a lower bound on
    the time a data-parallel rank would take.

    Parameters
    ----------
    machine : Machine
        The machine (:func:`load`).
    gpu : int
        Which of its GPUs.
    policy : str, optional
        Leave out the machine's keys this policy does not read (a run would warn that they change
        nothing, :func:`g10core.policies.modelled.ignored_parameters`).
    preset : str
        The preset the keys are checked against (with ``policy``).

    Returns
    -------
    list of str
        ``section.key=value`` strings for :func:`g10core.simulator.resolve_config`.
    """
    from ..errors import MachineError

    if not machine.gpus.in_table:
        raise MachineError(f"{machine.path}: [gpus] model = {machine.gpus.model!r} is not a GPU of g10core.gpus "
                           "(the machine describes a topology only: g10sim machine show, g10sim machine bench)")
    r = single_gpu_rates(machine, gpu)
    host = min(r["host_to_gpu"], r["gpu_to_host"])
    sets = [f"gpu.model={machine.gpus.model}", f"link.generation={machine.gpus.link_generation}",
            f"link.lanes={machine.gpus.link_lanes}", f"link.bandwidth_GBps={machine.gpus.link_GBps}",
            f"host.bandwidth_GBps={host}", f"host.memory_GiB={machine.host_memory_GiB}",
            f"cpu.memory_bandwidth_GBps={machine.memory_bandwidth_GBps}",
            f"ssd.bandwidth_GBps={r['ssd_read']}", f"ssd.duplex={machine.drives.duplex}"]
    # 0: the write bandwidth is the read's (the configuration's convention)
    sets.append(f"ssd.write_bandwidth_GBps={0 if r['ssd_write'] == r['ssd_read'] else r['ssd_write']}")
    return sets if policy is None else drop_unread(sets, policy, preset)


def drop_unread(sets: list[str], policy, preset: str = "default") -> list[str]:
    """``sets`` without the keys ``policy`` does not read (``gpu.model`` always stays).

    Parameters
    ----------
    sets : list of str
        ``section.key=value`` overrides.
    policy : str
        A policy name.
    preset : str
        The preset they apply to.

    Returns
    -------
    list of str
        The overrides a run of ``policy`` reads.
    """
    from ..policies.modelled import ignored_parameters
    from ..simulator import resolve_config

    unread = set(ignored_parameters(resolve_config(preset, None, sets), policy))
    return [s for s in sets if s.split("=", 1)[0] not in unread or s.startswith("gpu.model=")]
