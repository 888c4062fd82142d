"""``g10sim ssd --queue-depth``: out-of-range values are refused naming the option (issue 12 item 7)."""
import pytest

from g10core.cli import main
from g10core.config import ConfigError
from g10core.experiments.ssdbench import MAX_QUEUE_DEPTH, build_device


@pytest.mark.parametrize("depth", ["99999999999999999999", "4294967296", "65537", "0", "-1"])
def test_queue_depth_out_of_range_is_exit_2_naming_option_and_range(depth, capsys):
    assert main(["ssd", "--queue-depth", depth, "--capacity-GiB", "0.05", "-q"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert f"--queue-depth {depth}" in err and "[1, 65536]" in err


@pytest.mark.parametrize("depth", [1, MAX_QUEUE_DEPTH])
def test_queue_depth_at_the_ends_of_the_range_builds(depth):
    assert build_device(capacity_GiB=0.05, queue_depth=depth).queue_depth == depth


@pytest.mark.parametrize("depth", [2**64, 1.5, True, "8"])
def test_library_refuses_what_is_not_an_integer_in_range(depth):
    with pytest.raises(ConfigError, match=r"--queue-depth .*: must be an integer in \[1, 65536\]"):
        build_device(capacity_GiB=0.05, queue_depth=depth)
