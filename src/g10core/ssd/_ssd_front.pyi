# Type stub of the compiled module g10core.ssd._ssd_front, the SSD's host interface (see
# _ssd_front.pyx): it has no Python-level names; SSDCore (g10core.ssd._ssd) is its face.
