"""The numba reference implementation (``benches/numba_ref.py``, the in-process peer of the
speed benchmark) agrees bit for bit with the Rust kernel.

The reference is written independently from docs/SPEC.md (its own push loop, queue, hash and
fixed-point projection), so agreement on every node, both variants, both projected values,
both output scales (``normalize``), int and int64 ids, undirected and directed graphs
(dangling nodes) checks the kernel against a second implementation, and keeps the
benchmark's peer honest. Needs ``numba`` (CI installs it; ``pip install -r
benches/requirements.txt``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import instant_embedding as ie
import numpy as np
import pytest
from helpers import random_edges

pytest.importorskip("numba")
# Appended, not prepended: benches/distributed.py must not shadow the `distributed` package in
# the worker processes other test modules start (they inherit sys.path).
sys.path.append(str(Path(__file__).resolve().parents[2] / "benches"))
import _common  # noqa: E402
import numba_ref  # noqa: E402


def _graphs() -> dict[str, ie.Graph]:
    src, dst = random_edges(400, 1600, seed=21)
    dst = np.where(np.arange(len(dst)) % 5 == 0, 0, dst)  # a hub
    return {
        "undirected": ie.Graph.from_edges(src, dst, num_nodes=410),  # 400..409 isolated
        "directed": ie.Graph.from_edges(src, dst, num_nodes=400, directed=True),
        "int64": ie.Graph.from_edges(src * 7919 - 10**12, dst * 7919 - 10**12),
    }


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("numba")
    out = {}
    for name, g in _graphs().items():
        out[name] = d / f"{name}.graph"
        g.save(out[name])
    return out


@pytest.mark.parametrize("name", ["undirected", "directed", "int64"])
@pytest.mark.parametrize("variant", ["standard", "lazy"])
@pytest.mark.parametrize(
    "value,normalize", [("p+r", "ln_n"), ("p", "ln_n"), ("p+r", "none"), ("p", "none")]
)
def test_numba_reference_is_bit_identical(saved, name, variant, value, normalize):
    g = ie.Graph.open(saved[name])
    if name == "directed":
        assert (g.degrees() == 0).any(), "the directed case needs dangling nodes"
    ref = numba_ref.NumbaRef(_common.read_csr(saved[name]))
    dim, alpha, eps, seed = 64, 0.2, 1e-4, 12345
    nodes = np.arange(g.num_nodes, dtype=np.uint32)
    theirs = ref.embed(
        nodes,
        dim,
        alpha=alpha,
        eps=eps,
        seed=seed,
        lazy=variant == "lazy",
        value=value,
        normalize=normalize,
    )
    model = ie.InstantEmbedding(
        dim, alpha=alpha, eps=eps, seed=seed, variant=variant, value=value, normalize=normalize
    )
    ours = model.embed_all(g)
    assert np.count_nonzero(ours) > 0
    assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32))
    everything = ref.embed_all(
        dim,
        alpha=alpha,
        eps=eps,
        seed=seed,
        lazy=variant == "lazy",
        threads=2,
        value=value,
        normalize=normalize,
    )
    assert np.array_equal(ours.view(np.uint32), everything.view(np.uint32))
