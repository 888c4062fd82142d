"""The page table component alone, against a page-by-page model of the same state.

Random sequences of assignments, arrivals and departures (hypothesis); after each step
the runs, the per-tensor counters, the GPU's arrival order, the per-tensor chains and
the set of tensors on the GPU must equal the model's.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.uvm._pagetable import PageTable
from g10core.codes import TIER_GPU, TIER_HOST, TIER_NOT_PRESENT, TIER_SSD

SIZES = [3, 1, 4, 2, 5]                      # pages per tensor
FIRST = np.concatenate(([0], np.cumsum(SIZES)[:-1]))
P = sum(SIZES)


def table():
    T = len(SIZES)
    return PageTable({"first": FIRST, "pages": SIZES, "is_global": [1, 0, 1, 0, 0],
                      "birth": [0] * T, "death": [5] * T}, P, 100)


def tensor_of(page):
    return int(np.searchsorted(FIRST, page, side="right") - 1)


ops = st.lists(st.one_of(
    st.tuples(st.just("assign"), st.integers(0, P - 1), st.integers(1, 5),
              st.sampled_from([TIER_NOT_PRESENT, TIER_SSD, TIER_HOST]), st.booleans()),
    st.tuples(st.just("flag"), st.integers(0, P - 1), st.integers(1, 5), st.booleans()),
    st.tuples(st.just("arrive"), st.integers(0, P - 1), st.integers(1, 5)),
    st.tuples(st.just("depart"), st.integers(0, 30), st.integers(1, 5),
              st.sampled_from([TIER_NOT_PRESENT, TIER_SSD, TIER_HOST])),
), max_size=40)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_page_table_matches_a_page_by_page_model(steps):
    """As the replay uses it: a page is in the arrival list exactly when it is on the GPU."""
    pt = table()
    loc = [TIER_SSD if tensor_of(p) in (0, 2) else TIER_NOT_PRESENT for p in range(P)]
    intr = [False] * P
    order: list[int] = []                  # GPU pages, oldest first
    for step in steps:
        kind = step[0]
        if kind in ("assign", "flag", "arrive"):
            a, n = step[1], step[2]
            t = tensor_of(a)
            b = min(a + n, FIRST[t] + SIZES[t])
            on_gpu = [p in order for p in range(a, b)]
            if kind == "assign":            # pages off the GPU change tier
                if any(on_gpu):
                    continue
                tier, flag = step[3], step[4]
            elif kind == "flag":            # queued for a transfer or not, tier kept
                if len(set(loc[a:b])) != 1:
                    continue
                tier, flag = loc[a], step[3]
            else:                           # pages come to the GPU
                if any(on_gpu):
                    continue
                tier, flag = TIER_GPU, False
                pt.py_arrive(a, b - a, t)
                order.extend(range(a, b))
            pt.py_assign(t, a, b, tier, int(flag))
            for p in range(a, b):
                loc[p], intr[p] = tier, flag
        else:
            _, i, n, tier = step
            if not order:
                continue
            i %= len(order)
            a = order[i]
            run = [a]                       # consecutive pages, consecutive in the list too
            while (len(run) < n and i + len(run) < len(order) and order[i + len(run)] == a + len(run)
                   and tensor_of(a + len(run)) == tensor_of(a)):
                run.append(a + len(run))
            pt.py_depart(a, len(run))
            del order[i:i + len(run)]
            pt.py_assign(tensor_of(a), a, a + len(run), tier, 0)
            for p in run:
                loc[p], intr[p] = tier, False
        # runs: maximal within tensors and equal to the pages' states
        runs = pt.runs()
        expanded = []
        for (s, e, l, f) in runs:
            assert tensor_of(s) == tensor_of(e - 1), "a run crosses a tensor"
            expanded += [(l, bool(f))] * (e - s)
        assert expanded == list(zip(loc, intr))
        for (s0, e0, l0, f0), (s1, _e1, l1, f1) in zip(runs, runs[1:]):
            assert e0 == s1
            if tensor_of(s0) == tensor_of(s1):
                assert (l0, f0) != (l1, f1), "runs not merged"
        ready, in_transfer = pt.counts()
        for t in range(len(SIZES)):
            pages = range(FIRST[t], FIRST[t] + SIZES[t])
            assert ready[t] == sum(1 for p in pages if loc[p] == TIER_GPU and not intr[p])
            assert in_transfer[t] == sum(1 for p in pages if intr[p])
        # arrival order, per-tensor chains, tensors on the GPU
        flat = [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)]
        assert flat == order
        for t in range(len(SIZES)):
            chain = [p for (s, c) in pt.tensor_chain(t) for p in range(s, s + c)]
            assert chain == [p for p in order if tensor_of(p) == t]
        assert pt.tensors_on_gpu() == sorted({tensor_of(p) for p in order})
        for t in range(len(SIZES)):
            idle = [p for p in order if tensor_of(p) == t and not intr[p]]
            assert pt.py_oldest_idle_page(t) == (idle[0] if idle else -1)


BIG = [700, 300, 1500, 9, 1100]                # pages: runs over several 2 MiB stretches
BIG_FIRST = np.concatenate(([0], np.cumsum(BIG)[:-1]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, sum(BIG) - 1), st.integers(1, 900),
                          st.sampled_from([TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU]), st.booleans(),
                          st.lists(st.integers(0, sum(BIG) - 1), max_size=6)), max_size=50))
def test_run_at_finds_the_run_of_a_page_after_runs_split_and_merge(steps):
    """run_at starts from the run it found last (its finger, moved by each assignment to the
    run it made): after any sequence of assignments (runs split, merge, die), every page's
    answer must be the maximal run the pages' states give."""
    T = len(BIG)
    pt = PageTable({"first": BIG_FIRST, "pages": BIG, "is_global": [0] * T, "birth": [0] * T,
                    "death": [5] * T}, sum(BIG), 10_000)
    owner = np.repeat(np.arange(T), BIG)
    state = [(TIER_NOT_PRESENT, False)] * sum(BIG)

    def run_of(p):
        lo, hi = p, p + 1
        while lo > 0 and owner[lo - 1] == owner[p] and state[lo - 1] == state[p]:
            lo -= 1
        while hi < len(state) and owner[hi] == owner[p] and state[hi] == state[p]:
            hi += 1
        return lo, hi, state[p][0], int(state[p][1])

    for a, n, tier, flag, probes in steps:
        t = int(owner[a])
        b = min(a + n, int(BIG_FIRST[t] + BIG[t]))
        for p in probes + [a, b - 1]:                  # fill the cache, then change the runs
            assert pt.py_run_at(p) == run_of(p)
        pt.py_assign(t, a, b, tier, int(flag))
        state[a:b] = [(tier, flag)] * (b - a)
        for p in probes + [a, b - 1, max(a - 1, 0), min(b, len(state) - 1)]:
            assert pt.py_run_at(p) == run_of(p)


def test_tensor_of_and_liveness_inputs():
    pt = table()
    assert [pt.py_tensor_of(p) for p in range(P)] == [tensor_of(p) for p in range(P)]
    assert pt.n_pages == P and pt.n_tensors == len(SIZES)
    stats = pt.stats()
    assert stats["gpu_free"] == P and stats["loc_runs"] == len(SIZES)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3000), min_size=1, max_size=60), st.integers(0, 2**32 - 1))
def test_tensor_of_matches_a_search_over_every_tensor(sizes, seed):
    """tensor_of narrows its search with a table per 512 pages: tensors many to a 2 MiB
    stretch, one spanning many, gaps (VA-block padding) and any order of first pages must give
    what a search over every tensor gives, at each tensor's edges and beyond the last."""
    rng = np.random.default_rng(seed)
    gaps = rng.integers(0, 700, len(sizes)) * rng.integers(0, 2, len(sizes))
    first = np.cumsum(np.array(sizes) + gaps) - np.array(sizes)
    perm = rng.permutation(len(sizes))                  # tensors need not be listed by address
    first, pages = first[perm], np.array(sizes)[perm]
    T = len(sizes)
    pt = PageTable({"first": first, "pages": pages, "is_global": [0] * T, "birth": [0] * T,
                    "death": [5] * T}, int(pages.sum()), 100)
    starts = np.sort(first)
    owner = np.argsort(first, kind="stable")
    end = int(first.max() + pages.max()) + 1030
    probes = np.unique(np.concatenate([first, first + pages - 1, first + pages,
                                       rng.integers(0, end, 200), [0, end]]))
    for p in probes:
        assert pt.py_tensor_of(int(p)) == owner[max(np.searchsorted(starts, p, side="right") - 1, 0)]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_arrival_list_with_thousands_of_nodes(seed):
    """Thousands of nodes, several to a 2 MiB of the node grid: departures anywhere in the
    list (mostly away from the last node found) and re-arrivals keep the list and the grid
    exact."""
    rng = np.random.default_rng(seed)
    n_pages = 3000
    pt = PageTable({"first": [0], "pages": [n_pages], "is_global": [0], "birth": [0], "death": [5]},
                   n_pages, 100)
    cuts = np.unique(np.concatenate(([0, n_pages], rng.integers(1, n_pages, n_pages // 2))))
    chunks = [(int(a), int(b - a)) for a, b in zip(cuts[:-1], cuts[1:])]
    rng.shuffle(chunks)
    order: list[int] = []
    for a, c in chunks:
        pt.py_arrive(a, c, 0)
        order.extend(range(a, a + c))
    assert [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)] == order
    for step in range(4000):
        if not order:
            break
        i = int(rng.integers(len(order)))
        a = order[i]
        run = [a]
        want = int(rng.integers(1, 6))
        while len(run) < want and i + len(run) < len(order) and order[i + len(run)] == a + len(run):
            run.append(a + len(run))
        pt.py_depart(a, len(run))
        del order[i:i + len(run)]
        if rng.random() < 0.3:               # the pages come back, as the newest
            pt.py_arrive(a, len(run), 0)
            order.extend(run)
        if step % 100 == 0:
            assert [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)] == order
            assert pt.stats()["lru_nodes"] == len(pt.arrival_list())
            assert_grid_matches(pt)
    assert [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)] == order
    assert [p for (s, c) in pt.tensor_chain(0) for p in range(s, s + c)] == order
    assert_grid_matches(pt)


def depart_stretch(pt, order, present, a, stop, want):
    """Up to ``want`` present pages from ``a`` (before ``stop``) leave the list and the model
    (``order``: the arrival order, ``present``: per page); returns the end of the stretch."""
    b = a
    while b < stop and b - a < want and present[b]:
        b += 1
    pt.py_depart(a, b - a)
    gone = set(range(a, b))
    order[:] = [p for p in order if p not in gone]
    present[a:b] = False
    return b


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_departures_of_page_ranges_spanning_many_nodes(seed):
    """The handler evicts a VA block's pages at once, and they arrived in many nodes, in any
    order: depart finds the nodes after the first through the node grid.  The list, the
    chains and the grid stay exact."""
    rng = np.random.default_rng(seed)
    n_pages = 6000
    pt = PageTable({"first": [0, 2500], "pages": [2500, 3500], "is_global": [0, 0], "birth": [0, 0],
                    "death": [5, 5]}, n_pages, 100)
    owner = lambda p: 0 if p < 2500 else 1                      # noqa: E731
    order: list[int] = []
    present = np.zeros(n_pages, bool)

    def arrive_chunks(lo, hi):
        cuts = np.unique(np.concatenate(([lo, hi], rng.integers(lo + 1, hi, (hi - lo) // 3), [2500])))
        chunks = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if lo <= a < b <= hi]
        rng.shuffle(chunks)
        for a, b in chunks:
            pt.py_arrive(a, b - a, owner(a))
            order.extend(range(a, b))
            present[a:b] = True

    arrive_chunks(0, n_pages)
    for step in range(300):
        a = int(rng.integers(n_pages))
        if not present[a]:
            continue
        stop = 2500 if a < 2500 else n_pages                  # one tensor's pages at a time
        b = depart_stretch(pt, order, present, a, stop, int(rng.integers(1, 700)))
        if rng.random() < 0.5:                                # they come back, in pieces
            arrive_chunks(a, b)
        if step % 25 == 0:
            assert [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)] == order
            for t in (0, 1):
                assert ([p for (s, c) in pt.tensor_chain(t) for p in range(s, s + c)]
                        == [p for p in order if owner(p) == t])
            assert pt.stats()["lru_nodes"] == len(pt.arrival_list())
            assert_grid_matches(pt)
            for p in rng.integers(0, n_pages, 20):            # every present page's node is found
                if present[p]:
                    assert pt.py_next_page(int(p)) == (order[order.index(p) + 1]
                                                       if order.index(p) + 1 < len(order) else -1)
    assert [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)] == order


GRID = 512                                  # pages per node-grid cell (2 MiB)


def assert_grid_matches(pt):
    """The node grid against the live nodes: per 2 MiB the first and the last node with a page there, and
    each node linked to its page-order neighbours exactly when they share a 2 MiB."""
    nodes = sorted((s, c) for (s, c, _t) in pt.arrival_list())
    grid, links = pt.grid_state()
    first, last = [-1] * len(grid), [-1] * len(grid)
    for s, c in reversed(nodes):
        for g in range(s // GRID, (s + c - 1) // GRID + 1):
            first[g] = s
    for s, c in nodes:
        for g in range(s // GRID, (s + c - 1) // GRID + 1):
            last[g] = s
    assert grid == list(zip(first, last))
    for k, (s, c) in enumerate(nodes):
        nxt = nodes[k + 1][0] if k + 1 < len(nodes) and nodes[k + 1][0] // GRID == (s + c - 1) // GRID else -1
        prv = nodes[k - 1][0] if k > 0 and (sum(nodes[k - 1]) - 1) // GRID == s // GRID else -1
        assert links[s] == (prv, nxt), (s, c)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_node_grid_with_nodes_spanning_many_2mib(seed):
    """Nodes of one page to several 2 MiB arrive in any order, lose their first pages, their
    last ones or a middle stretch (a split), grow at the list's tail and leave: after each
    step the grid names each 2 MiB's first and last nodes and links exactly the neighbours that share
    one, and every present page's node is found through it."""
    rng = np.random.default_rng(seed)
    n_pages = 24 * GRID
    pt = PageTable({"first": [0], "pages": [n_pages], "is_global": [0], "birth": [0], "death": [5]},
                   n_pages, 100)
    order: list[int] = []
    present = np.zeros(n_pages, bool)
    for step in range(250):
        if rng.random() < 0.45 or not order:
            a = int(rng.integers(n_pages))
            want = int(rng.choice([1, 7, GRID - 3, GRID, 3 * GRID + 5]))
            b = a
            while b < n_pages and b - a < want and not present[b]:
                b += 1
            if b > a:
                pt.py_arrive(a, b - a, 0)          # joins the tail node when it follows it
                order.extend(range(a, b))
                present[a:b] = True
        else:
            a = order[int(rng.integers(len(order)))]
            depart_stretch(pt, order, present, a, n_pages, int(rng.choice([1, 3, 40, GRID, 2 * GRID + 9])))
        assert [p for (s, c, _t) in pt.arrival_list() for p in range(s, s + c)] == order
        assert_grid_matches(pt)
        for p in rng.integers(0, n_pages, 10):
            if present[p]:
                k = order.index(int(p))
                assert pt.py_next_page(int(p)) == (order[k + 1] if k + 1 < len(order) else -1)


def model_runs(first, sizes, loc, intr):
    """The maximal runs of a page-by-page state: (first page, end, tier, in transfer)."""
    out = []
    for f, n in zip(first, sizes):
        f, n = int(f), int(n)
        change = np.flatnonzero((loc[f + 1:f + n] != loc[f:f + n - 1]) | (intr[f + 1:f + n] != intr[f:f + n - 1]))
        starts = [f] + [f + 1 + int(c) for c in change]
        ends = starts[1:] + [f + n]
        out += [(s, e, int(loc[s]), int(intr[s])) for s, e in zip(starts, ends)]
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_thousands_of_runs_split_and_merge_across_leaves(seed):
    """The run map keeps runs in sorted leaves of 256 that split when full and merge when small:
    thousands of runs made by one-page assignments (over ten leaves), then merged away by long
    ones, must stay exactly the maximal runs the pages' states give, and run_at must find each
    page's run."""
    rng = np.random.default_rng(seed)
    sizes = [6000, 3, 2500]
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    n_pages = sum(sizes)
    pt = PageTable({"first": first, "pages": sizes, "is_global": [0] * 3, "birth": [0] * 3,
                    "death": [5] * 3}, n_pages, 100_000)
    owner = np.repeat(np.arange(3), sizes)
    loc = np.full(n_pages, TIER_NOT_PRESENT, np.int8)
    intr = np.zeros(n_pages, np.int8)
    tiers = [TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU]
    most = 0
    for phase, (count, longest) in enumerate([(3000, 3), (400, 2000), (1500, 5), (300, 6000)]):
        for i in range(count):
            a = int(rng.integers(n_pages))
            t = int(owner[a])
            b = min(a + int(rng.integers(1, longest + 1)), int(first[t] + sizes[t]))
            tier, flag = tiers[int(rng.integers(4))], int(rng.integers(2))
            pt.py_assign(t, a, b, tier, flag)
            loc[a:b] = tier
            intr[a:b] = flag
            if i % 97 == 0:
                runs = pt.runs()
                most = max(most, len(runs))
                assert runs == model_runs(first, sizes, loc, intr)
                for p in rng.integers(n_pages, size=20):
                    p = int(p)
                    s, e, l_, f_ = pt.py_run_at(p)
                    assert s <= p < e and (l_, f_) == (loc[p], intr[p])
        assert pt.runs() == model_runs(first, sizes, loc, intr)
    assert most > 1000                      # the one-page phases made many leaves' worth
