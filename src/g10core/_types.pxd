# Shared C types of g10core's compiled layer: every .pyx cimports from here.
# Keep one commented field per line; a struct that mirrors a numpy dtype has a
# test that the two layouts agree (tests/test_types.py).
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef int64_t cycle_t       # simulated time, GPU cycles
ctypedef int64_t page_t        # page number in the virtual address space
ctypedef int32_t tensor_t      # tensor index into the trace's tensor table
ctypedef int32_t kernel_t      # kernel index into one iteration's kernel list

# Where a page lives.
cdef enum Tier:
    TIER_NOT_PRESENT = 0       # never allocated (or freed)
    TIER_SSD = 1
    TIER_HOST = 2
    TIER_GPU = 3

# What a migration hint asks for, applied when its kernel begins.
cdef enum HintAction:
    HINT_TO_GPU = 0            # prefetch, or pre-allocate when not present
    HINT_TO_SSD = 1            # pre-evict to SSD
    HINT_TO_HOST = 2           # pre-evict to host memory
    HINT_FREE = 3              # pre-deallocate (drop, no transfer)

# One migration hint, as stored in a hint table (numpy dtype HINT_DTYPE).
cdef packed struct hint_rec:
    int32_t kernel             # kernel index at which the hint is applied
    int32_t tensor             # tensor index
    int8_t action              # HintAction
