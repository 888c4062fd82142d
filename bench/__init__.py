"""g10core's benchmark suite (airspeed velocity, ``asv.conf.json`` at the repository root).

Each ``bench_*.py`` module holds asv benchmarks (``time_*``, ``peakmem_*``, ``track_*``) and
stays a script (``python bench/bench_replay.py ...``) that prints the tables of
``bench/README.md``.  The modules import only the installed ``g10core``; traces are taken by
name from the package, or from this checkout's ``src/g10core/traces`` for commits that did
not ship them yet (same files), so ``asv continuous`` can compare older commits too.
"""
