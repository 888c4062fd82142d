"""The machine model's shared floor: the C types every compiled module cimports (``_types.pxd``,
mirrored for Python in ``g10core.codes``) and the event engine's queue (``_engine``).

Nothing here knows a device; every device package (``link``, ``ssd``, ``tlb``, ``uvm``) builds on it.
"""
