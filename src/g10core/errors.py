"""Every error type a user of g10core can see, in one place.

Bad input is a ``ValueError`` (``InputError``): the command line exits 2 with one
line naming the file and dataset/row, or the key.  A simulation that could not
complete is a ``RuntimeError`` (``SimulationError``): exit 1, one line.  Each
message is one line; the structured errors also keep their parts as attributes
and pickle (sweep workers send them back to the driver).

The modules that raise these re-export them under their old names
(``g10core.config.ConfigError``, ``g10core.workload.trace.TraceError``, ...).
"""
from __future__ import annotations

import difflib
import functools
import inspect
import os

__all__ = ["G10Error", "InputError", "ConfigError", "TraceError", "HintError", "CorruptHDF5", "ArtifactError", "MachineError", "InferenceMemoryError",
           "CannotFit", "CaptureError", "ProfileError", "EvictionRuleError", "PolicyError", "PluginError",
           "ScoreFunctionError", "TensorSimError", "SweepError", "SimulationError", "did_you_mean", "guarded",
           "is_outside"]

_IN_MEMORY_TRACE = "<in-memory trace>"


class G10Error(Exception):
    """Base of every error g10core raises on purpose."""


class InputError(G10Error, ValueError):
    """Bad input: a file, table, value or key is invalid; the message names it."""


class ConfigError(InputError):
    """A configuration value or key is invalid; the message names ``section.key``."""


class SweepError(InputError):
    """A sweep file or results store is invalid (``g10core.experiments.sweep``); the message names the file
    and the key or line."""


class TraceError(InputError):
    """A trace file or in-memory trace breaks the format.

    ``str()`` is one line naming all of the attributes, e.g.
    ``bad.h5: /kernels, row 17, field time_ideal_ns: got nan; must be finite and >= 0``.

    Attributes
    ----------
    path : str or None
        The file (None for an in-memory trace).
    dataset : str
        The HDF5 name ("/" for the root attributes).
    row : int or None
        The row (None when the problem is not one row).
    field : str or None
        A compound field or attribute name.
    reason : str
        What is wrong, one line.
    """

    def __init__(self, path, dataset: str, reason: str, row: int | None = None,
                 field: str | None = None):
        self.path = None if path is None else os.fspath(path)
        self.dataset = dataset
        self.row = None if row is None else int(row)
        self.field = field
        self.reason = " ".join(str(reason).split())  # one line
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.dataset]
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.field:
            parts.append(("attribute " if self.dataset == "/" else "field ") + self.field)
        return f"{self.path or _IN_MEMORY_TRACE}: {', '.join(parts)}: {self.reason}"

    def __reduce__(self):  # picklable across sweep workers
        return (TraceError, (self.path, self.dataset, self.reason, self.row, self.field))


class HintError(InputError):
    """A hint table or hint file is invalid; ``str()`` is one line naming file, row and field.

    Attributes
    ----------
    path : str or None
        The file (None for an in-memory table).
    row : int or None
        The row, when the problem is one row.
    field : str or None
        ``kernel``, ``tensor``, ``action`` or an attribute name.
    reason : str
        What is wrong, one line.
    """

    def __init__(self, path, reason: str, row: int | None = None, field: str | None = None):
        self.path = None if path is None else os.fspath(path)
        self.row = None if row is None else int(row)
        self.field = field
        self.reason = " ".join(str(reason).split())
        super().__init__(str(self))

    def __str__(self) -> str:
        where = [self.path or "<hint table>", "/hints"]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field:
            where.append(f"field {self.field}")
        return f"{', '.join(where)}: {self.reason}"

    def __reduce__(self):
        return (HintError, (self.path, self.reason, self.row, self.field))


class CorruptHDF5(InputError):
    """An HDF5 file's structure is damaged (``g10core.workload.h5safe``); the trace and hint readers
    turn it into their own error naming the file."""


class ArtifactError(InputError):
    """A file of the G10 artifact does not parse; the message names file and line."""


class MachineError(InputError):
    """A machine description (``--machine FILE``, :mod:`g10core.machine`) is invalid; the one-line
    message names the file and the entry (``[[switches]] 'sw2'``, ``gpu 3``, ...)."""


class CannotFit(InputError):
    """Some kernel's own working set exceeds GPU memory: no schedule can run it.

    The published simulator aborts in this case.  ``kernel`` is the first kernel with
    the largest working set, ``working_set_bytes`` its page-rounded inputs and outputs,
    ``gpu_memory_bytes`` the capacity it was checked against.
    """

    def __init__(self, kernel: int, working_set_bytes: int, gpu_memory_bytes: int, model: str = ""):
        self.kernel = int(kernel)
        self.working_set_bytes = int(working_set_bytes)
        self.gpu_memory_bytes = int(gpu_memory_bytes)
        self.model = model
        where = f"{model}: " if model else ""
        super().__init__(
            f"{where}cannot fit: kernel {self.kernel} alone needs {self.working_set_bytes} B "
            f"({self.working_set_bytes / 2**30:.3f} GiB) of inputs and outputs, more than the "
            f"{self.gpu_memory_bytes} B ({self.gpu_memory_bytes / 2**30:.3f} GiB) of GPU memory")

    def __reduce__(self):
        return (CannotFit, (self.kernel, self.working_set_bytes, self.gpu_memory_bytes, self.model))


class TensorSimError(InputError):
    """An input of the tensor-level simulator is invalid; the message names it."""


class CaptureError(InputError):
    """A model's training iteration cannot be captured (e.g. an operator needs tensor values)."""


class ProfileError(InputError):
    """A PyTorch profile (execution trace or Kineto trace) cannot be imported: damaged, missing a
    field, or the two files are from different runs.  ``str()`` is one line
    ``file: field F: reason``.

    Attributes
    ----------
    path : str
        The file.
    field : str or None
        The JSON field (``traceEvents[12].args.External id``, ``pid``), None for the whole file.
    reason : str
        What is wrong, one line.
    """

    def __init__(self, path, field: str | None, reason: str):
        self.path = os.fspath(path)
        self.field = field
        self.reason = " ".join(str(reason).split())
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}: " + (f"field {self.field}: " if self.field else "") + self.reason

    def __reduce__(self):
        return (ProfileError, (self.path, self.field, self.reason))


class EvictionRuleError(InputError):
    """An eviction rule name or a user's score function is invalid; the message names it
    (and the file and function of a user's rule)."""


class PolicyError(InputError):
    """A user's policy file (``FILE.py:NAME``) cannot give a policy; the message names the file
    and NAME.  (An unknown policy *name* is a ``KeyError`` of ``policies.get``.)"""


class PluginError(InputError):
    """Code from outside g10core that g10core called raised: a policy plug-in's method
    (``__init__``, ``hints``, ``plan``, ``schedule``, ``simulate``, ``hand_tuned_factors``), an
    eviction rule's builder a plug-in registered, or a user's score function (``--eviction
    FILE.py:FUNC``).  Not a bug in g10core: the command line prints one line naming the file, the
    class and method and the exception, and exits 2; ``--debug`` shows the plug-in's traceback
    (the original exception is this one's ``__cause__``).

    ``str()`` is ``plug-in FILE: WHAT raised TYPE: MESSAGE``, e.g.
    ``plug-in my_policy.py: MyPolicy.hints raised ValueError: no tensors``.

    Attributes
    ----------
    path : str
        The plug-in's file (its name; the module's name where it has no file).
    what : str
        ``Class.method``, or the function's name.
    error : str
        The exception's type name.
    reason : str
        The exception's message, one line (may be empty).
    """

    def __init__(self, path: str, what: str, error: str, reason: str = "", text: str | None = None):
        self.path = str(path)
        self.what = what
        self.error = error
        self.reason = " ".join(str(reason).split())
        self.text = text
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.text is not None:
            return self.text
        return f"plug-in {self.path}: {self.what} raised {self.error}" + (f": {self.reason}" if self.reason else "")

    def __reduce__(self):
        return (type(self), (self.path, self.what, self.error, self.reason, self.text))


class ScoreFunctionError(EvictionRuleError, PluginError):
    """A user's score function (``--eviction FILE.py:FUNC``) raised or returned NaN during a run;
    ``str()`` names the rule, the call's arguments and what the function raised (``text``)."""


class G10Warning(UserWarning):
    """Something a user should know about a run that still runs (``g10sim`` prints it as one line
    ``g10sim: warning: ...`` on stderr): a hint file planned for another configuration, a parameter
    the chosen policy does not model."""


class SimulationError(G10Error, RuntimeError):
    """A run could not complete: the replay stopped or an internal invariant broke.

    Not bad input (that is an :class:`InputError`); the command line prints one line
    and exits 1.
    """


class InferenceMemoryError(SimulationError):
    """An inference placement that does not fit the machine (one line: what needs how much of
    what); the command line exits 1, as for a run that could not complete."""


# ---- code from outside g10core (plug-ins): its exceptions become PluginError -----------------------

_PACKAGE = __name__.partition(".")[0]


def is_outside(obj) -> bool:
    """Was ``obj`` (a class or function) defined outside the g10core package (a user's file, an
    installed plug-in, a test, a notebook)?"""
    return str(getattr(obj, "__module__", None) or "").partition(".")[0] != _PACKAGE


def source_name(obj) -> str:
    """The file that defines ``obj`` (its name), or its module's name where it has no file."""
    try:
        path = inspect.getsourcefile(obj) or inspect.getfile(obj)
    except (TypeError, OSError):
        path = None
    return os.path.basename(path) if path else str(getattr(obj, "__module__", "?"))


def guarded(function, owner=None, method: str | None = None):
    """``function`` wrapped so that an exception out of it (but a g10core error it passes on)
    becomes a :class:`PluginError` naming its file and ``owner.method`` (or the function)."""
    if getattr(function, "__g10core_guarded__", False):
        return function
    what = f"{owner.__qualname__}.{method}" if owner is not None else getattr(function, "__qualname__", "?")

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except G10Error:
            raise           # already one line in the user's terms (a nested plug-in call, bad input)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of a plug-in is the plug-in's
            raise PluginError(source_name(owner if owner is not None else function), what,
                              type(exc).__name__, str(exc)) from exc

    call.__g10core_guarded__ = True
    return call


def did_you_mean(word: str, known, n: int = 3) -> str:
    """``"did you mean 'x'?"`` for the names in ``known`` closest to ``word`` (a name that differs
    only in case first, else :func:`difflib.get_close_matches`, keeping those about as close as the
    closest), or ``""`` when none is close: the end of an "unknown name" message."""
    known = list(dict.fromkeys(known))
    same_case = [k for k in known if k.lower() == word.lower() and k != word]
    if same_case:
        close = same_case[:n]
    else:
        by_lower = {}
        for k in known:
            by_lower.setdefault(k.lower(), k)
        matches = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
        ratio = [difflib.SequenceMatcher(None, word.lower(), m).ratio() for m in matches]
        close = [by_lower[m] for m, r in zip(matches, ratio) if r >= ratio[0] - 0.05]
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"
