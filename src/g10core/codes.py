"""Codes and record dtypes of the compiled layer, mirrored once for Python.

Each value here equals its C definition in ``_types.pxd`` (``tests/test_types.py``
compares them with what the compiled modules report), so Python code never spells a
code as a bare number.  (Not ``types.py``: that name would shadow the standard
library's ``types`` for any script run from this folder.)

A leaf module: it imports nothing from g10core, so every layer (trace and hint files,
the simulators, the policies) can use the codes without importing the policy registry.
"""
from __future__ import annotations

import numpy as np

# The traces' page: tensors are laid out in 4 KiB pages (workload/trace.py), the unit of every
# page count the replay returns.
PAGE_SIZE_BYTES = 4096

# Tier: where a page lives (_types.Tier).
TIER_NONE = -1
TIER_NOT_PRESENT = 0
TIER_SSD = 1
TIER_HOST = 2
TIER_GPU = 3
TIER_NAMES = {TIER_NOT_PRESENT: "not_present", TIER_SSD: "ssd", TIER_HOST: "host", TIER_GPU: "gpu"}

# HintAction: what a migration hint asks for (_types.HintAction).
HINT_TO_GPU = 0    # prefetch; pre-allocate when the tensor is not present
HINT_TO_SSD = 1    # pre-evict to SSD
HINT_TO_HOST = 2   # pre-evict to host memory
HINT_FREE = 3      # pre-deallocate (drop without transfer)
HINT_RECOMPUTE = 4  # regenerate a dropped tensor by re-running its producer (workload/recompute.py)
ACTION_NAMES = {HINT_TO_GPU: "to_gpu", HINT_TO_SSD: "to_ssd", HINT_TO_HOST: "to_host", HINT_FREE: "free",
                HINT_RECOMPUTE: "recompute"}

# TensorRole: what a tensor is in a training iteration (trace schema 2, ``Trace.tensor_role``;
# ROLE_TEMPORARY from schema 3; Python only: no compiled module reads roles).  Optimizer state
# is what ZeRO counts as such: Adam's m and v, and the fp32 master weights of a mixed-precision run.
ROLE_UNKNOWN = 0
ROLE_PARAMETER = 1
ROLE_GRADIENT = 2
ROLE_OPTIMIZER_STATE = 3
ROLE_ACTIVATION = 4
ROLE_WORKSPACE = 5
ROLE_INPUT = 6
# a non-global tensor written, and read if at all, within one phase (forward, backward or the
# optimizer step) that is none of the roles above: a forward temporary backward does not need, a
# backward temporary (the gradient of an activation), an optimizer temporary (trace format 3)
ROLE_TEMPORARY = 7
# the keys and values of an inference run's attention layers (trace format 5): written by prefill and
# by each decode step for its new tokens, read by every later step's attention (workload/llm.py)
ROLE_KV_CACHE = 8
ROLE_NAMES = {ROLE_UNKNOWN: "unknown", ROLE_PARAMETER: "parameter", ROLE_GRADIENT: "gradient",
              ROLE_OPTIMIZER_STATE: "optimizer_state", ROLE_ACTIVATION: "activation",
              ROLE_WORKSPACE: "workspace", ROLE_INPUT: "input", ROLE_TEMPORARY: "temporary",
              ROLE_KV_CACHE: "kv_cache"}
# memory advice (cudaMemAdvise; issue 37): applied by the far-fault handler (fault.handler = batched)
# and, per tensor, by the slot model with exact quotas (the default preset); g10-artifact ignores it
HINT_ADVISE_PREFER_GPU = 5    # cudaMemAdviseSetPreferredLocation, the GPU
HINT_ADVISE_PREFER_HOST = 6   # cudaMemAdviseSetPreferredLocation, the host: GPU accesses map it remotely
HINT_ADVISE_ACCESSED_BY = 7   # cudaMemAdviseSetAccessedBy, the GPU: host pages mapped remotely, not migrated
HINT_ADVISE_READ_MOSTLY = 8   # cudaMemAdviseSetReadMostly: read duplication
ACTION_NAMES.update({HINT_ADVISE_PREFER_GPU: "prefer_gpu", HINT_ADVISE_PREFER_HOST: "prefer_host",
                     HINT_ADVISE_ACCESSED_BY: "accessed_by", HINT_ADVISE_READ_MOSTLY: "read_mostly"})

# TransferQueue: the batcher's queues (_types.TransferQueue).
QUEUE_NAMES = ("fault_ssd", "fault_host", "fault_alloc", "prefetch_ssd", "prefetch_host",
               "prealloc", "evict_ssd", "evict_host")
Q_FAULT_SSD, Q_FAULT_HOST, Q_FAULT_ALLOC, Q_PREFETCH_SSD, Q_PREFETCH_HOST, Q_PREALLOC, \
    Q_EVICT_SSD, Q_EVICT_HOST = range(len(QUEUE_NAMES))
N_QUEUES = len(QUEUE_NAMES)

# EventKind: events on the engine's queue (_types.EventKind).
EV_KERNEL_BEGIN = 0
EV_SLOT = 1
EV_DEVICE = 2

# One migration hint (struct hint_rec, packed).
HINT_DTYPE = np.dtype([("kernel", "<i4"), ("tensor", "<i4"), ("action", "i1")], align=False)

# One executed kernel (struct kernel_row).
KERNEL_ROW_DTYPE = np.dtype([
    ("iteration", "<i8"), ("kernel", "<i8"), ("start_cycles", "<i8"), ("end_cycles", "<i8"),
    ("in_transfer_pages", "<i8"), ("host_faults_pages", "<i8"), ("ssd_faults_pages", "<i8"),
    ("unallocated_faults_pages", "<i8"), ("host_used_pages", "<i8"), ("gpu_used_pages", "<i8"),
])
KERNEL_COLUMNS = KERNEL_ROW_DTYPE.names

# Pages one executed kernel moved to the GPU besides its demand faults (struct moved_row),
# by cause and source: a row per kernel row.
MOVE_CAUSES = ("prefetched", "hinted", "refetched")
MOVE_SOURCES = ("host", "ssd", "unallocated")
MOVED_ROW_DTYPE = np.dtype([(f"{src}_{cause}_pages", "<i8") for cause in MOVE_CAUSES for src in MOVE_SOURCES])
MOVED_COLUMNS = MOVED_ROW_DTYPE.names

# Traffic of one iteration, in pages (struct traffic_row).
TRAFFIC_ROW_DTYPE = np.dtype([
    ("alloc", "<i8"), ("ssd_to_gpu", "<i8"), ("host_to_gpu", "<i8"), ("gpu_to_ssd", "<i8"),
    ("gpu_to_host", "<i8"),
])


def as_columns(rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An (n, fields) int64 view of records of an all-int64 dtype (a copy for other inputs)."""
    rows = np.asarray(rows)
    if rows.dtype == dtype:
        return np.ascontiguousarray(rows).view(np.int64).reshape(-1, len(dtype.names))
    return np.asarray(rows, np.int64).reshape(-1, len(dtype.names))


def as_records(rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Records of ``dtype`` from an (n, fields) int64 array or from records."""
    rows = np.asarray(rows)
    if rows.dtype == dtype:
        return rows
    return np.ascontiguousarray(np.asarray(rows, np.int64).reshape(-1, len(dtype.names))).view(dtype).reshape(-1)

# The timeline's records (_types.pxd: TimelineChannel, tl_span, tl_op, tl_exec).
TL_CHANNELS = ("host_fault", "host_prefetch", "ssd_fault", "ssd_prefetch",
               "evict_host", "preevict_host", "evict_ssd", "preevict_ssd")
TL_N = len(TL_CHANNELS)
TL_SPAN_DTYPE = np.dtype([("first", "<i8"), ("end", "<i8"), ("pages", "<i8")])
TL_OP_KINDS = ("batch", "hint_prefetch", "hint_preevict")
TL_OP_DTYPE = np.dtype([
    ("exec_index", "<i8"), ("kind", "<i8"), ("start", "<i8"), ("end", "<i8"), ("pages_in", "<i8"),
    ("pages_out", "<i8"), ("units", "<i8"), ("gpu_used", "<i8"),
])
TL_EXEC_DTYPE = np.dtype([
    ("queued_pages", "<i8"), ("gc_first", "<i8"), ("gc_end", "<i8"), ("gc_blocks", "<i8"),
    ("gc_copies", "<i8"), ("gc_busy_cycles", "<i8"),
])
