"""Opening HDF5 files that may be corrupt: refuse them quickly instead of hanging.

Two defences, shared by the trace reader (:mod:`g10core.workload.trace`) and the hint-file
reader (:mod:`g10core.workload.hints`):

* **Writing**: g10core writes the HDF5 1.10 file format (``LIBVER``).  In it every
  metadata block (superblock, object headers with their attributes, chunk indexes,
  fractal heaps, B-trees) carries a checksum, so a changed byte there is an error
  on read; the datasets g10core writes carry Fletcher-32 checksums of their own.
* **Reading**: one structure of the format has no checksum in any version: the
  global heap collection (signature ``GCOL``) where variable-length strings live
  (h5py stores ``str`` attributes there).  HDF5's parser of a collection walks its
  objects by their stored sizes and never advances past a free-space object of
  size 0, so one flipped bit in a size field can make ``h5py`` loop forever inside
  an attribute read (HDF5 2.0.0, h5py 3.16: ``H5HG__cache_heap_deserialize``).
  :func:`check_global_heaps` walks every collection of the file the same way first
  and refuses a file whose walk would not end exactly at the collection's end.
  Cost: one ``bytes.find`` scan of the file (about 1 GB/s), then a few steps per
  stored string.

* **Files without checksums** (HDF5 superblock version 0 or 1: written by
  g10core 0.1.0, or by h5py with its default ``libver``, as hand-made hint files
  are): their metadata is not protected, and HDF5 does not survive every damage to
  it (a flipped bit in the stored size of a string attribute's datatype crashes
  HDF5 2.0.0 with a segmentation fault).  Nothing short of isolation makes reading
  them safe, so :func:`read_safely` reads such a file in a forked child process
  and turns a crash or a hang (``timeout_s``) into :class:`CorruptHDF5`.  Files
  g10core writes are read in-process.

``H5_ERRORS`` are the exceptions h5py raises on a damaged file; the readers turn
them into their one-line error naming the file.
"""
from __future__ import annotations

import mmap
import os
import pickle
import select
import signal
import struct
import time

from ..errors import CorruptHDF5

# Lowest and highest HDF5 format versions g10core writes: 1.10 (checksummed metadata,
# readable by any HDF5 >= 1.10, which every supported h5py has).
LIBVER = ("v110", "v110")

# What h5py raises for a damaged file (besides hangs, which check_global_heaps prevents).
H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError, OverflowError,
             UnicodeDecodeError, SystemError)

_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_GCOL = b"GCOL\x01\x00\x00\x00"          # signature, version 1, 3 reserved bytes
_GCOL_MIN_BYTES = 4096                   # H5HG_MINSIZE


def _superblock(data) -> tuple[int, int] | None:
    """(offset, size of lengths) of the superblock, or None when the file is not HDF5."""
    offset = 0
    while offset + 16 <= len(data):
        if data[offset:offset + 8] == _SIGNATURE:
            version = data[offset + 8]
            # v0/v1: size of offsets at byte 13, size of lengths at 14; v2/v3: at 9 and 10
            at = offset + (14 if version < 2 else 10)
            return offset, data[at] if at < len(data) else 0
        offset = 512 if offset == 0 else offset * 2    # user blocks are 512 * 2^n bytes
    return None


def _check_collection(data, start: int, size_of_lengths: int) -> str | None:
    """Why the collection at ``start`` would not parse, or None when it walks cleanly."""
    fmt = {2: "<H", 4: "<I", 8: "<Q"}.get(size_of_lengths)
    if fmt is None:
        return f"superblock states {size_of_lengths}-byte lengths"
    header = 8 + size_of_lengths                     # signature, version, reserved, size
    object_header = 8 + size_of_lengths              # index, references, reserved, size
    if start + header > len(data):
        return None                                  # truncated file: HDF5 says so itself
    (size,) = struct.unpack_from(fmt, data, start + 8)
    if start + size > len(data):
        return None                                  # past the end of the file: HDF5 refuses to read it
    if size < _GCOL_MIN_BYTES:
        return f"states {size} bytes (at least {_GCOL_MIN_BYTES})"
    end = start + size
    p = start + header
    while p < end:
        if p + object_header > end:                  # a tail too small for a header: free space
            return None
        index = data[p] | (data[p + 1] << 8)
        (obj_size,) = struct.unpack_from(fmt, data, p + 8)
        if index > 0:
            need = object_header + ((obj_size + 7) & ~7)
        else:
            need = obj_size                          # free space: its size includes its header
            if need < object_header:
                return f"free-space object at byte {p} states {obj_size} bytes"
        if need > end - p:
            return f"object {index} at byte {p} states {obj_size} bytes, past the collection's end"
        p += need
    return None


def check_global_heaps(path) -> None:
    """Raise :class:`CorruptHDF5` if a global heap collection of ``path`` would not parse.

    Files that are not HDF5 (or empty) pass: opening them fails cleanly anyway.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 16:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            sb = _superblock(data)
            if sb is None:
                return
            size_of_lengths = sb[1]
            at = data.find(_GCOL)
            while at >= 0:
                why = _check_collection(data, at, size_of_lengths)
                if why is not None:
                    raise CorruptHDF5(f"corrupt HDF5 file: the global heap collection at byte {at} {why}")
                at = data.find(_GCOL, at + 1)


def h5_reason(exc: BaseException) -> str:
    """h5py's 'Unable to ... (detail)' -> 'detail', one line."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if "(" in msg and msg.endswith(")"):
        msg = msg[msg.index("(") + 1:-1]
    return msg


def superblock_version(path) -> int | None:
    """The HDF5 superblock version of ``path`` (0-3), or None when it is not an HDF5 file."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 16:
            return None
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            sb = _superblock(data)
            return None if sb is None else data[sb[0] + 8]


def read_safely(read, path, timeout_s: float | None = None):
    """``read(path)``, in a forked child process when ``path`` has no metadata checksums.

    ``read`` returns picklable data or raises (the exception is re-raised here; it
    must pickle).  A child that crashes or runs past ``timeout_s`` (default: 30 s
    plus 1 s per 50 MB of file) is killed and reported as :class:`CorruptHDF5`.
    Where ``os.fork`` is missing (Windows), the file is read in-process.
    """
    version = superblock_version(path)
    if version is None or version >= 2 or not hasattr(os, "fork"):
        return read(path)
    if timeout_s is None:
        timeout_s = 30.0 + os.path.getsize(path) / 50e6
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:                                      # child: read, send, exit without cleanup
        code = 0
        try:
            os.close(rfd)
            # a crash here is reported by the parent in one line: no fault report on stderr
            import faulthandler

            faulthandler.disable()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            try:
                message = ("ok", read(path))
            except BaseException as exc:             # noqa: BLE001 (sent to the parent, re-raised there)
                message = ("error", exc)
            try:
                payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:                 # noqa: BLE001
                payload = pickle.dumps(("error", CorruptHDF5(f"unreadable ({type(exc).__name__})")))
            with os.fdopen(wfd, "wb") as out:
                out.write(payload)
        except BaseException:                        # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        with os.fdopen(rfd, "rb") as pipe:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([pipe], [], [], left)[0]:
                    os.kill(pid, signal.SIGKILL)
                    raise CorruptHDF5(f"corrupt HDF5 file: HDF5 did not finish reading it within {timeout_s:.0f} s")
                chunk = os.read(pipe.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        _, status = os.waitpid(pid, 0)
    if not chunks:
        how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
        raise CorruptHDF5(f"corrupt HDF5 file: HDF5 crashed while reading it ({how})")
    try:
        kind, value = pickle.loads(b"".join(chunks))
    except Exception:                                # noqa: BLE001 (a child that died mid-write)
        raise CorruptHDF5("corrupt HDF5 file: HDF5 crashed while reading it") from None
    if kind == "error":
        raise value
    return value
