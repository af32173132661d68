"""Local PPR against exact oracles: dense power iteration / linear solve and networkx."""

from __future__ import annotations

import instant_embedding as ie
import networkx as nx
import numpy as np
import pytest
from conftest import random_edges


def transition(graph: ie.Graph, seed: int) -> np.ndarray:
    """Row-stochastic P over internal indices; dangling rows jump to the seed."""
    n = graph.num_nodes
    P = np.zeros((n, n))
    for v in range(n):
        nb, w = graph._g.neighbors(v)
        if len(nb) == 0:
            P[v, seed] = 1.0
            continue
        w = np.ones(len(nb)) if w is None else w.astype(np.float64)
        P[v, nb] = w / w.sum()
    return P


def exact_ppr(graph: ie.Graph, seed: int, alpha: float, variant: str) -> np.ndarray:
    n = graph.num_nodes
    P = transition(graph, seed)
    if variant == "lazy":
        P = 0.5 * (np.eye(n) + P)
    e = np.zeros(n)
    e[seed] = 1.0
    # pi = alpha e + (1 - alpha) pi P   <=>   pi (I - (1-alpha) P) = alpha e
    return np.linalg.solve((np.eye(n) - (1 - alpha) * P).T, alpha * e)


def dense_ppr(graph, node, **kw) -> np.ndarray:
    ids, p = ie.ppr(graph, node, **kw)
    out = np.zeros(graph.num_nodes)
    out[graph.index(ids)] = p
    return out


GRAPHS = {
    "karate": lambda: ie.datasets.karate(),
    "random": lambda: ie.Graph.from_edges(*random_edges(120, 500, 3), num_nodes=125),
    "weighted": lambda: ie.datasets.lesmis(),
}


@pytest.mark.parametrize("variant", ["standard", "lazy"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("eps", [1e-3, 1e-4, 1e-6])
def test_error_bound_undirected(name, variant, eps):
    """|pi_j - p_j| <= eps * deg(j) for every node j (weighted: weighted degree)."""
    g = GRAPHS[name]()
    degs = np.array([g._g.strength(v) for v in range(g.num_nodes)])
    for seed in [0, 5, g.num_nodes - 1]:
        if degs[seed] == 0:
            continue
        pi = exact_ppr(g, seed, 0.15, variant)
        p = dense_ppr(g, g.ids([seed])[0], eps=eps, variant=variant)
        assert np.all(p <= pi + 1e-12), "push never overshoots the exact PPR"
        err = pi - p
        assert np.all(err <= eps * np.maximum(degs, 1) + 1e-12), (name, seed, err.max())
        assert p.sum() <= 1 + 1e-12


@pytest.mark.parametrize("variant", ["standard", "lazy"])
def test_converges_to_exact_with_tiny_eps(variant):
    g = GRAPHS["random"]()
    pi = exact_ppr(g, 4, 0.3, variant)
    p = dense_ppr(g, 4, alpha=0.3, eps=1e-12, variant=variant)
    np.testing.assert_allclose(p, pi, atol=1e-9)


def test_matches_networkx_pagerank():
    G = nx.karate_club_graph()
    g = ie.Graph.from_edges(*zip(*G.edges()), num_nodes=34)
    for seed in [0, 16, 33]:
        ref = nx.pagerank(G, alpha=0.85, personalization={seed: 1.0}, tol=1e-14, max_iter=10_000,
                          weight=None)
        p = dense_ppr(g, seed, alpha=0.15, eps=1e-10)
        np.testing.assert_allclose(p, [ref[i] for i in range(34)], atol=1e-7)


def test_directed_and_dangling_nodes():
    # 0 -> 1 -> 2 (dangling), 0 -> 3 -> 0: mass reaching 2 restarts at the seed.
    g = ie.Graph.from_edges([0, 1, 0, 3], [1, 2, 3, 0], directed=True)
    assert g.directed and g.degree(2) == 0
    pi = exact_ppr(g, 0, 0.15, "standard")
    p = dense_ppr(g, 0, eps=1e-12)
    np.testing.assert_allclose(p, pi, atol=1e-9)
    G = nx.DiGraph([(0, 1), (1, 2), (0, 3), (3, 0)])
    ref = nx.pagerank(G, alpha=0.85, personalization={0: 1}, tol=1e-14, max_iter=10_000)
    np.testing.assert_allclose(p, [ref[i] for i in range(4)], atol=1e-8)


def test_weighted_matches_networkx():
    G = nx.les_miserables_graph()
    g = ie.datasets.lesmis()
    ref = nx.pagerank(G, alpha=0.85, personalization={"Valjean": 1}, tol=1e-14, max_iter=10_000)
    ids, p = ie.ppr(g, "Valjean", eps=1e-11)
    got = dict(zip(ids, p))
    for k, v in ref.items():
        assert abs(got.get(k, 0.0) - v) < 1e-8, k


def test_output_sorted_and_local():
    # Two components: the push never leaves the seed's component.
    g = ie.Graph.from_edges([10, 11, 12, 50, 51], [11, 12, 10, 51, 52])
    ids, p = ie.ppr(g, 10, eps=1e-8)
    assert list(ids) == [10, 11, 12]
    assert np.all(np.diff(ids) > 0) and np.all(p > 0)
    ids, p = ie.ppr(ie.datasets.lesmis(), "Valjean", eps=1e-4)
    assert ids == sorted(ids)


def test_isolated_seed_keeps_its_mass():
    g = ie.Graph.from_edges([0], [1], num_nodes=3)
    ids, p = ie.ppr(g, 2, alpha=0.15, eps=1e-9)
    assert list(ids) == [2]
    assert p[0] == pytest.approx(1.0, abs=1e-8)


def test_seed_above_threshold_is_not_pushed():
    # eps * deg(seed) >= 1: the ACL condition never fires; documented empty result.
    g = ie.Graph.from_edges([0, 0, 0], [1, 2, 3])
    ids, p = ie.ppr(g, 0, eps=0.5)
    assert len(ids) == 0 and len(p) == 0


def test_budget_exceeded():
    g = ie.Graph.from_edges(*random_edges(2000, 20000, 1), num_nodes=2000)
    with pytest.raises(ie.BudgetExceededError, match="max_touched"):
        ie.ppr(g, 0, eps=1e-9, max_touched=10)


@pytest.mark.parametrize("variant", ["standard", "lazy"])
def test_residuals_are_below_thresholds_and_mass_is_conserved(variant):
    g = GRAPHS["random"]()
    eps = 1e-4
    ids, p, r = ie.ppr(g, 3, eps=eps, variant=variant, return_residual=True)
    degs = np.array([g.degree(int(v)) for v in ids])
    assert np.all(r <= eps * np.maximum(degs, 1) + 1e-18)
    assert np.all(r >= 0) and np.all(p >= 0)
    # Every push moves alpha * r into p and keeps the rest as residual: p + r sums to <= 1 and
    # the gap is exactly the mass still "in flight" (zero for standard pushes on a simple graph).
    assert p.sum() + r.sum() <= 1 + 1e-12
    ids_p, p_only = ie.ppr(g, 3, eps=eps, variant=variant)
    np.testing.assert_array_equal(ids_p, ids[p > 0])
    np.testing.assert_array_equal(p_only, p[p > 0])
