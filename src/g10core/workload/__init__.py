"""The workload: what a run replays.

The trace format (:mod:`~g10core.workload.trace`: HDF5 reader, writer and validation, with
:mod:`~g10core.workload.h5safe` to open damaged files safely and the compiled index checks of
``_traceidx``), the shipped traces and trace names (:mod:`~g10core.workload.tracestore`,
``traces/``), seeded synthetic traces (:mod:`~g10core.workload.synth`), the converter of the
published G10 inputs (:mod:`~g10core.workload.g10artifact`), hint files
(:mod:`~g10core.workload.hints`), tensor vitality analysis
(:mod:`~g10core.workload.vitality`) and the kernel-time noise of Fig. 19
(:mod:`~g10core.workload.noise`).  Nothing here imports a policy, the simulator or an
experiment.
"""
