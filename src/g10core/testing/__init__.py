"""The pure-Python oracles the tests compare the compiled code with.

:mod:`~g10core.testing.reference` replays a trace page by page (the specification of the
compiled page-level replay); :mod:`~g10core.testing.g10_schedule` is the plain-Python
reference of G10's scheduler kernels (``policies/_g10sched.pyx``).  They are slow by design
and no production module imports them (``tests/test_imports.py`` checks it).
"""
