"""README's "Launch training" runs as written (issue 24: its first command failed on every shipped
example without saying what to place where): each line from the checkout's root, with the exit code
its comment gives."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from typing import List, Tuple

from conftest import ROOT


def launch_lines() -> List[Tuple[List[str], int]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Launch training") :]
    block = section[section.index("```sh\n") + 6 : section.index("```", section.index("```sh\n") + 6)]
    out = []
    for line in block.strip().splitlines():
        command, _, comment = line.partition("   # ")
        code = re.match(r"exit (\d+)", comment)
        assert code, "README's line %r gives no exit code in its comment" % line
        out.append((shlex.split(command), int(code.group(1))))
    return out


def test_the_launch_section_runs_as_written() -> None:
    lines = launch_lines()
    assert [argv[:2] for argv, _ in lines][:3] == [
        ["resumable", "image"],
        ["resumable", "launch"],
        ["resumable", "doctor"],
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("RANK", "MASTER_ADDR", "MINDX_TASK_ID", "RESUMABLE_PROFILE", "RESUMABLE_JOB"):
        env.pop(name, None)
    for argv, code in lines:
        done = subprocess.run(
            [sys.executable, "-m", "resumable", *argv[1:]],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == code, (argv, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        if argv[1] == "image":
            assert "place %s/examples/wheels/taskd-7.3.0-py3-none-linux_aarch64.whl" % ROOT in done.stderr
        if argv[1] == "plan":
            assert (
                "the recovery timeline /job/ckpt/alllogs/$(MINDX_TASK_ID)/resumable/timeline-<host>.jsonl"
                in done.stdout
            )
