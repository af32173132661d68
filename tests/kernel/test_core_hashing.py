"""The signed hash is a frozen public contract: golden values from the spec."""

from __future__ import annotations

import pytest
from helpers import bucket, fnv1a64, splitmix64
from instant_embedding import _core

GOLDEN = [
    ((0, 0, 512), (334, -1)),
    ((1, 0, 512), (17, +1)),
    ((2, 0, 512), (431, -1)),
    ((12345, 0, 512), (244, -1)),
    ((0, 1, 512), (188, +1)),
    ((7, 42, 128), (11, +1)),
    ((2**64 - 1, 0, 512), (91, +1)),  # -1 as u64
    ((2**40 + 3, 7, 2048), (1641, +1)),
]


@pytest.mark.parametrize(("args", "expected"), GOLDEN)
def test_golden_buckets(args, expected):
    assert _core.hash_bucket(*args) == expected
    assert bucket(*args) == expected  # the spec's formula, written independently


def test_splitmix_and_fnv_golden():
    assert _core.splitmix64(0) == 0xE220A8397B1DCDAF == splitmix64(0)
    assert _core.fnv1a64(b"alice") == 0x508B2ABB65A03907 == fnv1a64(b"alice")
    assert _core.hash_bucket(_core.fnv1a64(b"alice"), 0, 512) == (26, -1)


def test_reference_matches_core_on_many_keys():
    for key in list(range(200)) + [2**63, 2**64 - 2, 123456789123]:
        for seed, d in [(0, 512), (3, 7), (2**64 - 1, 1), (11, 2048)]:
            assert _core.hash_bucket(key, seed, d) == bucket(key, seed, d)
