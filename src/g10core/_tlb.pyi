"""Type stub of the translators (``_tlb.pyx``)."""
from typing import Any

class Translator:
    def stats(self) -> dict[str, Any]: ...

class NoTranslation(Translator): ...
