"""The SSD's units alone, through their thin test wrappers: the mapping unit's tables and
their accounting (_ssd_map), the write buffer's flush order (_ssd_wbuf), and the block
manager's victim choice (_ssd_gc).  The composed device is tested in test_ssd_ftl.py and
test_ssd_props.py."""
import pytest

from g10core.ssd._ssd_gc import BlockManager
from g10core.ssd._ssd_map import MappingUnit
from g10core.ssd._ssd_wbuf import WriteBuffer
from g10core.ssd import SSDSpec
from test_ssd_stubs import stub_names, test_stub_matches_the_compiled_module as check_stub

LEAF_BYTES = 1024 * 4                   # an l2p leaf: 1024 entries of 4 bytes
POOL_NODES = 4096                       # a pool takes its nodes from the heap 4096 at a time


# ---- mapping ------------------------------------------------------------------------

def test_l2p_leaves_come_and_go_with_their_entries():
    m = MappingUnit(n_planes=4, blocks_per_plane=16, pages_per_block=64, logical_pages_per_plane=1024)
    assert m.table_bytes() == {"l2p_leaves": 0, "l2p_index": 5 * (8 + 4), "p2l_dense": 0,
                               "p2l_runs": 0, "valid_bits": 0}
    assert m.live(0) == -1 and m.lookup(5) == -1
    m.map(5, 77)
    m.map(1030, 78)                     # leaf 1
    m.map(5, 79)                        # an overwrite: still one entry
    assert (m.lookup(5), m.lookup(1030), m.lookup(6)) == (79, 78, -1)
    assert (m.live(0), m.live(1)) == (1, 1)
    # the pool took one chunk of leaves on the first leaf and keeps it
    assert m.table_bytes()["l2p_leaves"] == POOL_NODES * LEAF_BYTES
    m.unmap(5)
    assert (m.live(0), m.lookup(5)) == (-1, -1)  # the leaf's last entry: the leaf is freed
    m.map(7, 3)                         # and made again, from the pool's free list
    assert m.live(0) == 1 and m.table_bytes()["l2p_leaves"] == POOL_NODES * LEAF_BYTES


def test_p2l_runs_grow_then_turn_dense():
    m = MappingUnit(n_planes=4, blocks_per_plane=16, pages_per_block=256, logical_pages_per_plane=4096)
    m.p2l_lazy = False
    assert m.table_bytes()["valid_bits"] == 64 * 4 * 8       # 64 blocks, 4 words of 64 pages
    # a sequential write as one plane sees it: lpns step by n_planes, one run
    for page in range(10):
        assert m.append(3, page, 100 + 4 * page) == 0
    assert m.runs(3) == [(100, 0)] and m.capacity(3) == 8
    m.append(3, 10, 9)                  # a jump starts a run
    m.append(3, 11, 13)
    assert m.runs(3) == [(100, 0), (9, 10)]
    assert m.table_bytes()["p2l_runs"] == POOL_NODES * 2 * 8 * 4   # nodes of 8 (lpn, page) pairs
    # short runs from the start (a block filled at random): one lpn per page once 8 are full
    for page in range(8):
        m.append(5, page, 1000 * page)
    assert len(m.runs(5)) == 8
    m.append(5, 8, 7)
    assert m.runs(5) == "dense"
    assert m.table_bytes()["p2l_dense"] == POOL_NODES * 256 * 4
    m.release(5)
    assert m.runs(5) == [] and m.capacity(5) == 0


def test_long_runs_move_to_larger_lists():
    m = MappingUnit(n_planes=1, blocks_per_plane=4, pages_per_block=512, logical_pages_per_plane=1024)
    for r in range(9):                  # 9 runs of 4 pages: past 8 runs at 32+ pages in
        for page in range(4 * r, 4 * r + 4):
            m.append(0, page, 10 * r + page)
    assert m.capacity(0) == 32 and len(m.runs(0)) == 9
    assert m.runs(0)[8] == (80 + 32, 32)


# ---- write buffer ---------------------------------------------------------------------

def test_write_buffer_lets_pages_out_in_program_order():
    w = WriteBuffer(n_planes=3, capacity=3)
    for plane, done in ((0, 100), (1, 50), (2, 70)):
        assert w.admit(0) == 0          # room
        w.add(plane, done)
    assert w.count == 3
    # full: a page waits for the earliest program end over all planes (plane 1's, at 50)
    assert w.admit(10) == 50
    w.add(1, 60)
    assert w.pending(1) == [60] and w.admit(10) == 60
    w.add(1, 65)
    # pages whose program ended by the arrival leave at once, each plane's run together
    assert w.admit(80) == 80            # 65 and 70 have left; 100 is still in
    assert w.pending(0) == [100] and w.pending(1) == [] and w.pending(2) == []
    assert w.count == 1


def test_write_buffer_rings_grow():
    w = WriteBuffer(n_planes=2, capacity=100)
    for k in range(40):                 # past the first ring of 16
        w.add(1, 1000 + k)
    assert w.pending(1) == [1000 + k for k in range(40)] and w.count == 40
    assert w.admit(1019) == 1019        # below capacity: no wait, nothing taken out yet
    assert w.count == 40


# ---- block manager and GC ---------------------------------------------------------------

def _blocks(victim):
    spec = SSDSpec(n_channels=1, chips_per_channel=1, dies_per_chip=1, planes_per_die=1,
                   blocks_per_plane=8, pages_per_block=4, overprovisioning=0.5,
                   victim_policy=victim).check()
    return BlockManager(spec.compiled_params())


@pytest.mark.parametrize("victim,order", [("greedy", [1, 2, 0]), ("fifo", [0, 1, 2])])
def test_victims_greedy_by_valid_pages_fifo_by_age(victim, order):
    bm = _blocks(victim)
    assert [bm.write(0) for _ in range(13)] == list(range(13))   # blocks 0-2 full, 3 open
    assert bm.plane(0) == (4, 3, 3)     # 4 erased, 3 closed, host block 3
    bm.lose(0, 0, 1)
    bm.lose(0, 1, 3)
    bm.lose(0, 2, 1)
    bm.lose(0, 2, 1)
    assert [bm.valid(b) for b in range(4)] == [3, 1, 2, 1]
    assert [bm.victim(0) for _ in range(4)] == order + [-1]
    assert bm.plane(0) == (4, 0, 3)


# ---- stubs ------------------------------------------------------------------------------

@pytest.mark.parametrize("module_name,cls_name", [("ssd._ssd_map", "MappingUnit"), ("ssd._ssd_wbuf", "WriteBuffer"),
                                                  ("ssd._ssd_gc", "BlockManager")])
def test_unit_stubs_match_the_compiled_modules(module_name, cls_name):
    check_stub(module_name, cls_name)


def test_front_end_has_no_python_names():
    import g10core.ssd._ssd_front as front
    classes, top = stub_names("ssd._ssd_front")
    assert classes == {} and top == set()
    assert not [n for n in dir(front) if not n.startswith("_")]
