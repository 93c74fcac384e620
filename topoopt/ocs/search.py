"""The state of a local search over groupings and routings, scored incrementally.

:class:`State` holds a grouping (group 0 = a job not placed yet), every placed job's choice
(server or ring) and both groups' traffic as :class:`topoopt.ocs.incremental.Group`. A *move*
is a list of ``(job, group, choice)``: the jobs go to those groups with those choices (a job
that stays in its group and changes its choice is re-routed). :meth:`State.score` gives the
score of the state after a move without making it, touching only the moved jobs' pods (pod
values are cached by pod version); :meth:`State.apply` makes it.

The score is ``(round, pods that cannot be served, Σ v_a²)``, compared lexicographically
(:func:`better`): the round (paper eq. 1) first; at equal rounds, fewer unserved pods; then
the sum of the squared pod values of both groups (ours), which lets a search cross a plateau
of the round (a sum of maxima that one move rarely changes) towards groupings with less
loaded pods.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

from topoopt.ocs.choices import Choice, default_choice, option_count, options
from topoopt.ocs.incremental import Footprints, Group
from topoopt.ocs.instance import OcsInstance

Move = list[tuple[int, int, Choice]]
"""``(job, group, choice)`` for every job the move changes."""
Score = tuple[float, int, float]
"""``(round, unserved pods, Σ v_a²)``."""

EPS = 1e-9
"""Relative tolerance under which two rounds (or two tie-breakers) count as equal."""
SQUARE_NOISE = 1e-15
"""Differences of ``Σ v_a²`` (s²) below which two tie-breakers count as equal: the sum is kept
incrementally (a pod's old square subtracted, its new one added), and the rounding left after
values come and go is of the order of 1e-17 (a sum that is 0 may read 3e-18 or 7e-18)."""
MAX_OPTIONS = 60
"""Most options of one job a search tries (a ring over six pods has 60)."""


def better(one: Score, two: Score) -> bool:
    """Whether ``one`` is strictly better than ``two`` (module docstring)."""
    r1, n1, q1 = one
    r2, n2, q2 = two
    if r1 < r2 * (1 - EPS) or (math.isfinite(r1) and not math.isfinite(r2)):
        return True
    if r1 > r2 * (1 + EPS) or (math.isfinite(r2) and not math.isfinite(r1)):
        return False
    if n1 != n2:
        return n1 < n2
    return q1 < q2 - EPS * abs(q2) - SQUARE_NOISE


def job_options(instance: OcsInstance, job: int) -> list[Choice]:
    """The options a search tries for ``job``: all of them up to :data:`MAX_OPTIONS`, else the
    default ring only (a RAR job over more than six pods)."""
    if option_count(instance, job) <= MAX_OPTIONS:
        return options(instance, job)
    return [default_choice(instance, job)]


class State:
    """A grouping and routing with both groups' traffic (module docstring)."""

    def __init__(self, instance: OcsInstance, prints: Footprints | None = None) -> None:
        self.instance = instance
        self.prints = prints or Footprints(instance)
        n = instance.n_jobs
        self.groups = [0] * n
        self.choices: dict[int, Choice] = {}
        self.group = {1: Group(instance), 2: Group(instance)}
        self.size = {1: 0, 2: 0}
        self.train: dict[int, list[tuple[float, int]]] = {1: [], 2: []}
        self.second: dict[int, list[tuple[float, int]]] = {1: [], 2: []}
        self.t_train = [s.t_train_s for s in instance.jobs]
        self.t_second = [s.t_second_s for s in instance.jobs]
        self.square = {1: 0.0, 2: 0.0}
        self.unserved = {1: 0, 2: 0}
        self._cache: dict[tuple[int, int, tuple[tuple[int, int, Choice], ...]], tuple[int, float]]
        self._cache = {}
        self.delta = instance.reconfig_s
        self.jobs_at: list[list[int]] = [[] for _ in range(instance.n_pods)]
        for j in range(n):
            for a in instance.job_pods(j):
                self.jobs_at[a].append(j)

    # ------------------------------------------------------------------ scoring

    def _one(self, g: int, sign: int, j: int, c: Choice) -> dict[int, float]:
        """New values of group ``g``'s pods when job ``j`` with choice ``c`` joins (``sign``
        1) or leaves (-1)."""
        return self._values(g, ((sign, j, c),))

    def _values(self, g: int, changes: Sequence[tuple[int, int, Choice]]) -> dict[int, float]:
        """New values of the pods of group ``g`` that ``changes`` ``(sign, job, choice)``
        touch, each cached with the changes at that pod while the pod's version holds."""
        group = self.group[g]
        version = group.version
        cache = self._cache
        at: dict[int, list[tuple[int, int, Choice]]] = {}
        for change in changes:
            for a in self.prints(change[1], change[2]):
                at.setdefault(a, []).append(change)
        out: dict[int, float] = {}
        for a, items in at.items():
            key = (g, a, tuple(items))
            hit = cache.get(key)
            if hit is not None and hit[0] == version[a]:
                out[a] = hit[1]
                continue
            value = group.pod_value(a, [(s, self.prints(j, c)[a]) for s, j, c in items])
            cache[key] = (version[a], value)
            out[a] = value
        if len(cache) > 2_000_000:
            cache.clear()
        return out

    @staticmethod
    def _top(ranked: list[tuple[float, int]], leaving: Sequence[int]) -> float:
        for negative, j in ranked:
            if j not in leaving:
                return -negative
        return 0.0

    def score(self, move: Sequence[tuple[int, int, Choice]] = ()) -> Score:
        """The score after ``move`` (the current one for an empty move)."""
        changes: dict[int, list[tuple[int, int, Choice]]] = {1: [], 2: []}
        for j, g, c in move:
            old = self.groups[j]
            if old:
                changes[old].append((-1, j, self.choices[j]))
            if g:
                changes[g].append((1, j, c))
        parts: list[tuple[float, float, float]] = []
        square = 0.0
        unserved = 0
        for g in (1, 2):
            group = self.group[g]
            mine = changes[g]
            sq, un = self.square[g], self.unserved[g]
            if not mine:
                size = self.size[g]
                comm = group.comm() if size else 0.0
                train = self._top(self.train[g], ())
                second = self._top(self.second[g], ())
            else:
                new = self._values(g, mine)
                leaving = [j for s, j, _ in mine if s < 0]
                joining = [j for s, j, _ in mine if s > 0]
                size = self.size[g] - len(leaving) + len(joining)
                comm = group.comm(new) if size else 0.0
                train = self._top(self.train[g], leaving)
                second = self._top(self.second[g], leaving)
                for j in joining:
                    train = max(train, self.t_train[j])
                    second = max(second, self.t_second[j])
                values = group.value
                for a, v in new.items():
                    before = values[a]
                    if before == math.inf:
                        un -= 1
                    else:
                        sq -= before * before
                    if v == math.inf:
                        un += 1
                    else:
                        sq += v * v
            parts.append((train, second, comm + self.delta if size else 0.0))
            square += sq
            unserved += un
        (t1, s1, c1), (t2, s2, c2) = parts
        round_s = max(t1, c2) + max(t2, c1) + max(s1, c2) + max(s2, c1)
        return (round_s, unserved, square)

    # ------------------------------------------------------------------ changing

    def apply(self, move: Move) -> list[tuple[int, int, Choice]]:
        """Make ``move``; returns the move that undoes it."""
        undo = [(j, self.groups[j], self.choices.get(j)) for j, _, _ in move]
        for j, g, c in move:
            old = self.groups[j]
            if old:
                self._place(old, -1, j, self.choices[j])
            self.groups[j] = g
            if g:
                self.choices[j] = c
                self._place(g, 1, j, c)
            else:
                self.choices.pop(j, None)
        return undo

    def _place(self, g: int, sign: int, j: int, choice: Choice) -> None:
        group = self.group[g]
        prints = self.prints(j, choice)
        for a in prints:
            old = group.value[a]
            if math.isinf(old):
                self.unserved[g] -= 1
            else:
                self.square[g] -= old * old
        group.apply(sign, prints)
        for a in prints:
            new = group.value[a]
            if math.isinf(new):
                self.unserved[g] += 1
            else:
                self.square[g] += new * new
        self.size[g] += sign
        for ranked, t in ((self.train[g], self.t_train[j]), (self.second[g], self.t_second[j])):
            if sign > 0:
                bisect.insort(ranked, (-t, j))
            else:
                ranked.remove((-t, j))

    # ------------------------------------------------------------------ views

    def comm(self, g: int) -> float:
        """Group ``g``'s communication time (0 when empty)."""
        return self.group[g].comm() if self.size[g] else 0.0

    def comm_with(self, job: int, g: int, choice: Choice) -> float:
        """Group ``g``'s communication time if ``job`` (not in it) joins with ``choice``."""
        return self.group[g].comm(self._one(g, 1, job, choice))

    def busiest(self, g: int) -> list[int]:
        """The jobs of group ``g`` on its busiest pods (those at its communication time)."""
        if not self.size[g]:
            return []
        group = self.group[g]
        comm = group.comm()
        out: set[int] = set()
        for a in group.order():
            if group.value[a] < comm * (1 - EPS) or group.value[a] == 0:
                break
            out.update(j for j in self.jobs_at[a] if self.groups[j] == g)
        return sorted(out)

    def partners(self, job: int, slowest: int = 4) -> list[int]:
        """The jobs of the other group that share a pod with ``job``, and its ``slowest``
        jobs by training and by second compute time: the exchange partners tried."""
        h = 3 - self.groups[job]
        out = {
            j for a in self.instance.job_pods(job) for j in self.jobs_at[a] if self.groups[j] == h
        }
        out.update(j for _, j in self.train[h][:slowest])
        out.update(j for _, j in self.second[h][:slowest])
        return sorted(out)

    def critical(self) -> list[int]:
        """The jobs a strictly better round must move: those on a busiest pod of a group
        whose communication decides a phase, and the slowest jobs of a group whose compute
        decides one."""
        delta = self.instance.reconfig_s
        out: set[int] = set()
        for g in (1, 2):
            h = 3 - g
            if not self.size[g]:
                continue
            comm = self.comm(g)
            top_train = self._top(self.train[g], ())
            top_second = self._top(self.second[g], ())
            other_train = self._top(self.train[h], ())
            other_second = self._top(self.second[h], ())
            busy = comm + delta
            if busy >= min(other_train, other_second) * (1 - EPS):
                out.update(self.busiest(g))
            other_comm = self.comm(h) + delta if self.size[h] else 0.0
            for top, times in ((top_train, self.t_train), (top_second, self.t_second)):
                if top >= other_comm * (1 - EPS):
                    out.update(
                        j
                        for j in range(len(self.groups))
                        if self.groups[j] == g and times[j] >= top * (1 - EPS)
                    )
        return sorted(out)

    def snapshot(self) -> tuple[tuple[int, ...], dict[int, Choice]]:
        """The grouping and the choices."""
        return tuple(self.groups), dict(self.choices)


def best_option(
    state: State, job: int, group: int, choices: Iterable[Choice]
) -> tuple[Score, Choice]:
    """The best score of moving (or re-routing) ``job`` to ``group`` over ``choices`` and the
    choice that reaches it (the first of equal ones)."""
    best: tuple[Score, Choice] | None = None
    for c in choices:
        s = state.score([(job, group, c)])
        if best is None or better(s, best[0]):
            best = (s, c)
    assert best is not None
    return best


__all__ = ["EPS", "Move", "Score", "State", "best_option", "better", "job_options"]
