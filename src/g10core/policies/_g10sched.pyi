# Type stub of the compiled module g10core.policies._g10sched (see _g10sched.pyx): the G10
# scheduler's array kernels, the same API as the plain-Python reference
# g10core.testing.g10_schedule.  Called by g10core.policies.g10 with validated arrays;
# the arrays named in each docstring of the .pyx are modified in place.
from typing import TypedDict

import numpy as np
import numpy.typing as npt

IMPLEMENTATION: str                     # "compiled"

# budget directions: rows of cap / est / full
S2G: int
G2S: int
H2G: int
G2H: int
# hint actions (== g10core.policies.HINT_*)
A_TO_GPU: int
A_TO_SSD: int
A_TO_HOST: int
A_FREE: int
# comparator modes of std_sort
CMP_AREA: int
CMP_LESS: int
CMP_GREATER: int
# greedy_pass: why it stopped (_GreedyStats["end"])
GREEDY_FITS: int                        # every kernel's estimate is under the target
GREEDY_TAKEN: int                       # the best key is an interval already handled (best_by_scan: none is positive)
GREEDY_EXHAUSTED: int                   # one step per interval taken
GREEDY_PARAMS: tuple[str, ...]          # the keys of _GreedyParams (the greedy_params struct)
GREEDY_STATS: tuple[str, ...]           # the keys of _GreedyStats (the greedy_stats struct)

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]

# stub-only types (the module takes and returns plain dicts with these keys)
class _GreedyParams(TypedDict):
    """greedy_pass's scalars (the greedy_params struct of _g10sched.pyx)."""
    gpu_memory_bytes: int               # the line: a key sums the time each kernel's estimate is above it
    target_bytes: int                   # the pass stops once every kernel's estimate is under this
    host_memory_bytes: int              # host memory the host offloads may fill
    ssd_latency_us: float               # SSD access latency
    system_latency_us: float            # system latency of one transfer
    ssd_bytes_per_us: float             # SSD bandwidth
    host_bytes_per_us: float            # host link (PCIe) bandwidth
    delta: float                        # safety margin, a fraction of the move time
    exact_keys: bool                    # every key summed exactly (slower), not only near ties
    looped_budgets: bool                # a looped offload books the bandwidth budgets (False: the artifact's time test)
    shared_ssd: bool                    # SSD reads and writes book one budget (ssd.duplex = shared)
    set_aside_short: bool               # an interval too short for either tier is not chosen again
    best_by_scan: bool                  # the best key by one scan (over the target line when none is over GPU memory)

class _GreedyStats(TypedDict):
    """What greedy_pass did (the greedy_stats struct of _g10sched.pyx)."""
    steps: int                          # greedy steps begun (each sorts the keys once)
    area_sums_exact: int                # keys summed exactly
    area_approximations: int            # keys approximated from the prefix sums
    sorts: int                          # emulated std::sorts of the keys
    offloads_ssd: int                   # local offloads to SSD
    offloads_host: int                  # local offloads to host memory
    offloads_looped: int                # offloads of intervals across the iteration boundary
    dropped_for_bandwidth: int          # chosen, but no bandwidth to move it out and back in time
    end: int                            # GREEDY_*: why the pass stopped

def std_sort(p: I64, mode: int, k1: F64, k2: F64) -> None: ...
def open_bucket_sets(cap: F64, est: F64, full: Bool) -> tuple[I64, I64]: ...
def walk_forward(cap: F64, est: F64, full: Bool, d: int, size: int, start: int,
                 shared_ssd: bool = False, sets: tuple[I64, I64] | None = None) -> int: ...
def walk_backward(cap: F64, est: F64, full: Bool, d: int, size: int, needed: int,
                  shared_ssd: bool = False, sets: tuple[I64, I64] | None = None) -> int: ...
def reserve_ssd(cap: F64, est: F64, full: Bool, d: int, shadow: int, size: int, start: int,
                shared_ssd: bool = False, sets: tuple[I64, I64] | None = None) -> int: ...
def reserve_pcie(cap: F64, est: F64, full: Bool, d: int, shadow: int, size: int, start: int,
                 shared_ssd: bool = False, sets: tuple[I64, I64] | None = None) -> int: ...
def prealloc_pass(mem: I64, table: F64, ptensors: I64, pbirth: I64, pdeath: I64, psize: I64,
                  target: int, malloc_us_per_byte: float, emit: bool,
                  hk: I64, ht: I64, ha: I64, nh: I64) -> int: ...
def greedy_pass(mem: I64, cpu: I64, table: F64, ext: F64, cap: F64, est: F64, full: Bool,
                iv_tensor: I64, iv_start: I64, iv_end: I64, iv_looped: Bool, iv_time: F64, iv_size: I64,
                params: _GreedyParams, perm: I64, offloaded: Bool, really: Bool,
                loc_iv: I64, loc_pre: I64, loc_evf: I64, n_loc: I64,
                hk: I64, ht: I64, ha: I64, nh: I64) -> _GreedyStats: ...
def place_prefetches(mem: I64, target: int, loc_iv: I64, loc_pre: I64, loc_evf: I64,
                     iv_tensor: I64, iv_size: I64, hk: I64, ht: I64, ha: I64, nh: I64,
                     whole: bool = False) -> None: ...
def shave_peak(mem: I64, perm: I64, iv_tensor: I64, iv_start: I64, iv_end: I64, iv_looped: Bool,
               iv_time: F64, iv_size: I64, really: Bool, hill_index: int, hill_mem: int, limit: float,
               hk: I64, ht: I64, ha: I64, nh: I64) -> int: ...
def sort_hints(hk: I64) -> I64: ...
