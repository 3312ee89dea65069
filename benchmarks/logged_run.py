"""One helper for the benchmark scripts: run a command with its output in a log file, time it,
and stop the benchmark with the log's path when the command fails."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List


def timed_run(argv: List[str], cwd: Path, env: Dict[str, str], log: Path, what: str) -> float:
    """Seconds ``argv`` took; exits naming ``what`` and ``log`` when it fails."""
    start = time.monotonic()
    with open(log, "w") as handle:
        proc = subprocess.run(argv, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT, check=False)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit("%s failed (rc %d), see %s" % (what, proc.returncode, log))
    return elapsed
