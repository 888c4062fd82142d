"""Experiments built on the simulator: sweeps (local or Dask, resumable stores;
:mod:`~g10core.experiments.sweep`), the paper's figures (:mod:`~g10core.experiments.reproduce`,
``sweeps/``), reports and plots (:mod:`~g10core.experiments.report`), the published numbers
(:mod:`~g10core.experiments.published`, ``data/``) and the micro-benchmarks of the far-fault
handler and TLB (:mod:`~g10core.experiments.uvmmicro`) and of the SSD
(:mod:`~g10core.experiments.ssdbench`).
"""
