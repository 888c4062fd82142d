"""The measurements behind docs/guide/post_g10.md's "Published beside ours" (default preset).

    python tools/post_g10_measures.py ratios LLM.json              # TERAIO vs ZeRO-Offload/-Infinity, from `g10sim reproduce llm --json`
    python tools/post_g10_measures.py peaks ssdtrain TRACE ...      # peak GPU bytes, all and activations, vs nothing offloaded
    python tools/post_g10_measures.py minmem capuchin TRACE ...     # smallest gpu.memory_GiB (0.25 GiB steps) a run finishes on
    python tools/post_g10_measures.py trio --set ssd.bandwidth_GBps=12.8 TRACE ...   # teraio, zero-offload, zero-infinity

``peaks`` runs the policy, then the same simulator with an empty hint table on a 4096 GiB GPU
(nothing offloaded), and counts the pages of tensors of role activation as the tensor-level
simulator places and frees them (it wraps ``TensorLevelSimulator._place`` / ``_free``: a
measurement, not part of the model).  ``--set KEY=VALUE`` applies to every run of a command.
"""
from __future__ import annotations

import argparse
import json
import math
import warnings

import numpy as np

from g10core.codes import HINT_DTYPE, ROLE_ACTIVATION
from g10core.policies import tensorsim
from g10core.simulator import Simulator, resolve_config
from g10core.workload.trace import read_trace
from g10core.workload.tracestore import find_trace

warnings.filterwarnings("ignore")
GiB = 2 ** 30
_ACT = {"mask": None, "cur": 0, "peak": 0}
_S = tensorsim.TensorLevelSimulator
_place, _free = _S._place, _S._free


def _counting_place(self, tensor, high):
    had = self.extent[tensor] >= 0
    ok = _place(self, tensor, high)
    if ok and not had and _ACT["mask"][tensor]:
        _ACT["cur"] += self.pages[tensor]
        _ACT["peak"] = max(_ACT["peak"], _ACT["cur"])
    return ok


def _counting_free(self, tensor):
    if self.extent[tensor] >= 0 and _ACT["mask"][tensor]:
        _ACT["cur"] -= self.pages[tensor]
    _free(self, tensor)


def _run(trace, policy, sets, hints=None):
    try:
        return Simulator(resolve_config("default", sets=list(sets))).run(trace, policy, hints=hints)
    except Exception:           # a trace whose largest kernel alone does not fit: refused before running
        return None


def peaks(policy, names, sets):
    _S._place, _S._free = _counting_place, _counting_free
    for name in names:
        tr = read_trace(find_trace(name))
        out = {}
        for key, extra, hints in (("none", ["gpu.memory_GiB=4096"], np.zeros(0, HINT_DTYPE)), (policy, [], None)):
            _ACT.update(mask=np.asarray(tr.tensor_role) == ROLE_ACTIVATION, cur=0, peak=0)
            r = _run(tr, policy, list(sets) + extra, hints)
            if r is None:
                raise SystemExit(f"{name}: {policy} refused before running")
            out[key] = (r.counters.get("peak_gpu_bytes", 0) / GiB, _ACT["peak"] * 4096 / GiB,
                        None if r.failed else r.iteration_time_s, r.ideal_time_s)
        (tn, an, _, ideal), (tp, ap, time, _) = out["none"], out[policy]
        print(f"{name}\tnothing offloaded: peak {tn:.2f} GiB, activations {an:.2f} GiB\t{policy}: peak {tp:.2f} GiB, "
              f"activations {ap:.2f} GiB\tpeak -{100 * (1 - tp / tn):.1f} %\tactivation peak -{100 * (1 - ap / an):.1f} %"
              f"\ttime {'fails' if time is None else f'{time:.3f} s'} (ideal {ideal:.3f} s)", flush=True)


def minmem(policy, names, sets):
    for name in names:
        tr = read_trace(find_trace(name))

        def ok(g):
            r = _run(tr, policy, list(sets) + [f"gpu.memory_GiB={g}"])
            return r if r is not None and not r.failed else None
        lo, hi = 0.25, 40.0
        best = ok(hi)
        if best is None:
            print(f"{name}\t{policy}\tdoes not run on 40 GiB")
            continue
        while hi - lo > 0.25:
            mid = round((lo + hi) * 2) / 4
            if mid in (lo, hi):
                break
            r = ok(mid)
            lo, hi, best = (mid, hi, best) if r is None else (lo, mid, r)
        print(f"{name}\t{policy}\tsmallest GPU {hi} GiB\ttime {best.iteration_time_s:.3f} s\tideal {best.ideal_time_s:.3f} s",
              flush=True)


def trio(names, sets):
    for name in names:
        tr = read_trace(find_trace(name))
        t = {}
        for pol in ("teraio", "zero-offload", "zero-infinity"):
            r = _run(tr, pol, sets)
            t[pol] = None if r is None or r.failed else r.iteration_time_s
            ideal = tr.ideal_time_ns.sum() / 1e9 if r is None else r.ideal_time_s
        f = lambda x: "fails" if x is None else f"{x:.3f}"
        rat = lambda z: "-" if z is None or t["teraio"] is None else f"{z / t['teraio']:.3f}"
        print(f"{name}\tideal {ideal:.3f}\tteraio {f(t['teraio'])}\tzero-offload {f(t['zero-offload'])}\t"
              f"zero-infinity {f(t['zero-infinity'])}\tZO/TERAIO {rat(t['zero-offload'])}\tZI/TERAIO {rat(t['zero-infinity'])}",
              flush=True)


def ratios(path):
    d = json.load(open(path))
    rows = {(r["model"], r["batch"], r["policy"]): r for r in d["rows"]}
    geo = lambda x: math.exp(sum(map(math.log, x)) / len(x)) if x else float("nan")
    zo, zi, fr = [], [], []
    for (m, b, p), r in rows.items():
        if p != "teraio" or r["failed"]:
            continue
        o, i = rows[(m, b, "zero-offload")], rows[(m, b, "zero-infinity")]
        if not i["failed"]:
            zi.append(i["time_s"] / r["time_s"])
        if not o["failed"] and not i["failed"]:
            zo.append(o["time_s"] / r["time_s"])
            fr.append(r["normalized_performance"])
            print(f"{m} b{b}\tZO/TERAIO {zo[-1]:.3f}\tZI/TERAIO {i['time_s'] / r['time_s']:.3f}\tTERAIO ideal/time {fr[-1]:.3f}")
    allf = [r["normalized_performance"] for (m, b, p), r in rows.items() if p == "teraio" and not r["failed"]]
    print(f"where all three run ({len(zo)} traces): ZO/TERAIO geomean {geo(zo):.3f}, "
          f"TERAIO ideal/time geomean {geo(fr):.3f} (mean {sum(fr) / len(fr):.3f})")
    print(f"where TERAIO and ZeRO-Infinity run ({len(zi)}): ZI/TERAIO geomean {geo(zi):.3f}")
    print(f"TERAIO on all {len(allf)} traces: ideal/time geomean {geo(allf):.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["ratios", "peaks", "minmem", "trio"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--set", action="append", default=[], dest="sets")
    a = ap.parse_intermixed_args()
    if a.command == "ratios":
        ratios(a.args[0])
    elif a.command == "trio":
        trio(a.args, a.sets)
    else:
        (peaks if a.command == "peaks" else minmem)(a.args[0], a.args[1:], a.sets)


if __name__ == "__main__":
    main()
