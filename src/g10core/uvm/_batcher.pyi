"""Type stub of the transfer batcher (``_batcher.pyx``)."""
from typing import Any

import numpy as np

from ._device import Device
from ._evict import Evictor
from ._pagetable import PageTable
from ._timeline import TimelineRecorder

BULK_REASONS: tuple[str, ...]

class Batcher:
    tl: TimelineRecorder | None
    tick: int
    tb: int
    irregular: bool
    waiting: bool
    started: bool
    iteration: int
    n_slots_detailed: int
    n_slots_bulk: int
    n_slots_idle: int
    debug_log: bool
    def __init__(self, pt: PageTable, ev: Evictor, link: Device, ssd: Device, quotas: dict[str, Any],
                 iterations: int, debug_log: bool = ...) -> None: ...
    def queue_lengths(self) -> list[int]: ...
    def queues(self) -> list[list[tuple[int, int, int, int]]]: ...
    def traffic_rows(self, iterations: int) -> np.ndarray: ...
    def boundaries(self) -> np.ndarray: ...
    def debug_rows(self) -> np.ndarray: ...
    def bulk_reasons(self) -> dict[str, int]: ...
    def slot_counts(self) -> dict[str, int]: ...
