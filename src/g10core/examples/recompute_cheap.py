"""A policy in a file: drop cheap activations over long gaps and recompute them (``recompute`` hints).

Run it from the command line by file and class name (g10sim finds the shipped examples by
file name; copy this file to start your own policy)::

    g10sim run bert_base-b256 --policy recompute_cheap.py:RecomputeCheap
    g10sim hints bert_base-b256 --policy recompute_cheap.py:RecomputeCheap -o recompute.h5

What it does.  Activation checkpointing keeps some tensors and regenerates the others when the
backward pass needs them.  This policy regenerates only the cheap ones whose regeneration needs
no extra memory: a non-global tensor ``t`` written once, by kernel ``p``, whose inputs are all
still needed later anyway (global, or read again at or after the use that needs ``t``), and
whose producer is quick (at most ``MAX_RECOMPUTE_MS`` of ideal time) while ``t`` is large (at
least ``MIN_BYTES``).  Over every gap of at least ``MIN_GAP`` kernels between two uses of such
a tensor, it drops ``t`` after the first use (``HINT_FREE`` when the next kernel begins) and
asks for it again at the second (``HINT_RECOMPUTE``): the replay then re-runs ``p`` (a kernel
named ``recompute:<p's name>``, charged to the kernel that needs ``t``) instead of keeping ``t``
on the GPU or moving it.  Everything else is left to the replay's eviction rule, ``arrival``
(the published simulator's "LRU").

A recompute costs the producer's ideal time (plus faulting its inputs in when they are not
resident) and saves the tensor's residency over the gap: see docs/guide/recompute.md.
"""
import numpy as np

from g10core.codes import HINT_FREE, HINT_RECOMPUTE
from g10core.policies import HINT_DTYPE, Policy
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE

MIN_GAP = 50                # kernels between two uses for a drop to be worth it
MIN_BYTES = 16 << 20        # tensors smaller than this stay
MAX_RECOMPUTE_MS = 1.0      # producers slower than this are not re-run


class RecomputeCheap(Policy):
    """Drop large activations of quick producers over long gaps; recompute them when needed."""

    name = "recompute-cheap"
    level = "page"
    eviction = "arrival"
    description = "drop cheap activations over long gaps and recompute them; arrival-order eviction"

    def hints(self, trace) -> np.ndarray:
        K, T = trace.n_kernels, trace.n_tensors
        kernel_of = np.repeat(np.arange(K), np.diff(trace.access_offsets))
        uses = [[] for _ in range(T)]          # (kernel, mode) of every access, in kernel order
        for k, t, m in zip(kernel_of.tolist(), trace.access_tensor.tolist(), trace.access_mode.tolist()):
            uses[t].append((k, m))
        last_read = [max((k for k, m in u if m & ACCESS_READ), default=-1) for u in uses]
        rows = []
        for t in range(T):
            if trace.tensor_is_global[t] or trace.tensor_size_bytes[t] < MIN_BYTES:
                continue
            writers = [k for k, m in uses[t] if m & ACCESS_WRITE]
            if len(writers) != 1:
                continue                       # written more than once: no single producer
            p = writers[0]
            if trace.kernel_time_ideal_ns[p] > MAX_RECOMPUTE_MS * 1e6:
                continue
            ins = trace.kernel_inputs(p).tolist()
            if t in ins:
                continue
            ks = [k for k, _ in uses[t]]
            for a, b in zip(ks, ks[1:]):
                if b - a < MIN_GAP:
                    continue
                # the producer's inputs are kept anyway: global, or read again at or after b
                if all(trace.tensor_is_global[v] or last_read[v] >= b for v in ins):
                    rows.append((a + 1, t, HINT_FREE))
                    rows.append((b, t, HINT_RECOMPUTE))
        table = np.array(sorted(rows, key=lambda r: r[0]), dtype=HINT_DTYPE)
        return table
