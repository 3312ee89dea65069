"""Run __main__.py under Pulumi mocks with one example stack's config, inside whatever Python runs
this file (the fresh virtualenv test runs it with the venv built from requirements.txt).

usage: python tests/stacks/venv_runner.py STACK   -> prints a JSON summary of what registered
"""

from __future__ import annotations

import json
import runpy
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the program's directory, as Pulumi's language host has it
sys.path.insert(1, str(ROOT / "tests"))  # the test helpers, as pytest imports them

import pulumi  # noqa: E402
import yaml  # noqa: E402

from stacks.pulumi_mocks import (  # noqa: E402
    MOCKS,
    PROJECT,
    program_config,
    pulumi_test,
    shipped_config,
)


def main(stack: str) -> Dict[str, Any]:
    import resumable_pulumi.image

    scratch = Path(tempfile.mkdtemp(prefix="resumable-venv-run."))
    resumable_pulumi.image.CONTEXT_DIR = str(scratch / "image-context")  # the real build-context code, off the tree
    # no cluster here: the node check is tested with a fake API server in test_readiness.py
    config = {**shipped_config(stack, scratch), f"{PROJECT}:checkNodes": "false"}
    pulumi.runtime.set_all_config(program_config(config))
    summary: Dict[str, Any] = {}

    @pulumi_test
    def run() -> Any:
        deployment = runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")["deployment"]
        parts = [deployment[p] for p in ("scheduler", "storage", "jobs") if deployment[p] is not None]
        children = [r for part in parts for r in part.resources.values()]

        def record(_: Any) -> None:
            types_: Dict[str, int] = {}
            for r in MOCKS.resources:
                types_[r.typ] = types_.get(r.typ, 0) + 1
            summary["types"] = types_
            summary["modules"] = {
                name: getattr(sys.modules[name], "__file__", "")
                for name in ("pulumi", "pulumi_kubernetes", "pulumi_docker_build", "resumable", "resumable_pulumi")
                if name in sys.modules  # a cluster stack builds no image: pulumi_docker_build stays unloaded
            }

        return pulumi.Output.all(*[c.urn for c in children]).apply(record)

    run()
    return summary


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), sort_keys=True))
    yaml.safe_dump({})  # PyYAML comes with the project (its only runtime dependency)
