"""What the test modules share: a query's rows, and random graphs (hypothesis strategies)."""

from __future__ import annotations

from hypothesis import strategies as st


def rows(cur, sql: str) -> list[tuple]:
    """The rows of `sql`, in the order the query gives them."""
    cur.execute(sql)
    return cur.fetchall()


def sorted_rows(cur, sql: str) -> list[tuple]:
    """The rows of `sql`, sorted: for comparing answers whose order the query leaves open."""
    return sorted(rows(cur, sql))


def edge_lists(max_node: int = 8, max_edges: int = 14) -> st.SearchStrategy[list[tuple[int, int]]]:
    """Random directed graphs on nodes 1..max_node (cycles and self-loops allowed) as lists of distinct edges."""
    node = st.integers(1, max_node)
    return st.lists(st.tuples(node, node), min_size=1, max_size=max_edges, unique=True)


@st.composite
def digraphs(
    draw: st.DrawFn, dag: bool = False, min_edges: int = 0, unique: bool = False, max_edges: int = 25
) -> tuple[int, list[tuple[int, int]]]:
    """A random directed graph as (n, edges) on nodes 0..n-1, n from 2 to 12: acyclic (every edge from a smaller node
    to a larger one) when `dag`; `unique`: no edge twice (else parallel edges may repeat)."""
    n = draw(st.integers(min_value=2, max_value=12))
    pairs = [(u, v) for u in range(n) for v in range(n) if (u < v if dag else True)]
    edges = draw(st.lists(st.sampled_from(pairs), min_size=min_edges, max_size=max_edges, unique=unique))
    return n, edges
