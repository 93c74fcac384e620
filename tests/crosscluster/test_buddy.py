"""The GPU buddy allocator of SpiderFlow (Appendix A.1): examples, bad input and a stateful
property test of its invariants against an independent model of the tree and the domains."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.crosscluster.buddy import (
    GLOBAL,
    Allocation,
    AllocationError,
    Block,
    BuddyAllocator,
    InvalidHandleError,
)

# -- an independent model: the halving tree and the locality domains --------------------------


def tree_parents(n: int) -> dict[tuple[int, int], tuple[int, int] | None]:
    """Every node ``(start, stop)`` of the halving tree of ``n`` GPUs -> its parent."""
    parents: dict[tuple[int, int], tuple[int, int] | None] = {(0, n): None}
    todo = [(0, n)]
    while todo:
        start, stop = todo.pop()
        if stop - start > 1:
            mid = start + (stop - start) // 2
            for half in ((start, mid), (mid, stop)):
                parents[half] = (start, stop)
                todo.append(half)
    return parents


def domains(n: int, levels) -> list[list[tuple[int, int]]]:
    """Per level (finest first, then global): its domains as ``(start, stop)`` ranges."""
    out = []
    for _, groups in levels:
        sizes = list(groups) if isinstance(groups, (list, tuple)) else None
        if sizes is None:
            sizes = [groups] * (n // groups) + ([n % groups] if n % groups else [])
        bounds = [0]
        for size in sizes:
            bounds.append(bounds[-1] + size)
        out.append(list(itertools.pairwise(bounds)))
    out.append([(0, n)])
    return out


def rank_of(doms, start: int, stop: int) -> int:
    """Index of the finest level with one domain containing ``start..stop-1``."""
    for rank, level in enumerate(doms):
        if any(lo <= start and stop <= hi for lo, hi in level):
            return rank
    raise AssertionError("global contains everything")


@st.composite
def clusters(draw):
    """A GPU count and levels: none, uniform group sizes, or explicit nested groups."""
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["none", "uniform", "explicit"]))
    if kind == "none":
        return n, ()
    if kind == "uniform":
        node = draw(st.integers(1, 8))
        return n, (("node", node), ("rack", node * draw(st.integers(1, 4))))
    node_cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=8))) if n > 1 else []
    rack_cuts = [c for c in node_cuts if draw(st.booleans())]

    def sizes(cuts):
        bounds = [0, *cuts, n]
        return [b - a for a, b in itertools.pairwise(bounds)]

    return n, (("node", sizes(node_cuts)), ("rack", sizes(rack_cuts)))


# -- the stateful property test ---------------------------------------------------------------


class BuddyMachine(RuleBasedStateMachine):
    """Random allocate / free / double-free / free-all sequences on random clusters."""

    def __init__(self) -> None:
        super().__init__()
        self.alloc: BuddyAllocator | None = None
        self.live: list[Allocation] = []
        self.freed: list[Allocation] = []

    @initialize(cluster=clusters())
    def build(self, cluster):
        self.n, levels = cluster
        self.alloc = BuddyAllocator(self.n, levels)
        self.parents = tree_parents(self.n)
        self.doms = domains(self.n, levels)
        self.initial = self.alloc.free_lists()
        assert self.alloc.free_blocks() == (Block(0, self.n),)

    def index(self, name: str) -> int:
        return int(name[1:])  # "g7" -> 7

    def rank(self, block: Block) -> int:
        return rank_of(self.doms, block.start, block.stop)

    @rule(data=st.data())
    def allocate(self, data):
        n = data.draw(st.integers(1, min(4, self.n)) | st.integers(1, self.n), label="n")
        combine = data.draw(st.booleans(), label="combine")
        before = self.alloc.free_lists()
        free = {i for b in self.alloc.free_blocks() for i in range(b.start, b.stop)}
        fitting = [b for b in self.alloc.free_blocks() if b.size >= n]
        if not fitting and not (combine and n <= len(free)):
            with pytest.raises(AllocationError) as info:
                self.alloc.allocate(n, combine=combine)
            assert (info.value.requested, info.value.free) == (n, len(free))
            assert self.alloc.free_lists() == before  # failed cleanly
            event("allocate: refused")
            return
        handle = self.alloc.allocate(n, combine=combine)
        idx = [self.index(g) for g in handle.gpus]
        assert len(idx) == n and idx == sorted(idx) and set(idx) <= free
        start, stop = idx[0], idx[-1] + 1
        rank = rank_of(self.doms, start, stop)
        assert handle.level == self.alloc.levels[rank]
        event(f"allocate: {'one block' if fitting else 'combined'}, level {handle.level}")
        if fitting:
            assert stop - start == n  # contiguous
            # from the block the free-list search picks: most local, smallest, earliest
            chosen = min(fitting, key=lambda b: (self.rank(b), b.size, b.start))
            assert chosen.start <= start and stop <= chosen.stop
            # as local as the most local tree node inside that block holding n GPUs
            inside = [b for b in self.parents if chosen.start <= b[0] and b[1] <= chosen.stop]
            assert rank <= min(rank_of(self.doms, *b) for b in inside if b[1] - b[0] >= n)
            assert rank <= self.rank(chosen)
            if any(self.rank(b) == 0 for b in fitting):
                assert rank == 0  # a node-level block holds n: one node
        else:  # combined, within the most local, then smallest tree node with n free GPUs
            holding = [b for b in self.parents if len(free & set(range(*b))) >= n]
            lo, hi = min(holding, key=lambda b: (rank_of(self.doms, *b), b[1] - b[0], b[0]))
            assert lo <= start and stop <= hi
        self.live.append(handle)

    @rule(data=st.data())
    def free(self, data):
        """Free a live handle; sometimes first try to free a freed one again."""
        if self.freed and data.draw(st.booleans(), label="try a stale handle first"):
            before = self.alloc.free_lists()
            with pytest.raises(InvalidHandleError, match="already freed"):
                self.alloc.free(data.draw(st.sampled_from(self.freed), label="stale"))
            assert self.alloc.free_lists() == before
        if not self.live:
            return
        handle = self.live.pop(data.draw(st.integers(0, len(self.live) - 1), label="which"))
        free_before = self.alloc.free_count
        self.alloc.free(handle)
        assert self.alloc.free_count == free_before + handle.size
        self.freed.append(handle)

    def teardown(self):
        """Freeing everything, in any order, restores the initial state: one free root."""
        if self.alloc is None:
            return
        random.Random(len(self.live)).shuffle(self.live)
        for handle in self.live:
            self.alloc.free(handle)
        assert self.alloc.free_lists() == self.initial
        assert self.alloc.free_blocks() == (Block(0, self.n),)
        assert self.alloc.free_count == self.n and self.alloc.allocations == ()

    @invariant()
    def gpus_partitioned(self):
        if self.alloc is None:
            return
        assert self.alloc.allocations == tuple(self.live)
        held = [self.index(g) for h in self.live for g in h.gpus]
        assert len(held) == len(set(held))  # no GPU handed out twice
        free = [i for b in self.alloc.free_blocks() for i in range(b.start, b.stop)]
        assert len(free) == len(set(free)) == self.alloc.free_count
        assert sorted(held + free) == list(range(self.n))  # allocated + free = all, disjoint

    @invariant()
    def blocks_are_tree_nodes(self):
        if self.alloc is None:
            return
        free = {(b.start, b.stop) for b in self.alloc.free_blocks()}
        for start, stop in free:
            parent = self.parents[(start, stop)]  # KeyError: not a tree node
            if parent is not None:
                buddy = (parent[0], start) if parent[1] == stop else (stop, parent[1])
                assert buddy not in free, f"free buddies {start, stop} and {buddy} not merged"
        for level, by_size in self.alloc.free_lists().items():
            for size, blocks in by_size.items():
                for b in blocks:
                    assert b.size == size
                    assert self.alloc.levels[rank_of(self.doms, b.start, b.stop)] == level
        for handle in self.live:
            assert all((b.start, b.stop) in self.parents for b in handle.blocks)
            covered = [i for b in handle.blocks for i in range(b.start, b.stop)]
            assert covered == [self.index(g) for g in handle.gpus]


BuddyMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestBuddyMachine = BuddyMachine.TestCase


# -- examples -------------------------------------------------------------------------------


def _names(a: Allocation) -> list[str]:
    return list(a.gpus)


def test_two_nodes_of_eight():
    alloc = BuddyAllocator([f"n{i // 8}/g{i % 8}" for i in range(16)], levels=[("node", 8)])
    assert alloc.free_lists() == {"node": {}, "global": {16: (Block(0, 16),)}}
    a = alloc.allocate(4)
    assert _names(a) == ["n0/g0", "n0/g1", "n0/g2", "n0/g3"]
    assert (a.level, a.blocks, a.size) == ("node", (Block(0, 4),), 4)
    assert alloc.free_lists() == {"node": {4: (Block(4, 8),), 8: (Block(8, 16),)}, "global": {}}
    b = alloc.allocate(4)  # the smallest sufficient node block, not the 8
    assert b.blocks == (Block(4, 8),)
    c = alloc.allocate(8)
    assert _names(c)[0] == "n1/g0" and c.level == "node"
    assert alloc.free_count == 0 and alloc.allocations == (a, b, c)
    with pytest.raises(AllocationError, match="only 0 are free"):
        alloc.allocate(1)
    alloc.free(a)
    assert alloc.free_blocks() == (Block(0, 4),)  # buddy (4, 8) still held
    alloc.free(b)
    assert alloc.free_blocks() == (Block(0, 8),)  # buddies merged
    alloc.free(c)
    assert alloc.free_lists() == {"node": {}, "global": {16: (Block(0, 16),)}}
    assert alloc.allocations == ()


def test_coalescing_needs_buddies():
    alloc = BuddyAllocator(16)
    quarters = [alloc.allocate(4) for _ in range(4)]
    alloc.free(quarters[0])
    alloc.free(quarters[2])
    assert alloc.free_blocks() == (Block(0, 4), Block(8, 12))  # not buddies: no merge
    alloc.free(quarters[1])
    assert alloc.free_blocks() == (Block(0, 8), Block(8, 12))
    alloc.free(quarters[3])  # (12, 16) -> (8, 16) -> root, recursively
    assert alloc.free_blocks() == (Block(0, 16),)


def test_exactly_n_gpus_no_rounding():
    alloc = BuddyAllocator(8)
    a = alloc.allocate(5)  # Algorithm 1 would round to 8
    assert _names(a) == ["g0", "g1", "g2", "g3", "g4"]
    assert a.blocks == (Block(0, 4), Block(4, 5))
    assert alloc.free_blocks() == (Block(5, 6), Block(6, 8))
    with pytest.raises(AllocationError, match="3 are free but the largest free block holds 2"):
        alloc.allocate(3)  # g5..g7 are free, but in two blocks
    assert alloc.allocate(3, combine=True).blocks == (Block(5, 6), Block(6, 8))


def test_three_of_four_is_three():
    # Algorithm 1 line 26 (`while block.size > num_gpus`) would split the 4 and return 2 GPUs
    alloc = BuddyAllocator(4)
    assert alloc.allocate(3).size == 3
    assert alloc.free_blocks() == (Block(3, 4),)


def test_halving_tree_any_count():
    alloc = BuddyAllocator(7)
    assert alloc.children(alloc.root) == (Block(0, 3), Block(3, 7))
    assert alloc.children(Block(3, 7)) == (Block(3, 5), Block(5, 7))
    assert alloc.children(Block(2, 3)) == ()
    handles = [alloc.allocate(1) for _ in range(7)]
    assert sorted(h.gpus[0] for h in handles) == [f"g{i}" for i in range(7)]
    for h in reversed(handles):
        alloc.free(h)
    assert alloc.free_blocks() == (alloc.root,)


def test_more_local_level_beats_smaller_block():
    # nodes g0..g2 and g3..g7; the tree's (0, 4) and (2, 4) cross the node boundary
    alloc = BuddyAllocator(8, levels=[("node", [3, 5])])
    big = alloc.allocate(4)
    assert big.blocks == (Block(4, 8),)  # the node-level child, not the left one
    one = alloc.allocate(1)
    assert one.blocks == (Block(0, 1),)
    alloc.free(big)
    assert alloc.free_lists() == {
        "node": {1: (Block(1, 2),), 4: (Block(4, 8),)},
        "global": {2: (Block(2, 4),)},
    }
    pair = alloc.allocate(2)
    assert pair.blocks == (Block(4, 6),) and pair.level == "node"


def test_last_run_when_more_local():
    alloc = BuddyAllocator(6, levels=[("node", [1, 5])])
    a = alloc.allocate(5)
    assert _names(a) == ["g1", "g2", "g3", "g4", "g5"] and a.level == "node"
    assert a.blocks == (Block(1, 3), Block(3, 6))
    assert alloc.free_blocks() == (Block(0, 1),)


def test_node_aligned_request_in_uneven_tree():
    alloc = BuddyAllocator(56, levels=[("node", 8), ("rack", 32)])  # 7 nodes: blocks of 7
    a = alloc.allocate(8)
    assert a.level == "node" and _names(a)[0] == "g0" and _names(a)[-1] == "g7"
    assert alloc.allocate(16).level == "rack"  # the last 16 of (28, 56): g40..g55, rack 1
    with pytest.raises(AllocationError, match="largest free block holds 14"):
        alloc.allocate(30)
    spread = alloc.allocate(30, combine=True)
    assert spread.level == GLOBAL and spread.size == 30 and alloc.free_count == 2


def test_combine_uses_the_most_local_subtree():
    alloc = BuddyAllocator(16, levels=[("node", 4)])
    ones = [alloc.allocate(1) for _ in range(16)]
    assert [h.gpus for h in ones] == [(f"g{i}",) for i in range(16)]
    for i in (0, 5, 6):
        alloc.free(ones[i])
    assert alloc.free_blocks() == (Block(0, 1), Block(5, 6), Block(6, 7))
    pair = alloc.allocate(2, combine=True)  # from node g4..g7, not g0 + g5
    assert pair.gpus == ("g5", "g6") and pair.level == "node"
    assert pair.blocks == (Block(5, 6), Block(6, 7))
    alloc.free(pair)
    assert alloc.allocate(3, combine=True).gpus == ("g0", "g5", "g6")


def test_fragmented_free_space_fails_cleanly():
    alloc = BuddyAllocator(4)
    handles = [alloc.allocate(1) for _ in range(3)]
    alloc.free(handles[1])
    before = alloc.free_lists()
    with pytest.raises(AllocationError, match="largest free block holds 1") as info:
        alloc.allocate(2)
    assert (info.value.requested, info.value.free, info.value.largest_block) == (2, 2, 1)
    assert alloc.free_lists() == before and alloc.allocations == (handles[0], handles[2])


def test_request_larger_than_cluster():
    with pytest.raises(AllocationError, match="cannot allocate 17 GPUs: only 16 are free"):
        BuddyAllocator(16).allocate(17)


def test_repr_and_queries():
    alloc = BuddyAllocator(["a", "b", "c"], levels=[("node", 2)])
    alloc.allocate(1)
    assert repr(alloc) == (
        "BuddyAllocator(3 GPUs, levels=('node', 'global'), 2 free, 1 allocation(s))"
    )
    assert alloc.gpus == ("a", "b", "c")
    assert alloc.free_blocks("node") == ()
    assert alloc.free_blocks(GLOBAL) == (Block(1, 3),)  # b, c: two nodes
    assert alloc.level_of(Block(2, 3)) == "node"


# -- bad handles ------------------------------------------------------------------------------


def test_bad_handles():
    alloc, other = BuddyAllocator(8), BuddyAllocator(8)
    a = alloc.allocate(2)
    foreign = other.allocate(2)
    with pytest.raises(InvalidHandleError, match="another allocator"):
        alloc.free(foreign)
    with pytest.raises(InvalidHandleError, match="not handed out by this allocator"):
        alloc.free(dataclasses.replace(a, blocks=(Block(2, 4),)))
    with pytest.raises(InvalidHandleError, match="not handed out by this allocator"):
        alloc.free(dataclasses.replace(a, serial=7))
    with pytest.raises(InvalidHandleError, match="takes an Allocation"):
        alloc.free((Block(0, 2),))  # type: ignore[arg-type]
    assert alloc.free_count == 6 and alloc.allocations == (a,)
    alloc.free(a)
    with pytest.raises(InvalidHandleError, match=r"#0 \(2 GPUs g0..g1\) was already freed"):
        alloc.free(a)
    assert alloc.free_blocks() == (alloc.root,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.serial = 1  # type: ignore[misc]


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "levels", "message"),
    [
        (0, (), "gpus: must be >= 1, got 0"),
        (-3, (), "gpus: must be >= 1"),
        (True, (), "gpus: must be an integer, got True"),
        (2.5, (), "gpus: must be an integer, got 2.5"),
        ("g0g1", (), "gpus: must be a GPU count or a sequence of GPU names, got the string"),
        ([], (), "gpus: must have at least 1 item"),
        (["a", ""], (), r"gpus\[1\]: must be a non-empty string"),
        (["a", 3], (), r"gpus\[1\]: must be a non-empty string, got 3"),
        (["a", "b", "a"], (), r"gpus\[2\]: duplicate name 'a'"),
        (8, "node", "levels: must be a JSON array, got str"),
        (8, [("node",)], r"levels\[0\]: must be a pair \(name, groups\)"),
        (8, [("node", 4, 8)], r"levels\[0\]: must be a pair"),
        (8, [("", 4)], r"levels\[0\]\[0\]: must be a non-empty string"),
        (8, [("global", 4)], r"levels\[0\]\[0\]: 'global' is implicit"),
        (8, [("node", 4), ("node", 8)], r"levels\[1\]\[0\]: duplicate level name 'node'"),
        (8, [("node", 0)], r"levels\[0\]\[1\]: must be >= 1, got 0"),
        (8, [("node", 2.5)], r"levels\[0\]\[1\]: must be an integer"),
        (8, [("node", "4")], r"levels\[0\]\[1\]: must be an integer, got '4'"),
        (8, [("node", [])], r"levels\[0\]\[1\]: must have at least 1 item"),
        (8, [("node", [4, 0, 4])], r"levels\[0\]\[1\]\[1\]: must be >= 1, got 0"),
        (8, [("node", [4, 3])], r"levels\[0\]\[1\]: group sizes sum to 7, but there are 8 GPUs"),
        (
            16,
            [("node", 4), ("rack", 6)],
            r"levels\[1\]\[1\]: a 'rack' domain ends before GPU 6, inside a 'node' domain",
        ),
        (16, [("rack", 8), ("node", 4)], r"levels\[1\]\[1\]: .*unions of the previous"),
    ],
)
def test_bad_construction(gpus, levels, message):
    with pytest.raises(InvalidInstanceError, match=message):
        BuddyAllocator(gpus, levels)


@pytest.mark.parametrize("n", [0, -1, 2.5, True, "2", None])
def test_bad_request(n):
    alloc = BuddyAllocator(8)
    with pytest.raises(InvalidInstanceError, match=r"^n: must be"):
        alloc.allocate(n)
    assert alloc.free_blocks() == (alloc.root,)


def test_unknown_level_query():
    with pytest.raises(InvalidInstanceError, match="level: unknown level 'rack'"):
        BuddyAllocator(8, [("node", 4)]).free_blocks("rack")
    with pytest.raises(InvalidInstanceError, match=r"block: Block\(6, 9\) is not a run of GPUs"):
        BuddyAllocator(8).level_of(Block(6, 9))


def test_error_types():
    assert issubclass(AllocationError, TopooptError) and issubclass(AllocationError, RuntimeError)
    assert issubclass(InvalidHandleError, TopooptError)
    assert issubclass(InvalidHandleError, ValueError)


def test_valid_level_forms():
    alloc = BuddyAllocator(10, [("node", 4), ("rack", [8, 2]), ("row", 64)])
    assert alloc.levels == ("node", "rack", "row", GLOBAL)
    assert alloc.level_of(Block(8, 10)) == "node"  # the short last node
    assert alloc.level_of(Block(4, 8)) == "node"
    assert alloc.level_of(Block(2, 6)) == "rack"
    assert alloc.level_of(Block(6, 10)) == "row"
    assert BuddyAllocator(10, [("node", 4), ("rack", 4)]).level_of(Block(0, 4)) == "node"
