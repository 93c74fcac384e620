"""SpiderFlow's intra-cluster GPU buddy allocator (Appendix A.1, Algorithm 1).

A cluster's GPUs, listed in topology order (GPUs of a node next to each other, nodes of a rack
next to each other), are organised into a balanced binary tree by halving (``BUILD_TREE``,
Algorithm 1 lines 11-20, ``mid = len // 2``, any GPU count): every tree node is a contiguous
:class:`Block` of GPUs and every leaf one GPU. Free blocks are tree nodes, kept in free lists per
*locality level* and per block size. The levels are the caller's nested locality domains, finest
first (``node``, ``rack``, ...), and the implicit outermost level ``"global"``; a block's level
is the finest domain that contains the whole block.

:meth:`BuddyAllocator.allocate` takes ``n`` GPUs from the most local free block that can hold
them (levels from finest to ``"global"``, smallest sufficient block first), splitting it
buddy-wise; :meth:`BuddyAllocator.free` returns them and merges buddies (the two children of one
tree node) as long as both are free.

Deviations from Algorithm 1, all documented in ``docs/buddy.md``:

* **No rounding.** Algorithm 1 rounds a request up to a power of two (line 22); here exactly
  ``n`` GPUs are handed out: the first or last ``n`` of a tree node inside the chosen block,
  covered by whole tree nodes, the rest staying free. (Rounding would also not fit the halving
  tree: 56 GPUs give blocks of 28, 14 and 7, no block of 8.)
* **Split loop.** Line 26 loops ``while block.size > num_gpus`` after rounding ``num_gpus`` up to
  ``size``: a request of 3 pops a block of 4, splits it and returns its left half of 2 GPUs (it
  should compare ``block.left.size`` with ``size``). Here a block is split only while the part
  to hand out does not cover it, and every sibling left behind goes back to the free lists (as
  the text of A.1 says; the pseudocode omits it).
* **Search.** Line 24 looks only for a block of exactly the rounded size; here the smallest free
  block of at least ``n`` GPUs is taken, level by level, as the text of A.1 describes.
* **Fragmented free space.** When ``n`` GPUs are free but no single free block holds them,
  Algorithm 1 returns nothing; here :class:`AllocationError` is raised and the state is unchanged,
  unless ``allocate(n, combine=True)`` is asked for: then the free blocks of the most local, then
  smallest, tree node with ``n`` free GPUs are combined. A request fails only when fewer than
  ``n`` GPUs are free.

Examples
--------
>>> alloc = BuddyAllocator(16, levels=[("node", 8)])
>>> a = alloc.allocate(3)
>>> a.gpus, a.level, a.blocks
(('g0', 'g1', 'g2'), 'node', (Block(0, 2), Block(2, 3)))
>>> alloc.free_count, alloc.free_blocks()
(13, (Block(3, 4), Block(4, 8), Block(8, 16)))
>>> alloc.free(a)
>>> alloc.free_blocks()
(Block(0, 16),)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError, TopooptError

__all__ = [
    "GLOBAL",
    "Allocation",
    "AllocationError",
    "Block",
    "BuddyAllocator",
    "InvalidHandleError",
]

GLOBAL = "global"
"""Name of the implicit outermost locality level: all GPUs of the cluster."""

_OWNERS = itertools.count()  # tells the handles of different allocators apart


class AllocationError(TopooptError, RuntimeError):
    """No free block holds the requested number of GPUs; the allocator is unchanged.

    Attributes
    ----------
    requested
        GPUs asked for.
    free
        GPUs free at the time.
    largest_block
        Size of the largest free block (an allocation never spans two free blocks).
    """

    def __init__(self, requested: int, free: int, largest_block: int) -> None:
        self.requested = requested
        self.free = free
        self.largest_block = largest_block
        if requested > free:
            message = f"cannot allocate {requested} GPUs: only {free} are free"
        else:
            message = (
                f"cannot allocate {requested} GPUs: {free} are free but the largest free block "
                f"holds {largest_block} (combine=True takes GPUs from several free blocks)"
            )
        super().__init__(message)


class InvalidHandleError(TopooptError, ValueError):
    """:meth:`BuddyAllocator.free` got a handle it did not hand out, or one already freed."""


@dataclass(frozen=True, order=True)
class Block:
    """A tree node: the GPUs at topology positions ``start, ..., stop - 1``.

    Examples
    --------
    >>> Block(8, 16).size
    8
    """

    start: int
    stop: int

    @property
    def size(self) -> int:
        """Number of GPUs in the block."""
        return self.stop - self.start

    def __repr__(self) -> str:
        return f"Block({self.start}, {self.stop})"


@dataclass(frozen=True)
class Allocation:
    """Handle of ``n`` GPUs handed out by :meth:`BuddyAllocator.allocate`; give it to
    :meth:`BuddyAllocator.free` to return them.

    Attributes
    ----------
    gpus
        Names of the GPUs, in topology order (a contiguous run).
    level
        Locality level of the GPUs: the finest domain containing all of them.
    blocks
        The tree nodes handed out, in topology order; their union is ``gpus``.
    serial
        Number of the allocation within its allocator (0, 1, ...).
    owner
        Identifies the allocator that handed it out.
    """

    gpus: tuple[str, ...]
    level: str
    blocks: tuple[Block, ...]
    serial: int
    owner: int = field(repr=False)

    @property
    def size(self) -> int:
        """Number of GPUs."""
        return len(self.gpus)


class BuddyAllocator:
    """Topology-aware buddy allocator of one cluster's GPUs (SpiderFlow Appendix A.1).

    Parameters
    ----------
    gpus
        GPU names in topology order (unique, non-empty strings), or a GPU count ``n`` meaning the
        names ``"g0", ..., "g<n-1>"``.
    levels
        Locality domains, finest first, as pairs ``(name, groups)``. ``groups`` is either a group
        size ``k`` (consecutive runs of ``k`` GPUs form a domain; the last run may be shorter) or
        the sizes of the consecutive groups (summing to the GPU count). Each level's domains must
        be unions of the previous level's. ``"global"`` (all GPUs) is implicit and always last.
        Example: ``[("node", 8), ("rack", 32)]``.

    Attributes
    ----------
    root
        The tree's root, ``Block(0, len(gpus))``; :meth:`children` walks the tree.

    Raises
    ------
    InvalidInstanceError
        Naming the argument (``gpus``, ``levels[1][1]``, ...) and the rule it breaks.

    Examples
    --------
    >>> alloc = BuddyAllocator(32, levels=[("node", 8), ("rack", [16, 16])])
    >>> alloc.levels
    ('node', 'rack', 'global')
    >>> [alloc.allocate(n).level for n in (8, 4, 16)]
    ['node', 'node', 'rack']
    >>> alloc.free_lists()
    {'node': {4: (Block(12, 16),)}, 'rack': {}, 'global': {}}
    """

    def __init__(self, gpus: int | Sequence[str], levels: Iterable[Any] = ()) -> None:
        self._names = _gpu_names(gpus)
        names, self._domains = _parse_levels(levels, len(self._names))
        self._levels = (*names, GLOBAL)
        self.root = Block(0, len(self._names))
        self._children: dict[Block, tuple[Block, Block]] = {}
        self._parent: dict[Block, Block] = {}
        self._build_tree()
        self._free: dict[str, dict[int, set[Block]]] = {name: {} for name in self._levels}
        self._free_set: set[Block] = set()
        self._free_count = 0
        self._allocated: dict[int, Allocation] = {}
        self._next_serial = 0
        self._owner = next(_OWNERS)
        self._add_free(self.root)  # populate_blocks (Algorithm 1 line 6)

    # -- queries -------------------------------------------------------------------------------

    @property
    def gpus(self) -> tuple[str, ...]:
        """All GPU names, in topology order."""
        return self._names

    @property
    def levels(self) -> tuple[str, ...]:
        """Locality level names, finest first, ending with ``"global"``."""
        return self._levels

    @property
    def free_count(self) -> int:
        """Number of free GPUs."""
        return self._free_count

    @property
    def allocations(self) -> tuple[Allocation, ...]:
        """Handles not yet freed, oldest first."""
        return tuple(self._allocated.values())

    def free_blocks(self, level: str | None = None) -> tuple[Block, ...]:
        """Free blocks (of one locality ``level``, or all), in topology order."""
        if level is not None and level not in self._free:
            raise InvalidInstanceError("level", f"unknown level {level!r}; one of {self._levels}")
        lists = self._free.values() if level is None else [self._free[level]]
        return tuple(sorted(b for by_size in lists for blocks in by_size.values() for b in blocks))

    def free_lists(self) -> dict[str, dict[int, tuple[Block, ...]]]:
        """Snapshot of the free lists: level -> block size -> blocks in topology order."""
        return {
            level: {size: tuple(sorted(by_size[size])) for size in sorted(by_size)}
            for level, by_size in self._free.items()
        }

    def level_of(self, block: Block) -> str:
        """Locality level of ``block``: the finest domain containing all its GPUs."""
        if not 0 <= block.start < block.stop <= self.root.stop:
            raise InvalidInstanceError("block", f"{block!r} is not a run of GPUs of {self.root!r}")
        return self._levels[self._rank(block.start, block.stop)]

    def children(self, block: Block) -> tuple[Block, ...]:
        """The two halves of ``block`` in the tree (``()`` for one GPU)."""
        return self._children.get(block, ())

    def __repr__(self) -> str:
        return (
            f"BuddyAllocator({len(self._names)} GPUs, levels={self._levels}, "
            f"{self._free_count} free, {len(self._allocated)} allocation(s))"
        )

    # -- allocate and free ---------------------------------------------------------------------

    def allocate(self, n: int, *, combine: bool = False) -> Allocation:
        """Hand out exactly ``n`` GPUs from the most local free block that holds them.

        The free lists are searched level by level (finest first, ``"global"`` last) and, within
        a level, smallest sufficient block first, then topology order (Algorithm 1 lines 23-25).
        Inside that block, the ``n`` GPUs handed out are the first or the last ``n`` of one of
        its tree nodes: the most local such run, then the one in the smallest node, then the
        earliest. The block is split buddy-wise around that run (the split loop of lines 26-29):
        the GPUs are handed out as whole tree nodes, and every sibling left behind returns to
        the free lists.

        Parameters
        ----------
        n
            Number of GPUs, ``>= 1``.
        combine
            What to do when ``n`` GPUs are free but no single free block holds them: ``False``
            (default, as Algorithm 1) raises :class:`AllocationError`; ``True`` takes them from
            the most local, then smallest, tree node with ``n`` free GPUs, combining its free
            blocks in topology order (the last one split), so the GPUs need not be contiguous.

        Returns
        -------
        Allocation
            The handle: the GPUs in topology order, their level and the tree nodes.

        Raises
        ------
        InvalidInstanceError
            If ``n`` is not a positive integer.
        AllocationError
            If fewer than ``n`` GPUs are free, or (without ``combine``) no free block holds
            ``n``; the allocator is unchanged.
        """
        n = v.as_int(n, "n", minimum=1)
        block = self._pick_block(n)
        if block is not None:
            start, stop = self._pick_run(block, n)
            taken = self._take(block, start, stop)
        elif combine and n <= self._free_count:
            taken = self._take_combined(self._pick_subtree(n), n)
        else:
            largest = max((b.size for b in self._free_set), default=0)
            raise AllocationError(n, self._free_count, largest)
        gpus = tuple(name for b in taken for name in self._names[b.start : b.stop])
        handle = Allocation(
            gpus=gpus,
            level=self._levels[self._rank(taken[0].start, taken[-1].stop)],
            blocks=tuple(taken),
            serial=self._next_serial,
            owner=self._owner,
        )
        self._next_serial += 1
        self._allocated[handle.serial] = handle
        return handle

    def free(self, handle: Allocation) -> None:
        """Return the GPUs of ``handle`` and coalesce buddies recursively (Appendix A.1).

        Each tree node of the handle goes back to the free lists; while its buddy (the other
        child of its parent) is free as well, the two merge into the parent.

        Raises
        ------
        InvalidHandleError
            If ``handle`` is not an :class:`Allocation` of this allocator that is still allocated
            (freed twice, handed out by another allocator, or altered).
        """
        if not isinstance(handle, Allocation):
            raise InvalidHandleError(
                f"free() takes an Allocation returned by allocate(), got {type(handle).__name__}"
            )
        what = f"allocation #{handle.serial} ({_describe(handle.gpus)})"
        if handle.owner != self._owner:
            raise InvalidHandleError(f"{what} was handed out by another allocator")
        if self._allocated.get(handle.serial) != handle:
            if handle.serial in self._allocated or not 0 <= handle.serial < self._next_serial:
                raise InvalidHandleError(f"{what} was not handed out by this allocator")
            raise InvalidHandleError(f"{what} was already freed")
        del self._allocated[handle.serial]
        for block in handle.blocks:
            self._release(block)

    # -- internals -----------------------------------------------------------------------------

    def _build_tree(self) -> None:
        """``BUILD_TREE`` (Algorithm 1 lines 11-20): halve every block of >= 2 GPUs."""
        stack = [self.root]
        while stack:
            block = stack.pop()
            if block.size == 1:
                continue
            mid = block.start + block.size // 2
            halves = (Block(block.start, mid), Block(mid, block.stop))
            self._children[block] = halves
            for half in halves:
                self._parent[half] = block
            stack.extend(halves)

    def _rank(self, start: int, stop: int) -> int:
        """Index in :attr:`levels` of the finest domain holding GPUs ``start..stop-1``."""
        last = stop - 1
        for rank, domain in enumerate(self._domains):
            if domain[start] == domain[last]:
                return rank
        return len(self._domains)

    def _key(self, block: Block) -> tuple[int, int, int]:
        """Preference order of blocks: more local, then smaller, then earlier."""
        return self._rank(block.start, block.stop), block.size, block.start

    def _add_free(self, block: Block) -> None:
        level = self.level_of(block)
        self._free[level].setdefault(block.size, set()).add(block)
        self._free_set.add(block)
        self._free_count += block.size

    def _remove_free(self, block: Block) -> None:
        by_size = self._free[self.level_of(block)]
        by_size[block.size].remove(block)
        if not by_size[block.size]:
            del by_size[block.size]
        self._free_set.remove(block)
        self._free_count -= block.size

    def _pick_block(self, n: int) -> Block | None:
        """The free block to allocate from: first level with a block of ``>= n`` GPUs, its
        smallest such size, the earliest such block."""
        for level in self._levels:
            by_size = self._free[level]
            sizes = [size for size in by_size if size >= n]
            if sizes:
                return min(by_size[min(sizes)])
        return None

    def _pick_run(self, block: Block, n: int) -> tuple[int, int]:
        """The ``n`` consecutive GPUs to hand out from free ``block``, as ``(start, stop)``: the
        first or last ``n`` of a tree node inside ``block`` holding ``n``; the most local such
        run, then the one in the smallest node, then the earliest."""
        runs = []
        nodes = [block]
        while nodes:
            node = nodes.pop()
            for start in (node.start, node.stop - n):
                runs.append((self._rank(start, start + n), node.size, start))
            nodes += [child for child in self.children(node) if child.size >= n]
        _, _, start = min(runs)
        return start, start + n

    def _take(self, block: Block, start: int, stop: int) -> list[Block]:
        """Remove free ``block`` and hand out its GPUs ``start..stop-1`` as maximal tree nodes;
        the rest of ``block`` goes back to the free lists."""
        taken: list[Block] = []
        left_over: list[Block] = []
        self._remove_free(block)
        self._split(block, start, stop, taken, left_over)
        for rest in left_over:
            self._add_free(rest)
        return taken

    def _pick_subtree(self, n: int) -> Block:
        """The most local, then smallest, then earliest tree node with ``>= n`` free GPUs."""
        free_in: dict[Block, int] = {}
        for block in self._free_set:
            node: Block | None = block
            while node is not None:
                free_in[node] = free_in.get(node, 0) + block.size
                node = self._parent.get(node)
        return min((b for b, count in free_in.items() if count >= n), key=self._key)

    def _take_combined(self, subtree: Block, n: int) -> list[Block]:
        """Hand out ``n`` free GPUs of ``subtree``: its free blocks in topology order, the last
        one cut to size."""
        taken: list[Block] = []
        inside = sorted(b for b in self._free_set if subtree.start <= b.start < subtree.stop)
        for block in inside:
            need = n - sum(b.size for b in taken)
            if need == 0:
                break
            taken += self._take(block, block.start, block.start + min(need, block.size))
        return taken

    def _split(
        self, block: Block, start: int, stop: int, taken: list[Block], left_over: list[Block]
    ) -> None:
        """Cut ``block`` into maximal tree nodes inside ``start..stop-1`` (``taken``) and outside
        it (``left_over``), both in topology order."""
        if stop <= block.start or block.stop <= start:
            left_over.append(block)
        elif start <= block.start and block.stop <= stop:
            taken.append(block)
        else:
            for child in self._children[block]:
                self._split(child, start, stop, taken, left_over)

    def _release(self, block: Block) -> None:
        """Free ``block``, merging it with its buddy as long as the buddy is free."""
        while (parent := self._parent.get(block)) is not None:
            left, right = self._children[parent]
            buddy = right if block == left else left
            if buddy not in self._free_set:
                break
            self._remove_free(buddy)
            block = parent
        self._add_free(block)


def _describe(gpus: Sequence[str]) -> str:
    if len(gpus) == 1:
        return f"GPU {gpus[0]}"
    return f"{len(gpus)} GPUs {gpus[0]}..{gpus[-1]}"


def _gpu_names(gpus: Any) -> tuple[str, ...]:
    """The GPU names of ``gpus`` (a count or a sequence of names), validated."""
    if isinstance(gpus, (str, bytes)) or not isinstance(gpus, Iterable):
        if isinstance(gpus, (str, bytes)):
            raise InvalidInstanceError(
                "gpus", f"must be a GPU count or a sequence of GPU names, got the string {gpus!r}"
            )
        count = v.as_int(gpus, "gpus", minimum=1)
        return tuple(f"g{i}" for i in range(count))
    names = v.as_tuple(gpus, "gpus", min_len=1)
    for i, name in enumerate(names):
        v.as_str(name, f"gpus[{i}]")
    v.unique_names(names, "gpus")
    return names


def _parse_levels(levels: Any, n: int) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """Level names, finest first, and per level the domain index of every GPU."""
    names: list[str] = []
    domains: list[tuple[int, ...]] = []
    finer_cuts: set[int] | None = None
    for i, item in enumerate(v.as_tuple(levels, "levels")):
        path = f"levels[{i}]"
        pair = v.as_tuple(item, path)
        if len(pair) != 2:
            raise InvalidInstanceError(path, f"must be a pair (name, groups), got {item!r}")
        name = v.as_str(pair[0], f"{path}[0]")
        if name == GLOBAL:
            raise InvalidInstanceError(f"{path}[0]", "'global' is implicit (the last level)")
        if name in names:
            raise InvalidInstanceError(f"{path}[0]", f"duplicate level name {name!r}")
        sizes = _group_sizes(pair[1], n, f"{path}[1]")
        cuts = set(itertools.accumulate(sizes))
        if finer_cuts is not None and not cuts <= finer_cuts:
            raise InvalidInstanceError(
                f"{path}[1]",
                f"a {name!r} domain ends before GPU {min(cuts - finer_cuts)}, inside a "
                f"{names[-1]!r} domain: each level's domains must be unions of the previous "
                "(finer) level's",
            )
        finer_cuts = cuts
        names.append(name)
        domains.append(tuple(g for g, size in enumerate(sizes) for _ in range(size)))
    return tuple(names), tuple(domains)


def _group_sizes(groups: Any, n: int, path: str) -> tuple[int, ...]:
    """Sizes of the consecutive domains of one level over ``n`` GPUs."""
    if isinstance(groups, Iterable) and not isinstance(groups, (str, bytes)):
        items = v.as_tuple(groups, path, min_len=1)
        sizes = tuple(v.as_int(size, f"{path}[{j}]", minimum=1) for j, size in enumerate(items))
        if sum(sizes) != n:
            raise InvalidInstanceError(
                path, f"group sizes sum to {sum(sizes)}, but there are {n} GPUs"
            )
        return sizes
    size = v.as_int(groups, path, minimum=1)
    return (size,) * (n // size) + ((n % size,) if n % size else ())
