"""vLLM-style preemption when the KV cache outgrows its GPU budget: swap to host memory or recompute.

vLLM (Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023, section 4.5 "Scheduling and Preemption") keeps the KV cache in blocks
of ``block_size`` tokens (16 by default).  When a decode step needs a block and none is free, it
preempts sequences, the latest to arrive first (first-come first-served), evicting all of a
sequence's blocks, and recovers them later in one of two ways:

* **recompute**: the sequence goes back to the front of the waiting queue; when it is admitted
  again its prompt and the tokens generated so far are run as one prefill, rebuilding its cache;
* **swap**: its blocks are copied to host memory (the swap space, 4 GiB per GPU by default) and
  copied back when there are free blocks for all of them.

The engine's rule (vLLM's scheduler): recompute for a sequence group of one sequence (the
default, cheaper for short sequences), swap for a group of several (parallel sampling, beam
search: ``seqs_per_group > 1``), since recomputation would lose their shared prefix.  ``mode``
forces one or the other.

The run here is the trace's ``batch`` requests (its prompt and generation length each), or requests
of their own lengths (``prompt_tokens``, ``output_tokens``; :func:`read_requests` reads them from a
CSV file, as a serving benchmark's dataset gives them), served by that scheduler, step by step.  They arrive at once by default, or over time (``arrival_s``, e.g.
:func:`poisson_arrivals` at a request rate, as vLLM's serving benchmark draws them): the scheduler
then batches continuously (Yu et al., "Orca", OSDI 2022; vLLM's iteration-level scheduling), taking
in a request at the first step after it arrives, and sits idle when no request is in the system.
Each step either admits
waiting sequences (a prefill of their prompts, or of prompt and generated tokens after a
recompute preemption), swaps sequences back in, or runs one decode step of every running
sequence.  Costs come from the trace, kernel by kernel (``physical-v1`` on its GPU):

* a decode step of ``r`` sequences: every decode kernel's time at ``r`` interpolated between its
  weight-only floor (launch + its weights' bytes at the memory bandwidth, what does not depend on
  the batch) and its time at the trace's batch, linearly in ``r`` (exact where a kernel is
  memory-bound, as decode kernels are, and where it is compute-bound; beyond the trace's batch,
  extrapolated on the same line), at the trace's decode step nearest the running sequences' mean
  context (prompt plus tokens so far), within the trace's steps: a context longer than the
  trace's prompt plus generation costs its last step's time (``beyond_trace_context``: a lower
  bound, attention grows with the context);
* a prefill of ``n`` tokens: the trace's prefill time per token;
* a swap: the sequence's blocks over the GPU link (GPU-to-host out, host-to-GPU in), the model
  waiting for them (vLLM issues the copies before the step's forward pass).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..codes import ROLE_KV_CACHE
from ..errors import SimulationError
from ..gpus import gpu_model
from ..workload.physical import physical_model
from ..workload.trace import Trace
from .schedule import GB, Machine, layer_stats

BLOCK_SIZE = 16                      # vLLM's default block_size (tokens per KV block)
SWAP_SPACE_BYTES = 4 * (1 << 30)     # vLLM's default swap_space: 4 GiB per GPU
MODES = ("auto", "recompute", "swap")


@dataclass(frozen=True)
class PreemptionResult:
    """One batch served under a KV budget."""

    mode: str                    # the recovery used: recompute or swap
    batch: int
    prompt: int
    gen: int
    kv_budget_bytes: float
    block_size: int
    total_s: float
    ttft_s: float                # mean over sequences: arrival (0) to its first token
    preemptions: int
    recomputed_tokens: int
    swapped_bytes: float
    steps: int
    # per request, from its arrival: time to first token and to its last token (end-to-end latency)
    ttft_p50_s: float = 0.0
    ttft_p99_s: float = 0.0
    latency_mean_s: float = 0.0
    latency_p99_s: float = 0.0
    first_arrival_s: float = 0.0  # tokens/s counts from the first arrival to the last token
    last_arrival_s: float = 0.0
    # requests of their own lengths: the tokens they generate in all, and their mean lengths
    output_tokens: int = 0        # 0: batch x gen (every request the trace's lengths)
    prompt_mean: float = 0.0
    gen_mean: float = 0.0
    beyond_trace_context: bool = False   # some step's mean context was past the trace's last step

    @property
    def tokens_per_s(self) -> float:
        return (self.output_tokens or self.batch * self.gen) / (self.total_s - self.first_arrival_s)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tokens_per_s"] = self.tokens_per_s
        return d


def poisson_arrivals(n: int, rate_per_s: float, seed: int = 0) -> np.ndarray:
    """``n`` request arrival times (s) of a Poisson process at ``rate_per_s``: exponential gaps, the
    first at its gap after 0, as vLLM's ``benchmark_serving.py`` draws them (``--request-rate``).

    Parameters
    ----------
    n : int
        Requests.
    rate_per_s : float
        Mean arrivals per second (> 0).
    seed : int
        The generator's seed (numpy ``PCG64``): the same seed gives the same arrivals.

    Returns
    -------
    numpy.ndarray
        float64, ascending.
    """
    if not (isinstance(rate_per_s, (int, float)) and np.isfinite(rate_per_s) and rate_per_s > 0):
        raise ValueError(f"request rate {rate_per_s!r}: must be a number > 0 (requests per second)")
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.cumsum(rng.exponential(1.0 / rate_per_s, size=int(n)))


REQUEST_COLUMNS = ("prompt_tokens", "output_tokens", "arrival_s")


def read_requests(path) -> dict:
    """Requests of their own lengths from a CSV file with a header: ``prompt_tokens`` and
    ``output_tokens`` (integers >= 1) and, optionally, ``arrival_s`` (seconds >= 0), one row per
    request (other columns are ignored).

    Parameters
    ----------
    path : str or path
        The CSV file.

    Returns
    -------
    dict
        ``prompt_tokens``, ``output_tokens`` (int64 arrays) and ``arrival_s`` (float64, or None
        without the column), the keyword arguments of :func:`serve_with_preemption`.

    Raises
    ------
    InputError
        One line naming the file, the row and the column: a missing column, a value that is not a
        number or out of range, no row.
    """
    import csv
    import math

    from ..errors import InputError

    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = [c.strip() for c in (reader.fieldnames or [])]
        missing = [c for c in REQUEST_COLUMNS[:2] if c not in cols]
        if missing:
            raise InputError(f"{path}: no column {', no column '.join(missing)} in the header (columns: "
                             f"prompt_tokens, output_tokens and optionally arrival_s)")
        reader.fieldnames = cols
        out = {c: [] for c in REQUEST_COLUMNS}
        for row_no, row in enumerate(reader, start=2):
            for c in REQUEST_COLUMNS:
                if c == "arrival_s" and "arrival_s" not in cols:
                    continue
                text = (row.get(c) or "").strip()
                try:
                    v = float(text)
                except ValueError:
                    raise InputError(f"{path}: row {row_no}, column {c}: {text!r} is not a number") from None
                if c == "arrival_s":
                    if not (math.isfinite(v) and v >= 0):
                        raise InputError(f"{path}: row {row_no}, column {c}: {text!r}: must be a time >= 0 (s)")
                elif not (math.isfinite(v) and v >= 1 and v == int(v)):
                    raise InputError(f"{path}: row {row_no}, column {c}: {text!r}: must be a whole number of "
                                     "tokens >= 1")
                out[c].append(v)
    if not out["prompt_tokens"]:
        raise InputError(f"{path}: no request (a header and one row per request)")
    return {"prompt_tokens": np.asarray(out["prompt_tokens"], np.int64),
            "output_tokens": np.asarray(out["output_tokens"], np.int64),
            "arrival_s": np.asarray(out["arrival_s"], np.float64) if "arrival_s" in cols else None}


def _decode_model(trace: Trace):
    """(floor_s, at_batch_s) per decode phase: the decode kernels' weight-only floor and their time at
    the trace's batch, summed per phase (index 1..gen-1)."""
    g = gpu_model(trace.profiled_gpu)
    pm = physical_model()
    phase = trace.kernel_phase.astype(np.int64)
    K = trace.n_kernels
    ak = np.repeat(np.arange(K), np.diff(trace.access_offsets))
    at = trace.access_tensor.astype(np.int64)
    names = trace.tensor_name.astype(str)
    # what does not depend on the batch: the weights, and their dequantised fp16 copies
    fixed = trace.tensor_is_global | np.char.startswith(names, "fp16:")
    w_bytes = np.bincount(ak[fixed[at]], weights=trace.tensor_size_bytes[at[fixed[at]]].astype(float), minlength=K)
    floor = pm.launch_overhead_us * 1e-6 + w_bytes / (pm.memory_fraction * g.memory_bandwidth_GBps * 1e9)
    t = trace.kernel_time_ideal_ns / 1e9
    floor = np.minimum(floor, t)
    P = int(phase.max()) + 1
    return (np.bincount(phase, weights=floor, minlength=P), np.bincount(phase, weights=t, minlength=P))


def serve_with_preemption(trace: Trace, machine: Machine, kv_budget_bytes: float | None = None, mode: str = "auto",
                          seqs_per_group: int = 1, block_size: int = BLOCK_SIZE,
                          swap_space_bytes: float = SWAP_SPACE_BYTES, arrival_s=None, prompt_tokens=None,
                          output_tokens=None) -> PreemptionResult:
    """Serve the trace's batch with its KV cache limited to ``kv_budget_bytes`` on the GPU.

    Parameters
    ----------
    trace : Trace
        An inference trace (one GPU batch: ``gpu_batches`` 1).
    machine : Machine
        Its GPU must be the trace's.
    kv_budget_bytes : float, optional
        The GPU memory for KV blocks; default: the GPU's memory less the weights and the largest
        kernel's activations (vLLM's ``gpu_memory_utilization`` share left after profiling).
    mode : str
        ``auto`` (vLLM's rule: recompute for ``seqs_per_group`` 1, swap otherwise), ``recompute``
        or ``swap``.
    block_size, swap_space_bytes :
        vLLM's ``block_size`` (16) and ``swap_space`` (4 GiB).
    arrival_s : sequence of float, optional
        When each of the batch's requests arrives (seconds, >= 0, one per request; served first
        come first served); default: all at 0.
    prompt_tokens, output_tokens : sequence of int, optional
        Each request's prompt length and the tokens it generates (>= 1 each); given, they are the
        requests (as many as they list, any number), with the trace's lengths for the one not
        given; default: the trace's batch, each with its prompt and generation length.

    Raises
    ------
    ValueError
        A budget below one sequence's prompt and first token, a bad mode, not an inference trace.
    SimulationError
        Swapping out a sequence finds the swap space full (vLLM stops with an error too).
    """
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}: one of {', '.join(MODES)}")
    if not isinstance(seqs_per_group, int) or seqs_per_group < 1:
        raise ValueError(f"seqs_per_group = {seqs_per_group!r}: an integer >= 1")
    st = layer_stats(trace)
    if int(trace.attrs.get("inference_gpu_batches", 1)) != 1:
        raise ValueError("serve_with_preemption: make the trace with one GPU batch (--gpu-batches 1)")
    if trace.profiled_gpu != machine.gpu:
        raise ValueError(f"the trace's kernel times are for {trace.profiled_gpu}, the machine's GPU is {machine.gpu}")
    B, G = st.batch, st.gen                # the trace's batch and lengths: what its kernel times are for
    P = int(trace.attrs.get("inference_prompt", 0))
    kv_tok = float(trace.tensor_size_bytes[trace.tensor_role == ROLE_KV_CACHE].sum()) / (B * (P + G - 1))
    N, prompt, gen = _requests(B, P, G, prompt_tokens, output_tokens)
    if kv_budget_bytes is None:
        kv_budget_bytes = machine.gpu_memory_bytes - float(st.weight_bytes.sum()) - st.peak_activation
    block_bytes = block_size * kv_tok
    n_blocks = int(kv_budget_bytes // block_bytes) if kv_budget_bytes > 0 else 0
    blocks_of = lambda n: -(-n // block_size)  # noqa: E731
    if n_blocks < blocks_of(int(prompt.max()) + 1):
        one = blocks_of(int(prompt.max()) + 1)
        raise ValueError(f"a KV budget of {kv_budget_bytes / GB:.3g} GB holds {n_blocks} blocks of {block_size} "
                         f"tokens; the longest prompt and its first token need {one} ({one * block_bytes / GB:.3g} GB)")
    if arrival_s is None:
        arrive = np.zeros(N)
    else:
        arrive = np.asarray(arrival_s, dtype=np.float64)
        if arrive.shape != (N,) or not np.all(np.isfinite(arrive)) or np.any(arrive < 0):
            raise ValueError(f"arrival times: one finite time >= 0 per request ({N}); got {arrive.shape[0] if arrive.ndim == 1 else arrive.shape}")
        order = np.argsort(arrive, kind="stable")   # sequence ids in arrival order: FCFS is id order
        arrive, prompt, gen = arrive[order], prompt[order], gen[order]
    use = ("swap" if seqs_per_group > 1 else "recompute") if mode == "auto" else mode
    floor, at_b = _decode_model(trace)
    prefill_per_token = float(st.gpu_s[0].sum()) / (B * P)
    h2d, d2h = machine.link_GBps("to_device") * GB, machine.link_GBps("from_device") * GB

    done = np.zeros(N, np.int64)          # tokens generated per sequence (the first comes out of its prefill)
    first_token = np.full(N, np.nan)
    finish = np.full(N, np.nan)
    waiting: list[int] = []               # FCFS: sequence ids in arrival order
    arrived = 0                           # requests 0 .. arrived-1 have arrived
    running: list[int] = []
    swapped: list[int] = []
    free = n_blocks
    swap_used = 0.0
    now = 0.0
    preemptions = recomputed = steps = 0
    swapped_bytes = 0.0
    held = np.zeros(N, np.int64)          # blocks each sequence holds on the GPU
    beyond = False
    step_limit = 50 * int(gen.sum()) + 1000 + 2 * N

    while True:
        steps += 1
        if steps > step_limit:
            raise SimulationError("vLLM-style serving made no progress (a budget too small for its batch)")
        while arrived < N and arrive[arrived] <= now:     # the requests that arrived by this step (ids
            waiting.append(arrived)                         # above every id waiting: the list stays sorted)
            arrived += 1
        if not running and not waiting and not swapped:
            if arrived == N:
                break
            now = float(arrive[arrived])  # idle until the next request
            continue
        if swapped:                      # swapped sequences come back first, oldest first, while they fit
            s = min(swapped)
            need = blocks_of(int(prompt[s]) + int(done[s]))
            if need <= free:
                swapped.remove(s)
                free -= need
                held[s] = need
                nbytes = need * block_bytes
                now += nbytes / h2d
                swap_used -= nbytes
                running.append(s)
                running.sort()
                continue
        elif waiting:                    # admit waiting sequences (one prefill) while their blocks fit
            admitted, tokens = [], 0
            while waiting:
                s = waiting[0]
                length = int(prompt[s]) + int(done[s])
                need = blocks_of(length + 1)
                if need > free:
                    break
                waiting.pop(0)
                free -= need
                held[s] = need
                admitted.append(s)
                tokens += length
                if done[s] > 0:
                    recomputed += length
            if admitted:
                now += tokens * prefill_per_token
                for s in admitted:
                    if done[s] == 0:
                        done[s] = 1
                        first_token[s] = now
                for s in admitted:
                    if done[s] >= gen[s]:     # its one token came out of the prefill: it is done
                        free += int(held[s])
                        held[s] = 0
                        finish[s] = now
                running = sorted(running + [s for s in admitted if done[s] < gen[s]])
                continue
        if not running:
            raise SimulationError("vLLM-style serving: no sequence can run in the KV budget")
        # a decode step: every running sequence gains a token; a block boundary needs a free block
        need = [s for s in running if blocks_of(int(prompt[s]) + int(done[s]) + 1) > held[s]]
        while len(need) > free:
            victim = running.pop()       # the latest to arrive
            preemptions += 1
            if use == "swap":
                nbytes = float(held[victim]) * block_bytes
                if swap_used + nbytes > swap_space_bytes:
                    raise SimulationError(f"vLLM-style swap: the swap space of {swap_space_bytes / GB:.3g} GB is full "
                                          f"(vLLM stops with the same error); raise it or recompute")
                swap_used += nbytes
                swapped_bytes += nbytes
                now += nbytes / d2h
                swapped.append(victim)
            else:
                waiting.insert(0, victim)
                waiting.sort()
            free += int(held[victim])
            held[victim] = 0
            need = [s for s in running if blocks_of(int(prompt[s]) + int(done[s]) + 1) > held[s]]
        if not running:
            continue
        for s in need:
            held[s] += 1
        free -= len(need)
        r = len(running)
        # the trace's decode step of the running sequences' mean context (0.0 + ... where every prompt
        # is the trace's: the same step as the tokens generated alone)
        mean_step = int(round(float(np.mean(prompt[running] - P)) + float(np.mean(done[running]))))
        beyond |= mean_step > G - 1
        t = min(max(mean_step, 1), G - 1) if G > 1 else 0
        now += floor[t] + (at_b[t] - floor[t]) * r / B
        for s in running:
            done[s] += 1
        finished = [s for s in running if done[s] >= gen[s]]
        for s in finished:
            free += int(held[s])
            held[s] = 0
            finish[s] = now
        running = [s for s in running if done[s] < gen[s]]
    ttft, latency = first_token - arrive, finish - arrive
    own = prompt_tokens is not None or output_tokens is not None
    return PreemptionResult(mode=use, batch=N, prompt=P, gen=G, kv_budget_bytes=float(kv_budget_bytes),
                            block_size=block_size, total_s=now, ttft_s=float(np.mean(ttft)),
                            preemptions=preemptions, recomputed_tokens=int(recomputed), swapped_bytes=swapped_bytes,
                            steps=steps, ttft_p50_s=float(np.percentile(ttft, 50)),
                            ttft_p99_s=float(np.percentile(ttft, 99)), latency_mean_s=float(np.mean(latency)),
                            latency_p99_s=float(np.percentile(latency, 99)), first_arrival_s=float(arrive[0]),
                            last_arrival_s=float(arrive[-1]), output_tokens=int(gen.sum()) if own else 0,
                            prompt_mean=float(prompt.mean()), gen_mean=float(gen.mean()),
                            beyond_trace_context=bool(beyond))


def _requests(B: int, P: int, G: int, prompt_tokens, output_tokens):
    """(requests, prompt lengths, output lengths): the given ones checked, the trace's otherwise."""
    own = [x for x in (prompt_tokens, output_tokens) if x is not None]
    n = np.atleast_1d(own[0]).size if own else B
    out = []
    for name, x, default in (("prompt_tokens", prompt_tokens, P), ("output_tokens", output_tokens, G)):
        if x is None:
            out.append(np.full(n, default, np.int64))
            continue
        a = np.asarray(x)
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.number) or not np.all(np.isfinite(a)) \
                or np.any(a < 1) or np.any(a != np.floor(a)):
            raise ValueError(f"{name}: one whole number of tokens >= 1 per request ({n})")
        out.append(a.astype(np.int64))
    if n < 1:
        raise ValueError("no request to serve")
    return n, out[0], out[1]


__all__ = ["serve_with_preemption", "poisson_arrivals", "read_requests", "PreemptionResult", "BLOCK_SIZE", "SWAP_SPACE_BYTES",
           "MODES"]
