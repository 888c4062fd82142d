"""Outputs replace their file whole, follow symlinks, write through devices and pipes; errors
name the path given (g10core.files, cli.common.check_output_path)."""
import os
import threading
from pathlib import Path

import pytest

from g10core.cli.common import check_output_path, emit_json
from g10core.files import is_special_file, write_text_atomic


def test_a_file_is_replaced_whole_and_no_temporary_is_left(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    write_text_atomic(out, "new")
    assert out.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_symlink_stays_and_its_target_gets_the_text(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    emit_json({"a": 1}, str(link))
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text().strip().startswith("{") and '"a": 1' in target.read_text()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this OS")
def test_a_pipe_is_written_through_not_replaced_by_a_file(tmp_path):
    # a rename over a device or a pipe puts a regular file in its place (as root, --json
    # /dev/null replaced /dev/null): here a pipe stands in for the device
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    write_text_atomic(fifo, "through")
    reader.join(timeout=30)
    assert got == ["through"] and is_special_file(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_errors_name_the_path_given_not_the_temporary_file(tmp_path):
    missing = tmp_path / "no" / "r.json"
    with pytest.raises(OSError) as info:
        write_text_atomic(missing, "x")
    assert info.value.filename == str(missing)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_device_is_an_error_naming_it():
    with pytest.raises(OSError) as info:
        write_text_atomic("/dev/full", "x" * 100_000)
    assert info.value.filename == "/dev/full" and "No space" in str(info.value)
    assert is_special_file("/dev/full")


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no procfs")
def test_an_output_folder_where_no_file_can_be_made_is_refused_before_the_run():
    # root passes os.access there: the check makes (and removes) a file to know
    with pytest.raises(OSError, match="cannot create a file in this folder") as info:
        check_output_path("/proc/x.json", "--json")
    assert info.value.filename == "/proc"


def test_the_output_check_leaves_nothing_behind(tmp_path):
    check_output_path(tmp_path / "r.json", "--json")
    assert list(tmp_path.iterdir()) == []
