# Type stub of the compiled module g10core.uvm._progress (see _progress.pyx).
class ProgressGuard:
    factor: int
    quota_min: int
    budget: int
    slots_at_progress: int
    slots0: int
    requeued0: int
    missing: int
    pages: int
    peak: float
    def __init__(self, factor: int, quota_min: int, slack: int) -> None: ...
