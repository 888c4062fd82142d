"""numpy record dtypes agree with the C structs of _types.pxd they are viewed as."""
import numpy as np

from g10core.workload import _traceidx
from g10core.policies import HINT_DTYPE


def test_hint_dtype_matches_hint_rec_struct():
    layout = _traceidx.hint_rec_layout()
    assert HINT_DTYPE.names == ("kernel", "tensor", "action")
    assert HINT_DTYPE.itemsize == layout["itemsize"]
    for name in HINT_DTYPE.names:
        dtype, offset = HINT_DTYPE.fields[name][:2]
        assert offset == layout[name], name
        assert dtype.itemsize == layout["sizes"][name], name
    # signedness and byte order as the C fields (int32_t, int32_t, int8_t) on a little-endian host
    assert [HINT_DTYPE[n].kind for n in HINT_DTYPE.names] == ["i", "i", "i"]
    assert all(HINT_DTYPE[n].byteorder in "=<|" for n in HINT_DTYPE.names)


def test_hint_rec_is_packed():
    # 4 + 4 + 1 bytes, no padding: a hint table's buffer can be cast to hint_rec* directly
    assert _traceidx.hint_rec_layout()["itemsize"] == 9
    assert np.zeros(3, HINT_DTYPE).tobytes() == bytes(27)


def test_codes_are_the_compiled_ones():
    from g10core import codes as types
    from g10core.uvm import _replay

    lay = _replay.layout()
    assert lay["tiers"] == {"none": types.TIER_NONE, "not_present": types.TIER_NOT_PRESENT, "ssd": types.TIER_SSD,
                            "host": types.TIER_HOST, "gpu": types.TIER_GPU}
    assert lay["actions"] == {name: code for code, name in types.ACTION_NAMES.items()}
    assert lay["queues"] == list(range(types.N_QUEUES)) + [types.N_QUEUES]
    assert [getattr(types, "Q_" + n.upper()) for n in types.QUEUE_NAMES] == list(range(types.N_QUEUES))
    assert lay["events"] == {"kernel_begin": types.EV_KERNEL_BEGIN, "slot": types.EV_SLOT,
                             "device": types.EV_DEVICE}


def test_record_dtypes_match_their_structs():
    from g10core import codes as types
    from g10core.uvm import _replay

    lay = _replay.layout()
    for dtype, key in ((types.KERNEL_ROW_DTYPE, "kernel_row"), (types.TRAFFIC_ROW_DTYPE, "traffic_row")):
        assert dtype.itemsize == lay[key]["itemsize"], key
        assert [dtype.fields[n][1] for n in dtype.names] == lay[key]["offsets"], key
        assert all(dtype[n] == np.dtype("<i8") for n in dtype.names), key


def test_rows_convert_between_records_and_columns():
    from g10core import codes as types

    cols = np.arange(30, dtype=np.int64).reshape(3, 10)
    rec = types.as_records(cols, types.KERNEL_ROW_DTYPE)
    assert rec["end_cycles"].tolist() == [3, 13, 23]
    assert np.array_equal(types.as_columns(rec, types.KERNEL_ROW_DTYPE), cols)


def test_policies_and_hint_dtype_come_from_one_place():
    from g10core import codes as types, policies

    assert policies.HINT_DTYPE is types.HINT_DTYPE
    assert (policies.HINT_TO_GPU, policies.HINT_TO_SSD, policies.HINT_TO_HOST, policies.HINT_FREE) == (0, 1, 2, 3)
