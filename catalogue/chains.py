"""`on_success` chains (docs/chains.md): the walk from a recipe along the recipes its runs start
when they are fulfilled, its depth, the cycle it falls into, and its worst case summed. Pure:
the graph is a mapping of targets (`task/digest`) to the target each one names (None: no
`on_success`); a target the mapping does not hold is not in the catalogue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

# how many times one run may start the next in a row (rysh's cap): a recipe and 8 more
MAX_DEPTH = 8


@dataclass(frozen=True)
class Chain:
    """The recipes a run of `links[0]` would start in turn, as far as the walk went.

    `missing`: a target named by the last link that is not in the catalogue (the chain stops
    there); `cycle`: the targets of the loop it falls into, its first one repeated at the end
    (`a -> b -> a`); neither: it ends with a recipe that names nothing."""

    links: tuple[str, ...]
    missing: str | None = None
    cycle: tuple[str, ...] | None = None

    @property
    def depth(self) -> int:
        """How many times a run starts the next one along it (a recipe alone: 0)."""
        return len(self.links) - 1

    @property
    def too_deep(self) -> bool:
        return self.depth > MAX_DEPTH

    @property
    def text(self) -> str:
        shown = " -> ".join(self.links)
        if self.cycle:
            return f"{shown} -> {self.cycle[0]} (a cycle)"
        if self.missing:
            return f"{shown} -> {self.missing} (not in the catalogue)"
        return shown


def walk(start: str, graph: Mapping[str, str | None]) -> Chain:
    """The chain from `start` along `graph`. Every step visits a target not seen before, so the
    walk ends after at most len(graph) + 1 steps whatever the graph."""
    links = [start]
    seen = {start: 0}
    current = start
    while (following := graph.get(current)) is not None:
        if following in seen:
            return Chain(tuple(links), cycle=(*links[seen[following] :], following))
        if following not in graph:
            return Chain(tuple(links), missing=following)
        seen[following] = len(links)
        links.append(following)
        current = following
    return Chain(tuple(links))


def chain_problems(chain: Chain) -> list[str]:
    """What makes a chain an error at its first recipe's `on_success` line (expected wording of
    docs/chains.md): the recipe it names is not in the catalogue, it loops, or it is too deep."""
    problems = []
    if chain.missing is not None and len(chain.links) == 1:
        problems.append(
            f"names {chain.missing}, which is not in the catalogue (expected a recipe of the recipes "
            "repository, synced: [KIND:]NAME)"
        )
    if chain.cycle is not None:
        problems.append(
            f"the chain loops: {' -> '.join(chain.cycle)} (expected a chain that ends: remove one on_success)"
        )
    if chain.too_deep:
        problems.append(
            f"the chain is {chain.depth} links deep: {' -> '.join(chain.links)} "
            f"(expected at most {MAX_DEPTH} recipes started one after another)"
        )
    return problems


@dataclass(frozen=True)
class LinkCost:
    """One recipe of a chain and its worst case (money None: a model of it has no price)."""

    target: str
    tokens: int
    money: Decimal | None


@dataclass(frozen=True)
class ChainCost:
    links: tuple[LinkCost, ...]

    @property
    def tokens(self) -> int:
        return sum(link.tokens for link in self.links)

    @property
    def money(self) -> Decimal | None:
        costs = [link.money for link in self.links]
        return None if None in costs else sum(costs, Decimal(0))

    def through(self, index: int) -> ChainCost:
        """The chain's first `index + 1` links: what is spent up to and with that one."""
        return ChainCost(self.links[: index + 1])


def first_over(costs: Sequence[int], left: int) -> int | None:
    """The index of the first link whose running total passes `left`, or None when all fit."""
    total = 0
    for index, cost in enumerate(costs):
        total += cost
        if total > left:
            return index
    return None
