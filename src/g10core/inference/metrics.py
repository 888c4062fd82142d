"""Inference metrics of a simulator run (:class:`g10core.results.Result`) over an inference trace.

``Simulator.run`` replays a trace ``run.iterations`` times; for an inference trace each
iteration is one batch of requests (prefill, then the decode steps), iteration 0 the warm-up
batch whose weights come in cold, as a serving system's first batch.  Per iteration, from the
kernels' start and end times (``Result.kernel_table``) and the trace's phases:

* time to first token = end of the last prefill kernel - the iteration's start (the end of the
  iteration before; 0 for the first);
* time per output token = (end of the iteration - end of prefill) / (gen - 1);
* tokens/s = batch x gen / the iteration's time (FlexGen's generation throughput).

The numbers reported are those of the last iteration (after the warm-up when there are two or
more); every iteration's are in ``per_iteration``.
"""
from __future__ import annotations

import numpy as np


def inference_metrics(result, trace) -> dict:
    """The inference metrics of ``result`` (a run of ``trace``); {} when ``trace`` is no inference
    trace or the run failed.

    Returns
    -------
    dict
        ``iteration`` (the one reported), ``ttft_s``, ``tpot_s`` (None when ``gen`` is 1),
        ``tokens_per_s``, ``prefill_s``, ``decode_s``, ``phase_s`` (per phase of that iteration:
        prefill, decode 1, ...), ``batch``, ``gen``, ``phase_first_kernel`` (the first kernel of each
        phase, then K), ``per_iteration`` (the first four per iteration).
    """
    if trace.kernel_phase is None or result.failed:
        return {}
    table = result.kernel_table()
    it = np.asarray(table["iteration"], np.int64)
    k = np.asarray(table["kernel"], np.int64)
    end = np.asarray(table["end_s"], float)
    if it.size == 0:
        return {}
    phase_of = trace.kernel_phase.astype(np.int64)
    gen = int(trace.attrs.get("inference_gen", int(phase_of.max()) + 1))
    batch = int(trace.batch_size)
    P = int(phase_of.max()) + 1
    rows = []
    prev_end = 0.0
    for i in np.unique(it).tolist():
        sel = it == i
        ph = phase_of[k[sel]]
        e = end[sel]
        t0 = prev_end if i > 0 else 0.0
        t_end = float(e.max())
        pre_end = float(e[ph == 0].max())
        phase_end = np.full(P, np.nan)
        np.fmax.at(phase_end, ph, e)
        phase_s = np.diff(np.concatenate(([t0], phase_end))).tolist()
        total = t_end - t0
        rows.append({"iteration": int(i), "ttft_s": pre_end - t0,
                     "tpot_s": (t_end - pre_end) / (gen - 1) if gen > 1 else None,
                     "tokens_per_s": batch * gen / total if total > 0 else None,
                     "prefill_s": pre_end - t0, "decode_s": t_end - pre_end, "phase_s": phase_s})
        prev_end = t_end
    last = rows[-1]
    # the first kernel of each phase, and K: what the timeline's phase track reads
    phase_first_kernel = np.searchsorted(phase_of, np.arange(P + 1)).tolist()
    return {**{k2: v for k2, v in last.items()}, "batch": batch, "gen": gen,
            "phase_first_kernel": phase_first_kernel,
            "warm_up_iterations": len(rows) - 1,
            "per_iteration": [{k2: r[k2] for k2 in ("iteration", "ttft_s", "tpot_s", "tokens_per_s")} for r in rows]}
