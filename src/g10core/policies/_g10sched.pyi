# Type stub of the compiled module g10core.policies._g10sched (see _g10sched.pyx): the G10
# scheduler's array kernels, the same API as the plain-Python reference
# g10core.testing.g10_schedule.  Called by g10core.policies.g10 with validated arrays;
# the arrays named in each docstring of the .pyx are modified in place.
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

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]

def std_sort(p: I64, mode: int, k1: F64, k2: F64) -> None: ...
def walk_forward(cap: F64, est: F64, full: Bool, d: int, size: int, start: int) -> int: ...
def walk_backward(cap: F64, est: F64, full: Bool, d: int, size: int, needed: int) -> int: ...
def reserve_ssd(cap: F64, est: F64, full: Bool, d: int, shadow: int, size: int, start: int) -> int: ...
def reserve_pcie(cap: F64, est: F64, full: Bool, d: int, shadow: int, size: int, start: int) -> int: ...
def prealloc_pass(mem: I64, table: F64, ptensors: I64, pbirth: I64, pdeath: I64, psize: I64,
                  target: int, malloc_us_per_byte: float, emit: bool,
                  hk: I64, ht: I64, ha: I64, nh: I64) -> int: ...
def greedy_pass(mem: I64, cpu: I64, table: F64, ext: F64, cap: F64, est: F64, full: Bool,
                iv_tensor: I64, iv_start: I64, iv_end: I64, iv_looped: Bool, iv_time: F64, iv_size: I64,
                line: int, target: int, cpu_line: int, ssd_lat_us: float, sys_lat_us: float,
                ssd_Bpus: float, host_Bpus: float, delta: float,
                perm: I64, offloaded: Bool, really: Bool, loc_iv: I64, loc_pre: I64, loc_evf: I64,
                n_loc: I64, hk: I64, ht: I64, ha: I64, nh: I64, stats: I64, exact_keys: bool) -> None: ...
def place_prefetches(mem: I64, target: int, loc_iv: I64, loc_pre: I64, loc_evf: I64,
                     iv_tensor: I64, iv_size: I64, hk: I64, ht: I64, ha: I64, nh: I64) -> None: ...
def shave_peak(mem: I64, perm: I64, iv_tensor: I64, iv_start: I64, iv_end: I64, iv_looped: Bool,
               iv_time: F64, iv_size: I64, really: Bool, hill_index: int, hill_mem: int, limit: float,
               hk: I64, ht: I64, ha: I64, nh: I64) -> int: ...
def sort_hints(hk: I64) -> I64: ...
