"""Files a command reads or writes: refusing what is not a regular file, replacing outputs whole.

* :func:`is_special_file`: readers refuse a named pipe, socket or device before opening it
  (opening a pipe to read waits for a writer; a device may never end); :func:`read_text`
  does that and refuses a file that is not UTF-8, naming it, for the text inputs.
* :func:`replacing` / :func:`write_text_atomic`: an output is written to a temporary file beside
  it and renamed over it, so a reader sees the old file or the whole new one.  A symlink is
  followed (the file it points to is replaced, the link stays), and a device or pipe given as
  the output (``/dev/null``, ``/dev/stdout``) is written through: a rename would put a regular
  file in its place.  Errors name the path given, not the temporary file.
* :func:`import_user_file`: a user's Python file named as ``FILE.py:NAME`` (an eviction score
  function, a policy class), imported under a stable module name; any error in it is bad input.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import secrets
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

NOT_A_REGULAR_FILE = "is not a regular file (a pipe, socket or device)"


def is_special_file(path) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a directory (after symlinks)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def read_text(path, kind: str, error: type[Exception] = ValueError) -> str:
    """The text of ``path``, a ``kind`` ("config file", ...).  A pipe, socket or device, or a
    file that is not UTF-8, is ``error`` naming the path; a missing file is FileNotFoundError."""
    if is_special_file(path):
        raise error(f"{path}: {NOT_A_REGULAR_FILE}, not a {kind}")
    try:
        return Path(path).read_text()
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text file (byte {exc.start} is not UTF-8), not a {kind}") from None


@contextmanager
def replacing(path, suffix: str = ""):
    """Yield a temporary path to write ``path``'s new content to; on success it replaces ``path``
    (module doc).  ``suffix``: the temporary file's ending (writers that pick a format by it)."""
    path = Path(path)
    through = is_special_file(path)    # (/dev/stdout: a link to a pipe realpath cannot name)
    target = path if through else Path(os.path.realpath(path))
    folder = Path(tempfile.gettempdir()) if through else target.parent
    tmp = folder / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp{suffix}"
    try:
        yield tmp
        if through:
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            tmp.unlink()
        else:
            os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if through or (exc.filename is not None and str(exc.filename) in (str(tmp), str(target))):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path, text: str) -> Path:
    """Write ``text`` to ``path`` (:func:`replacing`)."""
    with replacing(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def is_user_file_spec(spec) -> bool:
    """Whether ``spec`` is ``FILE.py:NAME`` (a user's file), not a registered name."""
    return isinstance(spec, str) and ":" in spec and spec.rsplit(":", 1)[0].endswith(".py")


def import_user_file(spec: str, where: str, error: type[Exception], *, module_prefix: str,
                     kind: str = "function", form: str = "FILE.py:FUNC", reuse: bool = False):
    """Import the Python file of ``spec`` (``FILE.py:NAME``); returns ``(module, path, NAME)``.

    A bare file name that is not in the working folder is looked up among the shipped examples
    (``g10core/examples/``).  The module is named ``module_prefix`` + a hash of the file's
    resolved path (a stable name: numba's on-disk cache records functions by module name) and
    kept in ``sys.modules``; ``reuse``: return the module already imported from the file when
    the file has not changed since (a policy class that registers itself must not be defined
    twice).  Every refusal is ``error`` starting with ``where`` (which names the spec): ``NAME``
    not an identifier, no such file, a pipe or device, or a file that raises on import (any
    exception, and ``SystemExit``: it would end the command with the file's exit code).
    """
    path_text, _, name = spec.rpartition(":")
    path = Path(path_text).expanduser()
    if not name.isidentifier():
        raise error(f"{where}: {name!r} is not a {kind} name (expected {form})")
    if is_special_file(path):
        raise error(f"{where}: {path} {NOT_A_REGULAR_FILE}")
    if not path.is_file():
        from .examples import path as example_path, shipped

        if path.parent == Path(".") and example_path(path.name).is_file():
            path = example_path(path.name)          # a shipped example, by its file name
        else:
            raise error(f"{where}: no such file {path} (shipped examples: {', '.join(shipped())})")
    resolved = path.resolve()
    module_name = module_prefix + hashlib.sha1(str(resolved).encode()).hexdigest()[:16]
    st = resolved.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    old = sys.modules.get(module_name)
    if reuse and old is not None and getattr(old, "__g10core_stamp__", None) == stamp:
        return old, path, name
    try:
        mod_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(mod_spec)
        module.__g10core_stamp__ = stamp
        sys.modules[module_name] = module       # numba's cache (and dataclasses) look modules up by name
        mod_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in the user's file is bad input
        sys.modules.pop(module_name, None)
        raise error(f"{where}: cannot be imported: {type(exc).__name__}: {' '.join(str(exc).split())}") from None
    return module, path, name


__all__ = ["NOT_A_REGULAR_FILE", "import_user_file", "is_special_file", "is_user_file_spec", "read_text",
           "replacing", "write_text_atomic"]
