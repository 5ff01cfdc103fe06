"""Plain-Python / networkx reference implementations for the recursive-query tests.

Nothing here imports recsql: every function computes its answer independently (networkx algorithms, closed
formulas, or a naive fixpoint loop written directly from the definition), so a test that compares recsql with
these functions compares two independent implementations.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from pathlib import Path

import networkx as nx

TOLERANCE = 1e-6


# ----------------------------------------------------------------------------------------------------------------
# reading files and comparing results


def parse_number(text: str) -> int | float:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def read_rows(path: Path) -> list[tuple]:
    """Rows of a headerless CSV whose fields are separated by `,` or `, `; every field is a number."""
    rows = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        rows.append(tuple(parse_number(field) for field in line.split(",")))
    return rows


def _as_number(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    return float(value)  # Decimal, numpy scalars


def _close(a, b, tol: float) -> bool:
    a, b = _as_number(a), _as_number(b)
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=0.0, abs_tol=tol) or math.isclose(
        float(a), float(b), rel_tol=tol, abs_tol=0.0
    )


def _dedupe(rows: Iterable[Sequence], tol: float) -> list[tuple]:
    unique: list[tuple] = []
    for row in rows:
        row = tuple(row)
        if not any(len(row) == len(u) and all(_close(a, b, tol) for a, b in zip(row, u)) for u in unique):
            unique.append(row)
    return unique


def row_set_difference(actual: Iterable[Sequence], expected: Iterable[Sequence], tol: float = TOLERANCE):
    """Compare two collections of rows as sets, numbers within `tol`.

    Returns (missing, unexpected): expected rows with no match in actual, and actual rows with no match in
    expected. Both empty means the sets are equal.
    """
    actual_rows = _dedupe(actual, tol)
    expected_rows = _dedupe(expected, tol)
    unmatched_actual = list(actual_rows)
    missing = []
    for exp in expected_rows:
        for i, act in enumerate(unmatched_actual):
            if len(act) == len(exp) and all(_close(a, e, tol) for a, e in zip(act, exp)):
                del unmatched_actual[i]
                break
        else:
            missing.append(exp)
    return sorted(missing), sorted(unmatched_actual, key=lambda r: tuple(float(_as_number(v)) for v in r))


def assert_same_rows(actual, expected, tol: float = TOLERANCE, context: str = "") -> None:
    """Assert that two row collections are equal as sets (numbers within `tol`)."""
    actual = list(actual)
    expected = list(expected)
    missing, unexpected = row_set_difference(actual, expected, tol)
    if missing or unexpected:
        raise AssertionError(
            f"{context}\nresult differs from the reference as a set of rows:\n"
            f"  missing ({len(missing)}): {missing[:20]}\n"
            f"  unexpected ({len(unexpected)}): {unexpected[:20]}\n"
            f"  got {len(actual)} rows, expected {len(expected)}"
        )


# ----------------------------------------------------------------------------------------------------------------
# graphs


def transitive_closure(edges: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """Pairs (x, y) with a path of one or more edges from x to y (networkx)."""
    graph = nx.DiGraph()
    graph.add_edges_from(edges)
    return set(nx.transitive_closure(graph, reflexive=False).edges())


def reachable_from(edges: Iterable[tuple[int, int]], source: int) -> set[int]:
    """The source and every node reachable from it."""
    graph = nx.DiGraph()
    graph.add_node(source)
    graph.add_edges_from(edges)
    return {source} | nx.descendants(graph, source)


def weighted_digraph(edges: Iterable[tuple[int, int, float]]) -> nx.DiGraph:
    """A DiGraph keeping the smallest weight of parallel edges."""
    graph = nx.DiGraph()
    for u, v, w in edges:
        if graph.has_edge(u, v):
            graph[u][v]["weight"] = min(graph[u][v]["weight"], w)
        else:
            graph.add_edge(u, v, weight=w)
    return graph


def single_source_shortest(edges: Iterable[tuple[int, int, float]], source: int) -> dict[int, float]:
    """Dijkstra distances from `source` (the source itself at distance 0)."""
    graph = weighted_digraph(edges)
    graph.add_node(source)
    return dict(nx.single_source_dijkstra_path_length(graph, source))


def all_pairs_shortest_nonempty(edges: Iterable[tuple[int, int, float]]) -> dict[tuple[int, int], float]:
    """Cost of the cheapest path of at least one edge for every connected pair (x -> x only via a cycle)."""
    graph = weighted_digraph(edges)
    dist = dict(nx.all_pairs_dijkstra_path_length(graph))
    best: dict[tuple[int, int], float] = {}
    for u, v, data in graph.edges(data=True):
        for target, d in dist[v].items():
            cost = data["weight"] + d
            if (u, target) not in best or cost < best[(u, target)]:
                best[(u, target)] = cost
    return best


def min_label_components(edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Undirected connected components; each node labelled with the smallest node of its component."""
    graph = nx.Graph()
    graph.add_edges_from(edges)
    label = {}
    for component in nx.connected_components(graph):
        smallest = min(component)
        for node in component:
            label[node] = smallest
    return label


def dag_path_counts(edges: Iterable[tuple[int, int]], source: int) -> dict[int, int]:
    """Number of distinct paths from `source` to each node reachable from it (the empty path counts for the
    source itself), enumerated with networkx (every path of a DAG is simple)."""
    graph = nx.DiGraph()
    graph.add_node(source)
    graph.add_edges_from(edges)
    assert nx.is_directed_acyclic_graph(graph)
    counts = {source: 1}
    for target in nx.descendants(graph, source):
        counts[target] = sum(1 for _ in nx.all_simple_paths(graph, source, target))
    return counts


def dag_path_counts_dp(edges: Iterable[tuple[int, int]], source: int) -> dict[int, int]:
    """Same as dag_path_counts, by dynamic programming in topological order (for larger random DAGs)."""
    graph = nx.DiGraph()
    graph.add_node(source)
    graph.add_edges_from(edges)
    order = list(nx.topological_sort(graph))
    counts: dict[int, int] = defaultdict(int)
    counts[source] = 1
    for node in order:
        if counts[node]:
            for succ in graph.successors(node):
                counts[succ] += counts[node]
    return {node: c for node, c in counts.items() if c}


def all_pairs_path_counts(edges: Iterable[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """Number of paths of one or more edges between every connected pair of a DAG."""
    graph = nx.DiGraph()
    graph.add_edges_from(edges)
    assert nx.is_directed_acyclic_graph(graph)
    result = {}
    for source in graph.nodes:
        for target in nx.descendants(graph, source):
            result[(source, target)] = sum(1 for _ in nx.all_simple_paths(graph, source, target))
    return result


def parity_reach(edges: Iterable[tuple[int, int]]) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(even, odd): pairs joined by a walk of even length >= 2, resp. odd length >= 1 (BFS over (node, parity))."""
    succ = defaultdict(set)
    nodes = set()
    for u, v in edges:
        succ[u].add(v)
        nodes.update((u, v))
    even, odd = set(), set()
    for start in nodes:
        seen = set()
        queue = deque()
        for v in succ[start]:
            if (v, 1) not in seen:
                seen.add((v, 1))
                queue.append((v, 1))
        while queue:
            node, parity = queue.popleft()
            for v in succ[node]:
                state = (v, 1 - parity)
                if state not in seen:
                    seen.add(state)
                    queue.append(state)
        for node, parity in seen:
            (odd if parity else even).add((start, node))
    return even, odd


# ----------------------------------------------------------------------------------------------------------------
# hierarchies


def head_counts(report: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Org chart given as (mgr, emp) rows of a forest: for every manager the number of people below them, plus
    one when the manager is themself an employee of someone (the base row `SELECT emp, 1`)."""
    tree = nx.DiGraph()
    tree.add_edges_from(report)
    result = {}
    for node in tree.nodes:
        below = len(nx.descendants(tree, node))
        own = 1 if tree.in_degree(node) > 0 else 0
        if below + own:
            result[node] = below + own
    return result


def mlm_bonus(sales: dict[int, float], sponsor: Iterable[tuple[int, int]], rate=0.1, share=0.5) -> dict[int, float]:
    """Bonus roll-up on a sponsorship forest (m1 sponsors m2): a member's bonus is rate * own sales plus
    share * the bonus of each sponsored member; in closed form, the sum over the member's subtree of
    rate * sales(d) * share ** depth(d below member)."""
    tree = nx.DiGraph()
    tree.add_nodes_from(sales)
    tree.add_edges_from(sponsor)
    result = {}
    for member in tree.nodes:
        depths = nx.single_source_shortest_path_length(tree, member)
        contributions = [rate * sales[d] * share**k for d, k in depths.items() if d in sales]
        if contributions:
            result[member] = sum(contributions)
    return result


def bom_max_days(assbl: Iterable[tuple[int, int]], basic: dict[int, int]) -> dict[int, int]:
    """Delivery time of a part: the largest `days` of any basic part in it (itself or below it)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(basic)
    graph.add_edges_from(assbl)
    result = {}
    for part in graph.nodes:
        below = ({part} | nx.descendants(graph, part)) & set(basic)
        if below:
            result[part] = max(basic[b] for b in below)
    return result


def same_generation_tree(rel: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """Same generation on a forest of (parent, child) rows: two distinct nodes of one tree at the same depth >= 1."""
    forest = nx.DiGraph()
    forest.add_edges_from(rel)
    roots = [n for n in forest.nodes if forest.in_degree(n) == 0]
    level = defaultdict(list)  # (root, depth) -> nodes
    for root in roots:
        for node, depth in nx.single_source_shortest_path_length(forest, root).items():
            if depth >= 1:
                level[(root, depth)].append(node)
    return {(x, y) for nodes in level.values() for x in nodes for y in nodes if x != y}


def same_generation_naive(rel: Iterable[tuple[int, int]], transitive: bool = False) -> set[tuple[int, int]]:
    """Naive fixpoint of
         sg(x, y) :- rel(p, x), rel(p, y), x != y.
         sg(x, y) :- rel(p, x), sg(p, q), rel(q, y).
         sg(x, y) :- sg(x, z), sg(z, y).          (only when `transitive`)
    re-evaluating every rule on the whole relation until nothing changes."""
    rel = set(rel)
    children = defaultdict(set)
    for p, c in rel:
        children[p].add(c)
    sg = {(x, y) for p in children for x in children[p] for y in children[p] if x != y}
    while True:
        new = set(sg)
        for p, q in sg:
            for x in children[p]:
                for y in children[q]:
                    new.add((x, y))
        if transitive:
            by_first = defaultdict(set)
            for a, b in sg:
                by_first[a].add(b)
            for x, z in sg:
                for y in by_first[z]:
                    new.add((x, y))
        if new == sg:
            return sg
        sg = new


# ----------------------------------------------------------------------------------------------------------------
# mutual recursion


def attend(organizers: Iterable[int], friend: Iterable[tuple[int, int]], k: int) -> tuple[set[int], dict[int, int]]:
    """People attending: organizers, plus anyone with at least k attending people who list them as a friend
    (friend(x, y): x is a friend of y). Returns (attendees, number of attending friends per person)."""
    friend = set(friend)
    attending = set(organizers)
    while True:
        coming = defaultdict(int)
        for x, y in friend:
            if x in attending:
                coming[y] += 1
        new = attending | {y for y, n in coming.items() if n >= k}
        if new == attending:
            return attending, dict(coming)
        attending = new


def company_control(
    shares: Iterable[tuple[int, int, float]],
) -> tuple[set[tuple[int, int]], dict[tuple[int, int], float]]:
    """Company control (Mumick, Pirahesh, Ramakrishnan; Ross and Sagiv): x controls y (x != y) when the shares
    of y owned by x directly plus the shares of y owned directly by companies x controls exceed 0.5.

    Least fixpoint by iterating from "nobody controls anyone". Returns (controls, total share of y held by x
    and the companies x controls, for every controlled pair)."""
    own = defaultdict(float)
    for x, y, p in shares:
        own[(x, y)] += p
    held_by = defaultdict(dict)  # company -> {owned company: share}
    for (x, y), p in own.items():
        held_by[x][y] = p
    controls: set[tuple[int, int]] = set()
    while True:
        total = defaultdict(float)
        for (x, y), p in own.items():
            total[(x, y)] += p
        for x, y in controls:
            for z, p in held_by[y].items():
                total[(x, z)] += p
        new = {(x, z) for (x, z), t in total.items() if t > 0.5 and x != z}
        if new == controls:
            return controls, {pair: total[pair] for pair in controls}
        controls = new


def company_control_transitive_shares(
    shares: Iterable[tuple[int, int, float]], max_rounds: int = 1000
) -> tuple[set[tuple[int, int]], dict[tuple[int, int], float]]:
    """The formulation of the RaSQL paper, evaluated naively:
         cshares(x, z) = own(x, z) + sum over y with bought(x, y) of cshares(y, z)
         bought(x, y)  = cshares(x, y) > 0.5 and x != y
    Here a controlled company's *accumulated* shares are added (not only its own), so a share reachable through
    two chains of control is counted twice. Returns (bought, cshares for every pair with a value)."""
    own = defaultdict(float)
    for x, y, p in shares:
        own[(x, y)] += p
    cshares = dict(own)
    bought: set[tuple[int, int]] = set()
    for _ in range(max_rounds):
        by_holder = defaultdict(dict)
        for (y, z), v in cshares.items():
            by_holder[y][z] = v
        new_cshares = defaultdict(float)
        for pair, p in own.items():
            new_cshares[pair] += p
        for x, y in bought:
            for z, v in by_holder[y].items():
                new_cshares[(x, z)] += v
        new_bought = {(x, z) for (x, z), v in new_cshares.items() if v > 0.5 and x != z}
        stable = (
            new_bought == bought
            and set(new_cshares) == set(cshares)
            and all(math.isclose(new_cshares[k], cshares[k], abs_tol=1e-12) for k in cshares)
        )
        cshares, bought = dict(new_cshares), new_bought
        if stable:
            return bought, cshares
    raise RuntimeError("company_control_transitive_shares did not converge (cyclic ownership?)")


# ----------------------------------------------------------------------------------------------------------------
# intervals


def coalesce_intervals(intervals: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """Merge overlapping or touching closed intervals."""
    merged: list[list[int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return {(s, e) for s, e in merged}
