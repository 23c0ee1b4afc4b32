"""The order a garbage collection deletes files in: what points goes before what it points to.

Cut short after any deletion, what is left must never point to a file already gone. Within
a family (a thread with its sub-agent threads), :func:`deletion_order` gives that order.
Across families, a family pointing to another one that goes is removed before it
(:func:`units`); families that point to each other, directly or through others (a cycle),
form one **unit**, whose files are ordered together, file by file (:func:`unit_order`): a
file holding a pointer before the file it points to, and within each family the order of
:func:`deletion_order` where nothing else decides. Two files that point to each other, or
a longer cycle of files, cannot be ordered: the unit is still ordered as well as it can be,
and the cycle is returned so that the plan says so.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ctxfs._layout import TRANSCRIPTS_DIR
from ctxfs.lifecycle._rules import Reference
from ctxfs.lifecycle._threads import ThreadInfo

__all__ = ["UnitOrder", "deletion_order", "unit_order", "units"]

T = TypeVar("T", str, int)


def deletion_order(family: ThreadInfo) -> tuple[str, ...]:
    """The family's files in the order a collection deletes them.

    What points comes before what it points to, so that a collection cut short leaves no
    reader a pointer to a missing file: first the transcripts, thread by thread, the thread
    before its sub-agent threads (a task's result names their transcripts); in each folder
    the segment records, then the index head, then its pages (the head gone, a reader finds
    no segment; a record left alone would make it rebuild the index), then other control
    files, then the sub-task record (its result names the segments; until it goes, it still
    says whose sub-agent thread this is), then the segment files; then the offloaded results
    and inputs the transcripts point to.
    """
    transcripts: list[str] = []
    rest: list[str] = []
    for thread in family.walk():
        folder = _folder(thread)
        mine: list[tuple[int, str]] = []
        for stamped in thread.files:
            if stamped.path.startswith(folder):
                mine.append((_rank(stamped.path[len(folder) :]), stamped.path))
            else:
                rest.append(stamped.path)
        transcripts.extend(path for _, path in sorted(mine))
    return (*transcripts, *sorted(rest))


def _folder(thread: ThreadInfo) -> str:
    return f"{TRANSCRIPTS_DIR}/{thread.key}/"


def _rank(name: str) -> int:
    if name.startswith("segment-") and name.endswith(".json"):
        return 0
    if name == "index.json":
        return 1
    if name.startswith("index-") and name.endswith(".json"):
        return 2
    if name == "task.json":
        return 4  # its result names the thread's segments: it goes before them
    if name.endswith(".json"):
        return 3
    return 5


def _holds_pointers(path: str) -> bool:
    """Whether the rules read the file for pointers (a segment's ``.md`` rendering, a
    result's data, are not)."""
    return path.endswith((".json", ".jsonl"))


def units(oldest_first: Sequence[str], points_to: Mapping[str, set[str]]) -> list[list[str]]:
    """The families to remove grouped in units, in the order they are removed.

    A unit is one family, or families pointing to each other through a cycle (a strongly
    connected component). A unit pointing to another goes before it; otherwise the oldest
    first (the order of ``oldest_first``, kept inside a unit too).
    """
    position = {key: n for n, key in enumerate(oldest_first)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def connect(key: str) -> None:  # Tarjan's algorithm (families are few: recursion is fine)
        index[key] = low[key] = len(index)
        stack.append(key)
        for target in sorted(points_to.get(key, ()), key=position.__getitem__):
            if target not in index:
                connect(target)
                low[key] = min(low[key], low[target])
            elif target in stack:
                low[key] = min(low[key], index[target])
        if low[key] == index[key]:
            component: list[str] = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == key:
                    break
            components.append(sorted(component, key=position.__getitem__))

    for key in oldest_first:
        if key not in index:
            connect(key)
    unit_of = {key: n for n, component in enumerate(components) for key in component}
    before: dict[int, set[int]] = {n: set() for n in range(len(components))}
    for key, targets in points_to.items():
        for target in targets:
            if unit_of[target] != unit_of[key]:
                before[unit_of[target]].add(unit_of[key])
    order = _topological(range(len(components)), before, lambda n: position[components[n][0]], [])
    return [components[n] for n in order]


@dataclass(frozen=True, slots=True)
class UnitOrder:
    """The files of a unit in deletion order, and the files it could not order.

    Attributes:
        files: Every file of the unit's families, in the order they are deleted.
        cycle: Two files that point to each other (through others, maybe): one is deleted
            while the other still points to it. Empty when the order is safe.
    """

    files: tuple[str, ...]
    cycle: tuple[str, ...] = ()


def unit_order(families: Sequence[ThreadInfo], held: Iterable[tuple[str, Reference]]) -> UnitOrder:
    """The files of ``families`` (a unit) in an order safe to cut short, if there is one.

    ``held`` lists what the unit's threads point to: each reference with the file (or the
    transcript folder) holding it as ``source``, and the key of the thread that holds it.
    """
    priority: dict[str, tuple[int, int]] = {}
    of_thread: dict[str, list[str]] = {}
    for n, family in enumerate(families):
        for m, path in enumerate(deletion_order(family)):
            priority[path] = (n, m)
        for thread in family.walk():
            of_thread[thread.key] = [f.path for f in thread.files]
    before: dict[str, set[str]] = {path: set() for path in priority}

    def edge(first: Iterable[str], then: Iterable[str]) -> None:
        then = tuple(then)
        for a in first:
            for b in then:
                if a != b:
                    before[b].add(a)

    for family in families:  # what deletion_order says, as constraints
        rest = [f.path for t in family.walk() for f in t.files if not f.path.startswith(_folder(t))]
        for thread in family.walk():
            folder = _folder(thread)
            mine = [f.path for f in thread.files if f.path.startswith(folder)]
            ranks = sorted({_rank(p[len(folder) :]) for p in mine})
            layers = [[p for p in mine if _rank(p[len(folder) :]) == r] for r in ranks]
            for upper, lower in itertools.pairwise(layers):
                edge(upper, lower)
            pointing = [p for p in mine if _holds_pointers(p)]
            for child in thread.children:
                edge(pointing, (f.path for f in child.files if f.path.startswith(_folder(child))))
            edge(pointing, rest)
    for source, reference in held:
        holders = [p for p in priority if p == source or p.startswith(source.rstrip("/") + "/")]
        reached = _reached(reference, priority, of_thread)
        for holder in holders:
            # a transcript folder's files name each other (the index its segments): their
            # order is the folder's, above
            home = holder.rsplit("/", 1)[0] + "/"
            edge([holder], (p for p in reached if not p.startswith(home)))
    cycle: list[str] = []
    order = _topological(priority, before, priority.__getitem__, cycle)
    return UnitOrder(files=tuple(order), cycle=tuple(cycle))


def _reached(
    reference: Reference, files: Iterable[str], of_thread: Mapping[str, list[str]]
) -> list[str]:
    """The unit's files a reference points to: the file, what a folder holds, a thread's."""
    found: list[str] = []
    if reference.path is not None:
        for path in dict.fromkeys((reference.path, reference.path.rstrip("."))):
            prefix = path.rstrip("/") + "/"
            found.extend(f for f in files if f == path or f.startswith(prefix))
    if reference.thread_id is not None:
        found.extend(of_thread.get(reference.thread_id, ()))
    return found


def _topological(
    nodes: Iterable[T], before: Mapping[T, set[T]], priority: Callable[[T], Any], cycle: list[T]
) -> list[T]:
    """``nodes`` with each after everything in its ``before``, the lowest ``priority``
    first where free. Stuck on a cycle, takes the lowest-priority node left anyway, and
    records in ``cycle`` (if still empty) it and one node it had to wait for."""
    waiting = {node: set(before[node]) for node in nodes}
    after: dict[T, list[T]] = {node: [] for node in waiting}
    for node, wait in waiting.items():
        for first in wait:
            after[first].append(node)
    heap = [(priority(n), n) for n, wait in waiting.items() if not wait]
    heapq.heapify(heap)
    order: list[T] = []
    done: set[T] = set()
    while len(order) < len(waiting):
        if not heap:  # a cycle: take the first node left
            node = min((n for n in waiting if n not in done), key=priority)
            if not cycle:
                cycle.extend((node, min(waiting[node], key=priority)))
            waiting[node].clear()
            heap.append((priority(node), node))
        _, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        order.append(node)
        for other in after[node]:
            waiting[other].discard(node)
            if not waiting[other] and other not in done:
                heapq.heappush(heap, (priority(other), other))
    return order
