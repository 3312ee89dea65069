"""benchmarks/recovery_cpu.py runs and prints its figures (one trial; the figures need ten)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from .conftest import clean_env, need_torch

pytestmark = pytest.mark.slow


def test_recovery_benchmark_prints_its_figures() -> None:
    need_torch()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "recovery_cpu.py"), "--trials", "1"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    # issue 31: the example sets no monitor_interval, so the plan's variant runs torchrun's own default
    assert "plan (no --monitor_interval)" in out and "default (monitor_interval 5)" in out
    assert "floor" in out and "plan / default = " in out and "plan / floor   = " in out
    assert "fewer than 10 trials" in out
    assert "torch default (no --monitor_interval)" in out and "plan / torch default = " in out
    assert "kill " in proc.stderr and "after step 12" in proc.stderr  # the random kill phase
    assert "plan + warm workers" in out and "warm / default = " in out and "warm / plan    = " in out
    assert "new workers running their script" in out and "median phases from the timeline" in out
