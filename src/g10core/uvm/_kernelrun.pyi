"""Type stub of the detailed preset's kernel runner (``_kernelrun.pyx``)."""
from typing import Any, Sequence

import numpy as np

from ._evict import Evictor
from ._fault import FaultModel
from ._pagetable import PageTable
from ..link._pcie import LinkCore
from ..ssd._ssd import SSDCore
from ._timeline import TimelineRecorder
from ..tlb._tlb import Translator
from ._uvm import FarFaultHandler, TierMap, VictimPicker

def busy_periods(flat: np.ndarray) -> np.ndarray: ...   # (start, end) pairs merged: (cycle, 1 begin / 0 end) rows
def coalesced_busy_periods(intervals: np.ndarray) -> tuple[np.ndarray, int]: ...   # (periods, pairs kept); for tests

class PageTableTiers(TierMap):
    freeing: bool
    iteration: int
    def __init__(self, pt: PageTable, iterations: int, lpn_first: Sequence[int] | None = None) -> None: ...
    def traffic_rows(self, iterations: int) -> np.ndarray: ...

class EvictorPicker(VictimPicker):
    def __init__(self, pt: PageTable, ev: Evictor) -> None: ...

class KernelRunner(FaultModel):
    tl: TimelineRecorder | None         # the run's timeline recorder (None: none)
    def __init__(self, params: dict[str, Any], link: LinkCore, ssd: SSDCore, translator: Translator | None,
                 arrays: dict[str, np.ndarray], sms: int, use_evictor: bool, iterations: int,
                 max_idle_steps: int = ..., lpn_first: Sequence[int] | None = None) -> None: ...
    def bind(self, pt: PageTable, ev: Evictor) -> None: ...
    @property
    def fault_handler(self) -> FarFaultHandler: ...
    @property
    def translator(self) -> Translator: ...
    def py_schedule(self, initial: Sequence[int], again: Sequence[Sequence[int]]) -> list[tuple[int, int]]: ...
    def set_max_idle_steps(self, steps: int) -> None: ...
    max_idle_steps: int
    livelocked: bool
    def traffic_rows(self, iterations: int) -> np.ndarray: ...
    def boundaries(self) -> np.ndarray: ...
    def stats(self) -> dict[str, Any]: ...
    def handler_stats(self) -> dict[str, Any]: ...
