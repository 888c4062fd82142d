"""Files a command reads or writes: refusing what is not a regular file, replacing outputs whole.

* :func:`is_special_file`: readers refuse a named pipe, socket or device before opening it
  (opening a pipe to read waits for a writer; a device may never end); :func:`read_text`
  does that and refuses a file that is not UTF-8, naming it, for the text inputs.
* :func:`replacing` / :func:`write_text_atomic`: an output is written to a temporary file beside
  it and renamed over it, so a reader sees the old file or the whole new one.  A symlink is
  followed (the file it points to is replaced, the link stays), and a device or pipe given as
  the output (``/dev/null``, ``/dev/stdout``) is written through: a rename would put a regular
  file in its place.  Errors name the path given, not the temporary file.
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat
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


__all__ = ["NOT_A_REGULAR_FILE", "is_special_file", "read_text", "replacing", "write_text_atomic"]
