#!/usr/bin/env python3
"""``make sandbox``: a local cluster to run ``pulumi up`` against before a real one.

Starts the control plane of tools/controlplane.py (etcd, kube-apiserver, controller-manager,
scheduler, KWOK, and the pod runner that runs the Ascend Operator and Volcano the stacks deploy; the
real programs built by ``make tools``) in ``--dir`` with fake nodes labelled from the profile's plan
(a management node and NPU nodes with the profile's NPU resource), copies the Pulumi project
(Pulumi.yaml, __main__.py, requirements.txt, the shipped stack files, the examples) to
``<dir>/project`` so the user's checkout stays as it is, and prints the environment and the plain
``pulumi`` commands that deploy the stacks of that profile onto it, in order (a cluster stack before
its job stacks). The copy's ``.venv`` (Pulumi.yaml: ``toolchain: pip``, ``virtualenv: .venv``) is a
link to the checkout's, where ``make pulumi-venv`` installed requirements.txt as Pulumi's pip
toolchain does; its requirements.txt installs this checkout (``-e <checkout>``) for a venv made
anew. Every kubeconfig context the shipped stacks name (``ascend-a2`` ...) points at the sandbox,
so they run unchanged; a profile no shipped stack uses gets a stack ``sandbox`` of role ``all``.
Each job runs a prebuilt image reference (no image is built: no Docker engine is needed, and fake
nodes pull nothing). ``make sandbox-down`` stops it (the processes it recorded, nothing else) and
keeps ``--dir``.

Fake nodes run no containers: the Ascend Operator turns an AscendJob into a PodGroup and pods, Volcano
binds them to the NPU nodes and they go Running, but no image is pulled, no volume mounted and no
training runs.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import controlplane
import drill
import go_tools
import source_tools

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "ascend-resumable"
PASSPHRASE = "sandbox"
#: the reference every job runs in the sandbox unless its stack names one (nothing is pulled)
SANDBOX_IMAGE = "registry.example.com/ai/{job}:sandbox"
ROLE_ORDER = {"cluster": 0, "all": 1, "workload": 2}


@dataclass(frozen=True)
class StackSteps:
    name: str
    role: str
    new: bool  # not a shipped stack file: its config is set by the printed commands
    jobs_without_image: List[str]


def copy_project(target: Path) -> None:
    """The Pulumi project as shipped, in ``target``: the program and the examples refreshed on every
    ``up``, a stack file only when the copy has none (it keeps the stack's passphrase salt, which
    ``pulumi stack select --create`` writes there, and the config set in the sandbox). What the
    language host needs beside the program: requirements.txt, with this checkout as the project it
    installs, and the virtualenv Pulumi.yaml names, linked to the checkout's."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copyfile(ROOT / name, target / name)
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    (target / "requirements.txt").write_text(
        "\n".join(f"-e {ROOT}" if line.strip() == "-e ." else line for line in requirements.splitlines()) + "\n",
        encoding="utf-8",
    )
    venv = target / ".venv"
    if not venv.exists() and not venv.is_symlink():
        venv.symlink_to(ROOT / ".venv")
    for stack in ROOT.glob("Pulumi.*.yaml"):
        if not (target / stack.name).exists():
            shutil.copyfile(stack, target / stack.name)
    shutil.copytree(ROOT / "examples", target / "examples", dirs_exist_ok=True)


def stack_config(path: Path) -> Dict[str, Any]:
    doc = yaml.safe_load(path.read_text()) or {}
    config: Dict[str, Any] = doc.get("config") or {}
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(PROJECT + ":")}


def stacks_for(profile: Path, jobs: Sequence[str]) -> List[StackSteps]:
    """The shipped stacks of ``profile`` (cluster role first), or a new ``sandbox`` stack. A workload stack brings
    the cluster stack it references (``clusterStack``), which a shipped file may declare with another profile of
    the same cluster (pytorch-pod-rescheduling runs on the ascend-a2-cluster stack of pytorch-process-recovery):
    without it the workload's ``pulumi up`` finds no stack to read."""
    found: List[StackSteps] = []
    clusters: List[str] = []
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        config = stack_config(path)
        if (ROOT / str(config.get("profile", ""))).resolve() != profile:
            continue
        role = str(config.get("stackRole", "all"))
        images = config.get("images") or {}
        missing = [] if role == "cluster" else [j for j in jobs if j not in images]
        found.append(StackSteps(path.name[len("Pulumi.") : -len(".yaml")], role, False, missing))
        if role == "workload":
            clusters.append(str(config.get("clusterStack", "")).rsplit("/", 1)[-1])
    for name in clusters:
        path = ROOT / ("Pulumi.%s.yaml" % name)
        if name not in [s.name for s in found] and path.is_file():
            found.append(StackSteps(name, str(stack_config(path).get("stackRole", "all")), False, []))
    if not found:
        found.append(StackSteps("sandbox", "all", True, list(jobs)))
    return sorted(found, key=lambda s: (ROLE_ORDER.get(s.role, 9), s.name))


#: the programs the printed lines run: kubectl, and plain `pulumi` with its Kubernetes provider and
#: Python language host
TOOLS = (
    "pulumi",
    "pulumi-kubernetes",
    f"pulumi-language-python-{source_tools.LANGUAGE_HOST_VERSION}",
    "kubernetes",
)


@dataclass(frozen=True)
class Job:
    name: str
    namespace: str
    kind: str


def wait_running(job: Job) -> str:
    """The kubectl line that waits until the job runs: an AscendJob's ``Running`` condition (the
    operator sets it once every pod runs), a Volcano Job's ``status.state.phase``."""
    if job.kind == "AscendJob":
        what = f"--for=condition=Running ascendjob/{job.name}"
    else:
        what = f"--for=jsonpath={{.status.state.phase}}=Running jobs.batch.volcano.sh/{job.name}"
    return f"kubectl wait {what} -n {job.namespace} --timeout=180s"


def instructions(plane_dir: Path, profile: Path, jobs: Sequence[Job]) -> List[str]:
    state = plane_dir / "state"
    state.mkdir(exist_ok=True)
    tools = go_tools.bin_dirs([go_tools.all_tools()[n] for n in TOOLS])
    path = ":".join(shlex.quote(str(d)) for d in tools)
    lines = [
        "# the sandbox's environment (copy into your shell):",
        f"export KUBECONFIG={shlex.quote(str(plane_dir / 'kubeconfig'))}",
        f"export PULUMI_BACKEND_URL={shlex.quote('file://' + str(state))}",
        f"export PULUMI_CONFIG_PASSPHRASE={PASSPHRASE}",
        "export PULUMI_SKIP_UPDATE_CHECK=true",
        f"export PATH={path}:$PATH",
        f"cd {shlex.quote(str(plane_dir / 'project'))}   # a copy of the Pulumi project: your checkout stays as it is",
        "kubectl get nodes --show-labels",
        "# the stacks of this profile, in order (the real Pulumi engine and provider; docs/pulumi.md):",
    ]
    for stack in stacks_for(profile, [job.name for job in jobs]):
        lines.append(f"pulumi stack select --create {stack.name}")
        if stack.new:
            lines.append(f"pulumi config set profile {shlex.quote(str(profile))}")
            lines.append("pulumi config set context sandbox")
        for job in stack.jobs_without_image:  # a prebuilt reference: nothing is built or pulled here
            lines.append(f"pulumi config set --path images.{job} {SANDBOX_IMAGE.format(job=job)}")
        lines.append(f"pulumi up --yes --stack {stack.name}")
    lines.append("# the Ascend Operator and Volcano turn each job into a PodGroup and pods bound to the NPU nodes:")
    lines += [wait_running(job) for job in jobs]
    lines.append("kubectl get pods -A -o wide; kubectl get ascendjobs,jobs.batch.volcano.sh,podgroups -A")
    if drills(profile):
        lines.append("# pod-level rescheduling, drilled (a pod fails; --fault node: its node goes NotReady):")
        tool = shlex.quote(str(Path(__file__).resolve()))
        where = f"--dir {shlex.quote(str(plane_dir))} --profile {shlex.quote(str(profile))}"
        python = shlex.quote(sys.executable)  # the interpreter with this checkout installed (make: .venv)
        lines.append(f"{python} {tool} drill {where}   # make sandbox-drill does the same")
    lines += [
        "# stop it: make sandbox-down (the state stays in " + str(state) + ")",
    ]
    return lines


def drills(profile: Path) -> bool:
    """Whether the sandbox of ``profile`` can drill pod-level rescheduling: its release's NPU plugin and
    ClusterD run here (source_tools.CLUSTERD_RELEASES) and its one job's plan has the pod-level rung the
    drill times (``drill.budget_term``: a ``fault-retry-times`` label alone, as process-level recovery
    writes it, is not pod-level rescheduling)."""
    plan = controlplane.plan_json(profile)
    jobs = plan.get("jobs") or []
    release = str((plan.get("scheduler") or {}).get("release", ""))
    if release not in source_tools.CLUSTERD_RELEASES or len(jobs) != 1:
        return False
    try:
        drill.budget_term(jobs[0])
    except drill.DrillError:
        return False
    return True


def plan_jobs(plan: Dict[str, Any]) -> List[Job]:
    return [Job(str(j["name"]), str(j["namespace"]), str(j["kind"])) for j in plan.get("jobs") or []]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the sandbox and print how to deploy onto it")
    up.add_argument("--dir", type=Path, required=True)
    up.add_argument("--profile", type=Path, required=True)
    up.add_argument("--compute-nodes", type=int, help="fake NPU nodes (default: one per pod of the profile's jobs)")
    down = sub.add_parser("down", help="stop the sandbox in --dir (its state is kept)")
    down.add_argument("--dir", type=Path, required=True)
    drill_cmd = sub.add_parser("drill", help="fault a running job of the sandbox and time its rescheduling")
    drill_cmd.add_argument("--dir", type=Path, required=True)
    drill_cmd.add_argument("--profile", type=Path, required=True)
    drill_cmd.add_argument("--job", help="the job to fault (default: the profile's only job)")
    drill_cmd.add_argument("--fault", choices=drill.FAULTS, default="pod")
    args = parser.parse_args(argv)
    plane_dir = args.dir.resolve()
    if args.command == "down":
        return controlplane.main(["down", "--dir", str(plane_dir)])
    if args.command == "drill":
        job = ["--job", args.job] if args.job else []
        return drill.main(["--kubeconfig", str(plane_dir / "kubeconfig"), "--profile", str(args.profile),
                           "--fault", args.fault, *job])  # fmt: skip
    profile = args.profile.resolve()
    if not profile.is_file():
        print(f"sandbox: profile {args.profile}: not a file; name a profile, e.g. "
              "SANDBOX_PROFILE=examples/pytorch-process-recovery.yaml", file=sys.stderr)  # fmt: skip
        return 2
    try:
        plan = controlplane.plan_json(profile)
        go_tools.bin_dirs([go_tools.all_tools()[n] for n in TOOLS])  # built, before anything starts
    except (controlplane.UsageError, go_tools.ToolError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 2
    nodes = [] if args.compute_nodes is None else ["--compute-nodes", str(args.compute_nodes)]
    if drills(profile):  # the NPU plugin, ClusterD and the device plugin's double run too
        nodes += ["--mindcluster"]
    code = controlplane.main(["up", "--dir", str(plane_dir), "--profile", str(profile), *nodes])
    if code != 0:
        return code
    copy_project(plane_dir / "project")
    for line in instructions(plane_dir, profile, plan_jobs(plan)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
