"""The TaskD Manager as ``resumable launch`` starts it: ``python -m resumable.runtime.taskd_manager CONFIG``.

It is PLR's ``manager.py`` (PLR 适配训练脚本) with the numbers filled in from the
plan instead of by hand: ``init_taskd_manager({"job_id": $MINDX_TASK_ID, "node_nums": ...,
"proc_per_node": ...})`` then ``start_taskd_manager()``, which blocks while the job runs (TASKDAPI 04).
Both return False on failure (e.g. "the libtaskd.so has not been loaded"); this exits 1 then.
"""

from __future__ import annotations

import json
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m resumable.runtime.taskd_manager '{\"job_id\": ..., ...}'\n")
        return 2
    try:
        config = json.loads(args[0])
    except ValueError as exc:
        sys.stderr.write("taskd manager: the config is not JSON (%s)\n" % exc)
        return 2
    from taskd.api import init_taskd_manager, start_taskd_manager

    if not init_taskd_manager(config):
        sys.stderr.write("taskd manager: init_taskd_manager(%s) returned False (see TASKD_LOG_PATH)\n" % config)
        return 1
    if not start_taskd_manager():
        sys.stderr.write("taskd manager: start_taskd_manager() returned False (see TASKD_LOG_PATH)\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
