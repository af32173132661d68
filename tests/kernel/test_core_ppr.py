"""Local PPR against exact oracles: dense power iteration / linear solve and networkx."""

from __future__ import annotations

import instant_embedding as ie
import networkx as nx
import numpy as np
import pytest
from helpers import dense_adjacency, exact_ppr_matrix, random_edges


def raw_edges(name: str) -> tuple[list, list, list | None, list]:
    """``(src, dst, weights, nodes)`` of a test graph as plain lists: the input of both the
    library and the oracle (``nodes``: every external id, in id order)."""
    if name == "karate":
        G = nx.karate_club_graph()
        src, dst = map(list, zip(*G.edges()))
        return src, dst, None, list(range(34))
    if name == "random":
        src, dst = random_edges(120, 500, 3)
        return src.tolist(), dst.tolist(), None, list(range(125))  # 120..124 isolated
    G = nx.les_miserables_graph()  # weighted, string ids
    src, dst, w = zip(*G.edges(data="weight"))
    return list(src), list(dst), list(w), sorted(G.nodes)


def case(name: str) -> tuple[ie.Graph, np.ndarray, list]:
    """The library's graph and the oracle's weight matrix, both from the raw edge list."""
    src, dst, w, nodes = raw_edges(name)
    pos = {v: i for i, v in enumerate(nodes)}
    W = dense_adjacency([pos[v] for v in src], [pos[v] for v in dst], len(nodes), w)
    if isinstance(nodes[0], str):
        g = ie.Graph.from_edges(src, dst, weights=w)
    else:
        g = ie.Graph.from_edges(src, dst, weights=w, num_nodes=len(nodes))
    return g, W, nodes


def exact_ppr(W: np.ndarray, seed: int, alpha: float, variant: str) -> np.ndarray:
    return exact_ppr_matrix(W, seed, alpha, variant)[seed]


def dense_ppr(graph, node, nodes: list | None = None, **kw) -> np.ndarray:
    """``ie.ppr`` as a dense vector in the order of ``nodes`` (default: implicit ids)."""
    ids, p = ie.ppr(graph, node, **kw)
    nodes = list(range(graph.num_nodes)) if nodes is None else nodes
    pos = {v: i for i, v in enumerate(nodes)}
    out = np.zeros(len(nodes))
    out[[pos[v] for v in ids]] = p
    return out


GRAPHS = ["karate", "random", "weighted"]


@pytest.mark.parametrize("variant", ["standard", "lazy"])
@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("eps", [1e-3, 1e-4, 1e-6])
def test_error_bound_undirected(name, variant, eps):
    """|pi_j - p_j| <= eps * deg(j) for every node j (weighted: weighted degree)."""
    g, W, nodes = case(name)
    degs = W.sum(axis=1)
    for seed in [0, 5, len(nodes) - 1]:
        if degs[seed] == 0:
            continue
        pi = exact_ppr(W, seed, 0.15, variant)
        p = dense_ppr(g, nodes[seed], nodes, eps=eps, variant=variant)
        assert np.all(p <= pi + 1e-12), "push never overshoots the exact PPR"
        err = pi - p
        assert np.all(err <= eps * np.maximum(degs, 1) + 1e-12), (name, seed, err.max())
        assert p.sum() <= 1 + 1e-12


@pytest.mark.parametrize("variant", ["standard", "lazy"])
def test_converges_to_exact_with_tiny_eps(variant):
    g, W, _ = case("random")
    pi = exact_ppr(W, 4, 0.3, variant)
    p = dense_ppr(g, 4, alpha=0.3, eps=1e-12, variant=variant)
    np.testing.assert_allclose(p, pi, atol=1e-9)


def test_matches_networkx_pagerank():
    G = nx.karate_club_graph()
    g = ie.Graph.from_edges(*zip(*G.edges()), num_nodes=34)
    for seed in [0, 16, 33]:
        ref = nx.pagerank(
            G, alpha=0.85, personalization={seed: 1.0}, tol=1e-14, max_iter=10_000, weight=None
        )
        p = dense_ppr(g, seed, alpha=0.15, eps=1e-10)
        np.testing.assert_allclose(p, [ref[i] for i in range(34)], atol=1e-7)


def test_directed_and_dangling_nodes():
    # 0 -> 1 -> 2 (dangling), 0 -> 3 -> 0: mass reaching 2 restarts at the seed.
    src, dst = [0, 1, 0, 3], [1, 2, 3, 0]
    g = ie.Graph.from_edges(src, dst, directed=True)
    assert g.directed and g.degree(2) == 0
    pi = exact_ppr(dense_adjacency(src, dst, 4, directed=True), 0, 0.15, "standard")
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


def identity_case(kind: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray | None, bool]:
    """``(n, src, dst, weights, directed)``: raw edge lists with repeated edges (merged by the
    builder), self-loops, isolated nodes and, when directed, dangling nodes. Weights are
    multiples of 1/4 so their sums are exact in float32 and the oracle's weights are the file's.
    """
    rng = np.random.default_rng(
        {"undirected": 1, "weighted": 2, "directed": 3, "directed_weighted": 4}[kind]
    )
    n, m = 40, 110
    src = rng.integers(0, n - 3, m)  # the last three nodes have no out-arcs
    dst = np.where(rng.random(m) < 0.2, 0, rng.integers(0, n, m))  # node 0: a hub
    src[:4], dst[:4] = [5, 5, 7, 7], [6, 6, 7, 7]  # a repeated edge and a repeated self-loop
    w = rng.integers(1, 13, m) / 4 if "weighted" in kind else None
    return n, src, dst, w, kind.startswith("directed")


@pytest.mark.parametrize("variant", ["standard", "lazy"])
@pytest.mark.parametrize("kind", ["undirected", "weighted", "directed", "directed_weighted"])
@pytest.mark.parametrize("eps,alpha", [(3e-2, 0.15), (1e-3, 0.15), (1e-4, 0.4)])
def test_push_state_satisfies_the_exact_identity(kind, variant, eps, alpha):
    """The push keeps ``pi_s = p + r . Pi`` exactly (up to rounding), where ``Pi[u]`` is the
    exact PPR vector of ``u`` (dense solve from the raw edge list, dangling rows jumping to
    ``s``): every push moves ``alpha r_w`` into ``p_w`` and spreads the rest along ``w``'s row
    of the transition matrix. This checks the residual ``r`` (which ``value="p+r"`` embeds) and
    not only ``p``; and at the end every residual is within the termination rule
    ``r_j <= eps * max(str(j), 1)`` (SPEC §1)."""
    n, src, dst, w, directed = identity_case(kind)
    g = ie.Graph.from_edges(src, dst, num_nodes=n, weights=w, directed=directed)
    W = dense_adjacency(src, dst, n, w, directed)
    strength = W.sum(axis=1)
    assert (strength == 0).any() or not directed, "the directed case needs dangling nodes"
    for seed in [0, 5, 7, n - 1]:  # n - 1: dangling when directed, isolated otherwise
        Pi = exact_ppr_matrix(W, seed, alpha, variant)
        ids, p, r = ie.ppr(g, seed, alpha=alpha, eps=eps, variant=variant, return_residual=True)
        P, R = np.zeros(n), np.zeros(n)
        P[ids], R[ids] = p, r
        assert np.all(P >= 0) and np.all(R >= 0)
        assert np.all(R <= eps * np.maximum(strength, 1)), "a residual above its threshold"
        np.testing.assert_allclose(P + R @ Pi, Pi[seed], rtol=0, atol=1e-12)
        if not directed:
            # SPEC's guarantee for undirected graphs, from the identity: pi - p = r . Pi.
            assert np.all(Pi[seed] - P >= -1e-12)
            assert np.all(Pi[seed] - P <= eps * np.maximum(strength, 1) + 1e-12)
        # ppr() without residuals reports the same p on the nodes where it is positive.
        ids_p, p_only = ie.ppr(g, seed, alpha=alpha, eps=eps, variant=variant)
        np.testing.assert_array_equal(ids_p, np.asarray(ids)[p > 0])
        np.testing.assert_array_equal(p_only, p[p > 0])


def test_identity_cases_leave_residual_mass():
    """The identity test would say little about ``r`` if the push left none: at the largest
    eps, a good share of the mass is still residual on every case."""
    for kind in ["undirected", "weighted", "directed", "directed_weighted"]:
        n, src, dst, w, directed = identity_case(kind)
        g = ie.Graph.from_edges(src, dst, num_nodes=n, weights=w, directed=directed)
        _, _, r = ie.ppr(g, 0, eps=3e-2, return_residual=True)
        assert r.sum() > 0.05, kind


@pytest.mark.parametrize("name", ["karate", "lesmis"])
def test_node_costs_measure_each_nodes_push(name):
    """The cost sample of `info`: per node the push's own statistics (as ppr_stats reports
    one query) and the support of its PPR vector (as ppr returns it)."""
    from instant_embedding import _core

    g, _, _ = case(name)
    model = ie.InstantEmbedding(dim=16, eps=1e-3, value="log1p", smooth=1)
    idx = np.array([0, 3, g.num_nodes - 1], dtype=np.uint32)
    cost = _core.node_costs(g._native, idx, model.config)
    assert cost["seconds"].dtype == np.float64 and (cost["seconds"] > 0).all()
    for k, v in enumerate(idx.tolist()):
        stats = _core.ppr_stats(g._native, v, model.config)
        for key in ("support", "touched", "pushes", "heap_bytes"):
            assert cost[key][k] == stats[key], (v, key)
        assert cost["support"][k] == len(_core.ppr(g._native, v, model.config)[0])
    assert len(_core.node_costs(g._native, idx[:0], model.config)["touched"]) == 0
    with pytest.raises(ValueError, match="fitted linear map"):
        _core.node_costs(g._native, idx, ie.InstantEmbedding(dim=8, wide_dim=32).config)
    with pytest.raises(IndexError):
        _core.node_costs(g._native, np.array([g.num_nodes], np.uint32), model.config)
    with pytest.raises(ie.BudgetExceededError):
        tight = ie.InstantEmbedding(dim=16, eps=1e-6, max_touched=2).config
        _core.node_costs(g._native, idx, tight)
