"""benchmarks/bench_accuracy.py draws each built-in kernel's pool by the kernel, not by its place in
``--kernels``: a run restricted to one kernel reproduces that kernel's row of the whole table (model
accuracy's figures in docs/models.md are quoted per kernel and seed)."""

from __future__ import annotations

import sys
from itertools import islice
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
ba = pytest.importorskip("bench_accuracy")


def test_a_kernel_alone_gets_the_pool_of_the_whole_table():
    from gpudse_core.choices import KERNELS

    whole = dict(islice(ba.kernel_pools(list(KERNELS), 40, 11), KERNELS.index("STO") + 1))  # AES … STO
    alone = dict(ba.kernel_pools(["RAY"], 40, 11))
    pair = dict(ba.kernel_pools(["STO", "AES"], 40, 11))
    assert alone["RAY"].equals(whole["RAY"])
    assert pair["STO"].equals(whole["STO"]) and pair["AES"].equals(whole["AES"])
    assert not whole["RAY"].equals(whole["AES"].assign(cycles=whole["RAY"].cycles))  # other kernels, other pools


def test_an_unknown_kernel_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown kernel.*ray.*choose from AES"):
        list(ba.kernel_pools(["ray"], 40, 11))
