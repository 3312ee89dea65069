"""The process table as the launcher reads it, from /proc: the state, parent and start time of a
process, every live process below one, and a signal that never fails for a process that has just
ended. Shared by the supervisor and patch-torchrun's check run (no other import of the runtime)."""

from __future__ import annotations

import contextlib
import os
from typing import Dict, List, NamedTuple, Optional


class ProcStat(NamedTuple):
    state: str
    ppid: int
    starttime: int
    #: the wait status of a zombie (Linux >= 3.5), None when unknown
    wait_status: Optional[int]


def proc_stat(pid: int) -> Optional[ProcStat]:
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            data = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    try:
        rest = data[data.rindex(")") + 2 :].split()
        status = int(rest[49]) if len(rest) > 49 else None
        return ProcStat(rest[0], int(rest[1]), int(rest[19]), status)
    except (ValueError, IndexError):
        return None


def descendants(root: int) -> List[int]:
    """Every live process below ``root`` (children first), from /proc."""
    children: Dict[int, List[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st is not None:
            children.setdefault(st.ppid, []).append(int(name))
    out: List[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def send(pid: int, signum: int) -> None:
    """Signal a process that may have ended meanwhile."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)
