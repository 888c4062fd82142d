"""Upgrade captured traces of format version 2 to version 3 in place: only their roles change.

    python tools/upgrade_trace_roles.py FILE.h5 ...            # rewrite; prints what moved
    python tools/upgrade_trace_roles.py --check FILE.h5 ...    # only say what would move

Format 3 adds the role ``temporary`` (``codes.ROLE_TEMPORARY``); a version-2 file stores such
tensors as ``unknown``.  A trace made by ``g10core.capture`` gets its roles from
``roles.infer_roles`` run on the finished trace (``capture/api.py``): the tensor names the recorder
gave, the accesses and the recorded phases (``capture_forward_kernels``, ...), all of which the
file stores.  So ``infer_roles`` on the stored trace gives exactly the roles a capture would record
now, without capturing again.  This tool refuses a file unless that holds: it must be a capture
(``capture_tool`` attribute, recorded phases), and the inferred roles and layers must equal the
stored ones everywhere except where an ``unknown`` becomes a ``temporary``.

It then sets, in a copy of the file opened in place with h5py, the ``role`` field of ``/tensors``
and the ``schema_version`` root attribute (3), and checks before replacing the file that every
other dataset's stored chunks are byte for byte the same, as are ``/tensors``' other fields and
every other attribute, and that ``read_trace`` reads the copy.  Version-1 files and files already
at version 3 are left alone (version 1 stores no roles; ``read_trace`` infers them).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np

from g10core.codes import ROLE_NAMES, ROLE_TEMPORARY, ROLE_UNKNOWN
from g10core.workload.h5safe import LIBVER
from g10core.workload.roles import infer_roles
from g10core.workload.trace import SCHEMA_VERSION, read_trace


def _chunks(ds) -> list[bytes]:
    """The stored (filtered) bytes of every chunk of ``ds``, or its raw bytes if contiguous."""
    if ds.chunks is None:
        return [ds[()].tobytes()]
    out = []
    for i in range(ds.id.get_num_chunks()):
        info = ds.id.get_chunk_info(i)
        out.append(bytes(ds.id.read_direct_chunk(info.chunk_offset)[1]))
    return out


def _snapshot(path: Path) -> dict:
    """Attributes, and per dataset its layout and stored chunks, of one file."""
    snap = {}
    with h5py.File(path, "r", locking=False) as f:
        snap["/"] = {k: f.attrs[k] for k in f.attrs}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                layout = (obj.dtype, obj.shape, obj.chunks, obj.compression, obj.compression_opts,
                          obj.shuffle, obj.fletcher32)
                attrs = {k: obj.attrs[k] for k in obj.attrs}
                if name == "tensors":
                    data = obj[()]
                    fields = {fld: data[fld].copy() for fld in data.dtype.names}
                    snap[name] = (layout, attrs, fields)
                else:
                    snap[name] = (layout, attrs, _chunks(obj))
        f.visititems(visit)
    return snap


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def _compare(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots other than /tensors' role field and schema_version."""
    diff = []
    if set(before) != set(after):
        diff.append(f"datasets {sorted(set(before) ^ set(after))}")
    for key in set(before) & set(after):
        if key == "/":
            a, b = dict(before[key]), dict(after[key])
            a.pop("schema_version", None), b.pop("schema_version", None)
            if set(a) != set(b) or any(not _same(a[k], b[k]) for k in a):
                diff.append("root attributes")
            continue
        (la, aa, da), (lb, ab, db) = before[key], after[key]
        if la != lb:
            diff.append(f"/{key}: layout {la} -> {lb}")
        if set(aa) != set(ab) or any(not _same(aa[k], ab[k]) for k in aa):
            diff.append(f"/{key}: attributes")
        if key == "tensors":
            for fld in da:
                if fld != "role" and not np.array_equal(da[fld], db[fld]):
                    diff.append(f"/tensors field {fld}")
        elif da != db:
            diff.append(f"/{key}: stored chunks")
    return diff


def upgrade(path: Path, check: bool = False) -> str:
    """Upgrade one file (see the module docstring); returns a one-line report."""
    with h5py.File(path, "r", locking=False) as f:
        version = int(f.attrs["schema_version"])
        stored_role = f["tensors"]["role"] if version >= 2 else None
        stored_layer = f["tensors"]["layer"] if version >= 2 else None
    if version != 2:
        return f"{path.name}: version {version}, left alone"
    trace = read_trace(path)
    a = trace.attrs
    if "capture_tool" not in a or "capture_forward_kernels" not in a:
        raise SystemExit(f"{path}: not a capture with recorded phases; refused")
    role, layer = infer_roles(trace)
    moved = (stored_role != role)
    if not np.array_equal(layer, stored_layer) or \
            np.any(moved & ~((stored_role == ROLE_UNKNOWN) & (role == ROLE_TEMPORARY))):
        raise SystemExit(f"{path}: the inferred roles differ from the stored ones other than "
                         f"unknown -> temporary; refused (capture it again)")
    nbytes = int(trace.tensor_size_bytes[moved].sum())
    left = int(np.sum(role == ROLE_UNKNOWN))
    line = (f"{path.name}: {int(moved.sum())} tensors, {nbytes / 2**30:.2f} GiB unknown -> "
            f"{ROLE_NAMES[ROLE_TEMPORARY]}; {left} unknown left")
    if check:
        return line
    before = _snapshot(path)
    tmp = path.with_name(path.name + ".upgrading")
    shutil.copy2(path, tmp)
    try:
        with h5py.File(tmp, "r+", libver=LIBVER, locking=False) as f:
            ds = f["tensors"]
            rows = ds[()]
            rows["role"] = role
            ds[...] = rows
            f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
        diff = _compare(before, _snapshot(tmp))
        if diff:
            raise SystemExit(f"{path}: the rewrite changed more than the roles: {'; '.join(diff)}")
        back = read_trace(tmp)
        if not (np.array_equal(back.tensor_role, role) and np.array_equal(back.tensor_layer, layer)):
            raise SystemExit(f"{path}: the rewritten roles do not read back")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return line + "; other datasets byte-identical"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--check", action="store_true", help="only report, write nothing")
    args = p.parse_args(argv)
    for path in args.files:
        print(upgrade(path, args.check))
    return 0


if __name__ == "__main__":
    sys.exit(main())
