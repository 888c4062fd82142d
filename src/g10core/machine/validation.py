"""The flow model beside published measurements of machines (``g10sim machine bench``).

* NVIDIA's GPUDirect Storage Benchmarking and Configuration Guide, DGX-2 section: a 2-drive RAID0
  reads at 6.52 GiB/s into a GPU behind the same PCIe switch and at 3.89 GiB/s (-40 %, twice the
  latency) into a GPU behind another.
* DeepSpeed's DeepNVMe (microsoft/DeepSpeed ``blogs/deepnvme/``): reads / writes of about 10 / 5 GB/s
  with 4 Gen4 drives, 27 / 11 with 4 Gen5 and 48 / 26 with 8 Gen5.

Every predicted figure comes from the shipped machine files' cited figures; nothing here is fitted
to the published numbers.  docs/guide/machines.md gives the reason of every difference over 20 %.
"""
from __future__ import annotations

from dataclasses import replace

from .description import DriveSet, Machine, Socket, Switch, GPUSet, Volume, shipped
from .flows import Transfer, simulate
from .topology import Topology

__all__ = ["gds_near_far", "deepnvme_scaling", "bench", "GiB"]

GiB = float(1 << 30)

# GDS guide, DGX-2: 2-drive RAID0, GiB/s
GDS_NEAR_GiBps = 6.52
GDS_FAR_GiBps = 3.89
# DeepNVMe (GB/s): drive set -> (read, write)
DEEPNVME_GBps = {"4 x Gen4": (10.0, 5.0), "4 x Gen5": (27.0, 11.0), "8 x Gen5": (48.0, 26.0)}
# Drives of each generation (datasheets; docs/guide/machines.md): read, write GB/s, link generation.
#   Gen4: Samsung PM9A3 U.2 3.84 TB, 6,900 / 4,100 MB/s [check]
#   Gen5: Samsung PM1743 U.2 15.36 TB, 13,000 / 6,600 MB/s [check]
DRIVES = {4: (6.9, 4.1), 5: (13.0, 6.6)}


def _read_rate(machine: Machine, gpu: int, nbytes: float = 8 * GiB) -> float:
    """GiB/s of one large GDS read of ``gpu``'s volume into it, alone on the machine."""
    topo = Topology(machine)
    t = [Transfer(0.0, nbytes, tuple(topo.volume_read(gpu)))]
    res = simulate(t)
    return nbytes / GiB / res.finish_s[0]


def gds_near_far() -> list[dict]:
    """The DGX-2's 2-drive RAID0 (drives 0 and 1, behind switch leaf0) read into a GPU behind the same
    switch (GPU 0), behind another switch of the same socket (GPU 2), and behind the other socket (GPU 15)."""
    m = shipped("dgx-2")
    topo = Topology(m)
    rows = []
    for gpu, where, published in ((0, "same switch", GDS_NEAR_GiBps), (2, "another switch, same socket", GDS_FAR_GiBps),
                                  (15, "another socket", GDS_FAR_GiBps)):
        ours = _read_rate(m, gpu)
        rows.append({"case": f"DGX-2 2-drive RAID0 -> GPU {gpu} ({where})", "unit": "GiB/s",
                     "published": published, "ours": round(ours, 3),
                     "difference": round(ours / published - 1, 3),
                     "route": topo.describe(topo.drive_to_gpu(0, gpu))})
    return rows


def drive_set_machine(n: int, generation: int, gpu_model: str, gpu_generation: int) -> Machine:
    """One GPU and ``n`` drives of PCIe ``generation`` (:data:`DRIVES`) on one socket's root ports, RAID0."""
    read, write = DRIVES[generation]
    base = shipped("workstation-1gpu-4ssd")
    return replace(base, name=f"{n} x Gen{generation}", path=f"<{n} x Gen{generation}>",
                   gpus=GPUSet(gpu_model, 1, gpu_generation, 16),
                   drives=DriveSet(n, read, write, "shared", 3576.0, generation, 4),
                   switches=(Switch("rootports", "socket0", "root-ports", 0, 0, (0,), tuple(range(n))),),
                   volumes=(Volume("raid", tuple(range(n)), (0,)),))


def deepnvme_scaling() -> list[dict]:
    """Read and write rates of DeepNVMe's three drive sets, into and out of a GPU by GPUDirect Storage
    (4 x Gen4 with an A100 on PCIe Gen4 x16, Gen5 sets with an H100 on Gen5 x16) and of host memory."""
    rows = []
    for label, (n, gen, gpu, ggen) in {"4 x Gen4": (4, 4, "A100-80GB", 4), "4 x Gen5": (4, 5, "H100-SXM", 5),
                                       "8 x Gen5": (8, 5, "H100-SXM", 5)}.items():
        m = drive_set_machine(n, gen, gpu, ggen)
        topo = Topology(m)
        size = 8e9
        out = {}
        for key, routes in (("gds_read", topo.volume_read(0)), ("gds_write", topo.volume_write(0)),
                            ("host_read", [topo.drive_to_host(d) for d in range(n)]),
                            ("host_write", [topo.host_to_drive(d) for d in range(n)])):
            res = simulate([Transfer(0.0, size, tuple(routes))])
            out[key] = round(size / 1e9 / res.finish_s[0], 3)
        pr, pw = DEEPNVME_GBps[label]
        rows.append({"case": f"DeepNVMe {label}", "unit": "GB/s", "published_read": pr, "published_write": pw,
                     "ours_gds_read": out["gds_read"], "ours_gds_write": out["gds_write"],
                     "ours_host_read": out["host_read"], "ours_host_write": out["host_write"],
                     "difference_read": round(out["host_read"] / pr - 1, 3),
                     "difference_write": round(out["host_write"] / pw - 1, 3)})
    return rows


def contention_demo() -> list[dict]:
    """DGX A100, every GPU reading the shared 8-drive RAID0 at once: each GPU's rate and the busiest hop."""
    m = shipped("dgx-a100")
    topo = Topology(m)
    rows = []
    for n in (1, 2, 4, 8):
        size = 8e9
        ts = [Transfer(0.0, size, tuple(topo.volume_read(g)), name=f"gpu{g}") for g in range(n)]
        res = simulate(ts)
        end = max(res.finish_s)
        busiest = max(res.hop_busy_s, key=lambda h: (res.hop_bytes[h] / topo.bandwidth[h], h))
        rows.append({"gpus": n, "per_gpu_GBps": round(size / 1e9 / end, 3),
                     "total_GBps": round(n * size / 1e9 / end, 3), "busiest_hop": busiest,
                     "busiest_hop_GB": round(res.hop_bytes[busiest] / 1e9, 3)})
    return rows


def bench() -> dict:
    """Every comparison of this module, as one JSON-able dict."""
    return {"gds_near_far": gds_near_far(), "deepnvme": deepnvme_scaling(), "dgx_a100_raid_read": contention_demo()}


# keep the dataclasses' names importable for users building machines in code
_ = (Socket,)
