#!/usr/bin/env python3
"""Run this project's Pulumi program with the real Pulumi engine and Kubernetes provider built here.

``make tools`` builds the Pulumi CLI (the engine) and ``pulumi-resource-kubernetes`` from Go modules.
The Python language host (``pulumi-language-python``) is not published as a Go module version the
module proxy serves, so it cannot be built here; this script runs the program the way the Automation
API runs an inline program instead: the engine is the real CLI (``pulumi up --client=...``), with the
project's ``Pulumi.yaml`` and ``Pulumi.<stack>.yaml`` (config merge, secrets, stack references, the
state backend all the CLI's own), and the language runtime is this Python process, which runs
``__main__.py`` as the language host would (``runpy``, in the project directory). With an official
Pulumi CLI installed (it carries the language host), plain ``pulumi preview``/``up`` run the same
program with the same environment.

    python tools/pulumi_local.py {preview,up,refresh,destroy,output} --stack NAME [options]

Environment (``make sandbox`` prints it): ``PULUMI_BACKEND_URL`` (a ``file://`` backend),
``PULUMI_CONFIG_PASSPHRASE``, ``KUBECONFIG``. Offline settings are added: no update check, no plugin
download (a plugin that is not built fails at once). Exit status: 0, 2 for a usage mistake, or the
Pulumi CLI's own status (255 when the update failed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_tools

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "ascend-resumable"
#: the CLI must neither ask the network for a newer version nor download a plugin
OFFLINE = {
    "PULUMI_SKIP_UPDATE_CHECK": "true",
    "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    "PULUMI_SKIP_CONFIRMATIONS": "true",
}
COMMANDS = ("preview", "up", "refresh", "destroy", "output")


class UsageError(Exception):
    """A mistake in how the script was called: exit 2 with the message."""


def tool_path() -> str:
    """PATH with the built Pulumi CLI and provider first (the engine finds plugins on PATH)."""
    dirs = go_tools.bin_dirs([go_tools.TOOLS["pulumi"], go_tools.TOOLS["pulumi-kubernetes"]])
    return os.pathsep.join([*map(str, dirs), os.environ.get("PATH", "")])


def environment() -> Dict[str, str]:
    missing = [name for name in ("PULUMI_BACKEND_URL",) if not os.environ.get(name)]
    if missing:
        raise UsageError(
            f"{' and '.join(missing)} is not set: point it at a state backend (`export "
            "PULUMI_BACKEND_URL=file://$PWD/.sandbox/state`; `make sandbox` prints the whole environment)."
        )
    if not (os.environ.get("PULUMI_CONFIG_PASSPHRASE") or os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")):
        raise UsageError(
            "PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) is not set: the stacks' secrets are "
            "encrypted with it; set it (`make sandbox` prints one for the sandbox)."
        )
    env = {key: os.environ.get(key, value) for key, value in OFFLINE.items()}
    env["PATH"] = tool_path()
    return env


def inline_program(project: Path) -> Any:
    """The project's ``__main__.py``, run as the Python language host runs it."""

    def program() -> None:
        runpy.run_path(str(project / "__main__.py"), run_name="__main__")

    return program


def select_stack(name: str, project: Path) -> Any:
    from pulumi import automation as auto

    env = environment()
    os.environ.update(env)  # the program's own Kubernetes client reads PATH/KUBECONFIG too
    os.chdir(project)  # relative paths in the config (the profile) are the project's
    options = auto.LocalWorkspaceOptions(work_dir=str(project), env_vars=env, secrets_provider="passphrase")
    return auto.create_or_select_stack(name, project_name=PROJECT, program=inline_program(project), opts=options)


def exit_code(error: Exception) -> int:
    """The CLI's exit status from an automation CommandError (its message holds ``code: N``)."""
    match = re.search(r"^ code: (-?\d+)$", str(error), re.M)
    code = int(match.group(1)) if match else 255
    return code if code > 0 else 255


def run(command: str, stack: Any, expect_no_changes: bool, extra: Dict[str, Any]) -> int:
    """Run one command, its output and errors streamed as the CLI prints them; the CLI's status."""
    from pulumi import automation as auto

    def out(line: str) -> None:
        print(line, flush=True)

    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    streams: Dict[str, Any] = {"on_output": out, "on_error": err, **extra}
    try:
        if command == "output":
            for key, value in sorted(stack.outputs().items()):
                shown = "[secret]" if value.secret else json.dumps(value.value, sort_keys=True)
                print(f"{key}\t{shown}")
        elif command == "preview":
            stack.preview(expect_no_changes=expect_no_changes, diff=True, **streams)
        elif command == "up":
            stack.up(expect_no_changes=expect_no_changes, **streams)
        elif command == "refresh":
            stack.refresh(expect_no_changes=expect_no_changes, **streams)
        elif command == "destroy":
            stack.destroy(**streams)
        return 0
    except auto.CommandError as exc:
        return exit_code(exc)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("--stack", "-s", required=True, help="stack name (the shipped Pulumi.<stack>.yaml files)")
    parser.add_argument(
        "--cwd", type=Path, default=Path("."), help="the project directory (default: the current one, as pulumi)"
    )
    parser.add_argument("--expect-no-changes", action="store_true", help="fail when the operation changes anything")
    parser.add_argument("--target", action="append", default=[], help="only this resource URN (repeatable)")
    args = parser.parse_args(argv)
    project = args.cwd.resolve()
    try:
        if not (project / "Pulumi.yaml").is_file():
            raise UsageError(
                f"{project} has no Pulumi.yaml: run this in the Pulumi project's directory, or name it with --cwd"
            )
        extra: Dict[str, List[str]] = {"target": args.target} if args.target else {}
        stack = select_stack(args.stack, project)
        return run(args.command, stack, args.expect_no_changes, extra)
    except (UsageError, go_tools.ToolError) as exc:
        print(f"pulumi_local: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
