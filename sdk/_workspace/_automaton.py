"""A character automaton that matches in time linear in the text, for glob patterns.

:mod:`ctxfs._workspace._glob` compiles a pattern into a small nondeterministic automaton: nodes that
consume one character, forks, a look-ahead "the next character is not a dot" (the rule for
hidden names), and one accepting node. It runs as a DFA built lazily: each set of active nodes
becomes one state the first time it is reached, and each (state, character) step is computed
once and remembered. Nothing backtracks, so ``*a*a*a*a*a*a*a*b`` against a long name costs
what ``*`` costs: one step per character, a dictionary lookup once the step is known.

The remembered steps belong to one automaton (one compiled pattern); they are forgotten when
there are more than :data:`MAX_CACHED_STEPS`, so memory stays bounded whatever is matched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Final

__all__ = ["MAX_CACHED_STEPS", "UNSET", "Automaton", "CharTest"]

MAX_CACHED_STEPS: Final = 50_000
"""Most remembered (state, character) steps of one automaton before they are forgotten."""

CharTest = Callable[[str], bool]
"""Whether one character may be consumed."""

_CHAR: Final = 0
_FORK: Final = 1
_NO_DOT: Final = 2
_ACCEPT: Final = 3
_UNSET: Final = -1


class Automaton:
    """A nondeterministic automaton over characters, run as a lazily built DFA.

    Build it node by node, each new node pointing at nodes built before it (a loop is a
    :meth:`fork` whose first branch is set later with :meth:`patch`), then name the nodes a
    match may begin at with :meth:`start`. Node numbers are only meaningful to the automaton
    that returned them.
    """

    def __init__(self) -> None:
        self._kind: list[int] = []
        self._test: list[CharTest | None] = []
        self._next: list[int] = []
        self._other: list[int] = []
        self._starts: frozenset[int] = frozenset()
        self._reset()

    # -- building ---------------------------------------------------------------------------

    def _add(self, kind: int, test: CharTest | None, next_node: int, other: int) -> int:
        self._kind.append(kind)
        self._test.append(test)
        self._next.append(next_node)
        self._other.append(other)
        return len(self._kind) - 1

    def accept(self) -> int:
        """A node where a match succeeds if the text ends there."""
        return self._add(_ACCEPT, None, _UNSET, _UNSET)

    def char(self, test: CharTest, next_node: int) -> int:
        """A node that consumes one character passing ``test``, then goes to ``next_node``."""
        return self._add(_CHAR, test, next_node, _UNSET)

    def fork(self, first: int, second: int) -> int:
        """A node that goes on to both ``first`` and ``second`` without consuming anything.

        Either may be :data:`UNSET` for now, to be set with :meth:`patch` or
        :meth:`patch_second` (a loop back).
        """
        return self._add(_FORK, None, first, second)

    def no_dot(self, next_node: int) -> int:
        """A node that goes on to ``next_node`` unless the next character is ``.``."""
        return self._add(_NO_DOT, None, next_node, _UNSET)

    def patch(self, fork: int, first: int) -> None:
        """Set the first branch of a :meth:`fork` built with ``first=UNSET``."""
        self._next[fork] = first

    def patch_second(self, fork: int, second: int) -> None:
        """Set the second branch of a :meth:`fork` built with ``second=UNSET``."""
        self._other[fork] = second

    def start(self, nodes: Iterable[int]) -> None:
        """The nodes a match begins at (one per alternative of the pattern)."""
        self._starts = frozenset(nodes)
        self._reset()

    @property
    def size(self) -> int:
        """How many nodes the automaton has."""
        return len(self._kind)

    # -- running ----------------------------------------------------------------------------

    def _reset(self) -> None:
        self._ids: dict[frozenset[int], int] = {}
        self._sets: list[frozenset[int]] = []
        self._steps: dict[tuple[int, str], int] = {}
        self._accepting: dict[int, bool] = {}
        self._start_id = self._state(self._starts)
        self._dead = self._state(frozenset())

    def _state(self, nodes: frozenset[int]) -> int:
        known = self._ids.get(nodes)
        if known is None:
            known = self._ids[nodes] = len(self._sets)
            self._sets.append(nodes)
        return known

    def _closure(self, nodes: frozenset[int], ahead: str | None) -> tuple[list[int], bool]:
        """The consuming nodes reachable without consuming, given the next character, and
        whether an accepting node is among the reachable ones."""
        kind, nxt, other = self._kind, self._next, self._other
        seen: set[int] = set()
        stack = list(nodes)
        consuming: list[int] = []
        accepts = False
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            what = kind[node]
            if what == _CHAR:
                consuming.append(node)
            elif what == _FORK:
                stack.append(nxt[node])
                stack.append(other[node])
            elif what == _NO_DOT:
                if ahead != ".":
                    stack.append(nxt[node])
            else:
                accepts = True
        return consuming, accepts

    def _step(self, state: int, ch: str) -> int:
        consuming, _ = self._closure(self._sets[state], ch)
        tests, nxt = self._test, self._next
        reached = frozenset(
            nxt[node] for node in consuming if (test := tests[node]) is not None and test(ch)
        )
        target = self._state(reached)
        self._steps[(state, ch)] = target
        return target

    def _accepts(self, state: int) -> bool:
        known = self._accepting.get(state)
        if known is None:
            known = self._accepting[state] = self._closure(self._sets[state], None)[1]
        return known

    def matches(self, text: str, deadline: float | None = None) -> bool:
        """Whether the whole of ``text`` is matched, from a start node to an accepting one.

        Args:
            text: The text.
            deadline: A :func:`time.monotonic` time after which no new step is worked out.
                A step once known costs a lookup; working one out costs up to the size of
                the automaton, which a pattern of many alternatives makes large.

        Raises:
            TimeoutError: The deadline passed.
        """
        if len(self._steps) > MAX_CACHED_STEPS:
            self._reset()
        steps, dead = self._steps, self._dead
        state = self._start_id
        for ch in text:
            target = steps.get((state, ch))
            if target is None:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError("matching ran past its deadline")
                target = self._step(state, ch)
            state = target
            if state == dead:
                return False
        return self._accepts(state)


UNSET: Final = _UNSET
"""The placeholder branch of a :meth:`Automaton.fork` that :meth:`Automaton.patch` sets."""
