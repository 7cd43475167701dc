"""The walk along on_success chains (catalogue.chains): random graphs against a plain reference."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from catalogue.chains import MAX_DEPTH, Chain, ChainCost, LinkCost, chain_problems, first_over, walk

NAMES = [f"task/r{i}" for i in range(14)]


@st.composite
def graphs(draw):
    """A catalogue of some of NAMES, each naming nothing, one of them, or a recipe not in it."""
    present = draw(st.lists(st.sampled_from(NAMES), min_size=1, unique=True))
    targets = st.one_of(st.none(), st.sampled_from(present), st.just("task/gone"))
    return {name: draw(targets) for name in present}


def reference(start, graph):
    """Follow the graph step by step for more steps than it has recipes: the path it visits."""
    path, current = [start], start
    for _ in range(len(graph) + 2):
        current = graph.get(current)
        if current is None:
            break
        path.append(current)
        if current not in graph:
            break
    return path


@given(graphs(), st.data())
def test_it_ends_on_every_graph_and_finds_the_cycle_a_plain_walk_repeats(graph, data):
    start = data.draw(st.sampled_from(sorted(graph)))
    chain = walk(start, graph)
    path = reference(start, graph)
    repeats = len(path) != len(set(path))
    assert (chain.cycle is not None) == repeats
    if chain.cycle is not None:
        first = chain.cycle[0]
        assert chain.cycle[-1] == first and first in chain.links
        assert list(chain.links) == path[: len(chain.links)]
        assert path[len(chain.links)] == first  # the next step goes back into the loop
        for a, b in zip(chain.cycle, chain.cycle[1:], strict=False):
            assert graph[a] == b
    else:
        missing = path[-1] if path[-1] not in graph else None
        assert chain.missing == missing
        assert list(chain.links) == [p for p in path if p in graph]
    assert len(set(chain.links)) == len(chain.links)  # never a link twice
    assert chain.depth == len(chain.links) - 1


@given(st.integers(min_value=0, max_value=20))
def test_it_counts_depth_as_the_starts_one_run_makes_after_another(hops):
    names = [f"task/n{i}" for i in range(hops + 1)]
    graph = {a: b for a, b in zip(names, names[1:], strict=False)} | {names[-1]: None}
    chain = walk(names[0], graph)
    assert chain.depth == hops and chain.cycle is None and chain.missing is None
    assert chain.too_deep == (hops > MAX_DEPTH)
    assert bool(chain_problems(chain)) == (hops > MAX_DEPTH)


def test_it_says_a_self_loop_and_a_two_recipe_cycle():
    assert walk("task/a", {"task/a": "task/a"}).cycle == ("task/a", "task/a")
    chain = walk("task/a", {"task/a": "task/b", "task/b": "task/a"})
    assert chain.cycle == ("task/a", "task/b", "task/a")
    assert chain.text == "task/a -> task/b -> task/a (a cycle)"
    (problem,) = chain_problems(chain)
    assert "the chain loops: task/a -> task/b -> task/a" in problem


def test_only_a_missing_first_link_is_the_recipes_own_error():
    assert "task/x, which is not in the catalogue" in chain_problems(walk("task/a", {"task/a": "task/x"}))[0]
    later = walk("task/a", {"task/a": "task/b", "task/b": "task/x"})
    assert later.missing == "task/x" and chain_problems(later) == []  # task/b's own check says it


def test_nine_hops_is_too_deep_and_names_the_depth():
    names = [f"task/n{i}" for i in range(10)]
    graph = {a: b for a, b in zip(names, names[1:], strict=False)} | {names[-1]: None}
    (problem,) = chain_problems(walk(names[0], graph))
    assert "9 links deep" in problem and "at most 8" in problem


@given(st.lists(st.integers(min_value=0, max_value=1000), max_size=10), st.integers(min_value=0, max_value=3000))
def test_first_over_is_where_the_running_total_first_passes_what_is_left(costs, left):
    index = first_over(costs, left)
    totals = [sum(costs[: i + 1]) for i in range(len(costs))]
    if index is None:
        assert all(t <= left for t in totals)
    else:
        assert totals[index] > left and all(t <= left for t in totals[:index])


def test_a_chains_cost_sums_its_links_and_has_no_money_when_one_has_no_price():
    cost = ChainCost((LinkCost("task/a", 10, Decimal("0.5")), LinkCost("task/b", 5, Decimal("0.25"))))
    assert (cost.tokens, cost.money) == (15, Decimal("0.75"))
    assert cost.through(0).tokens == 10
    assert ChainCost((LinkCost("task/a", 1, None), LinkCost("task/b", 1, Decimal(1)))).money is None
    assert Chain(("task/a",)).text == "task/a"


def test_fill_chain_fills_every_prompt_and_leaves_other_placeholders():
    from catalogue.recipe import fill_chain, parse_recipe, unfilled_placeholders

    text = (
        "---\nargs: [topic]\nloop:\n  do:\n    budget:\n      size: 1b\n      watch:\n"
        "        takeover_prompt: Save {{previous_run}}.\n  while:\n    prompts:\n"
        "      until: digest of {{previous_results_dir}} exists\n      iterate_with: again {{previous_run}}\n"
        "---\nRead {{ previous_results_dir }}/a.md about {{topic}}.\n"
    )
    spec = parse_recipe(text, path="b.md", kind="task")
    assert unfilled_placeholders(spec, ["owls"]) == []
    filled = fill_chain(spec, results_dir="/r/tasks/a/results", run="12")
    assert filled.prompt == "Read /r/tasks/a/results/a.md about {{topic}}."
    assert filled.do.takeover_prompt == "Save 12."
    assert filled.loop_while.until == "digest of /r/tasks/a/results exists"
    assert filled.loop_while.iterate_with == "again 12"
    assert fill_chain(spec, results_dir="", run="").prompt == "Read /a.md about {{topic}}."
