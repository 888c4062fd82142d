"""numpy record dtypes agree with the C structs of _types.pxd they are viewed as."""
import numpy as np

from g10core import _traceidx
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
