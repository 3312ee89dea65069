"""``make sandbox`` as README says it is used: start it, run every command it printed in a shell, in
order, as printed (the shipped stacks of the profile: the cluster stack, then its job stack, with
the real engine); then ``make sandbox-down`` stops what it started. A profile no shipped stack
uses gets a stack of its own, and a mistake is refused before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List

import yaml
from conftest import EXAMPLES, ROOT

from .fixtures import built, controlplane, go_tools


def go_tools_bins() -> List[Path]:
    return go_tools.bin_dirs([go_tools.TOOLS["kubernetes"]])


def make(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def printed_commands(stdout: str) -> List[str]:
    """What the user copies: every line from the environment on (the first line is the kubeconfig
    the control plane wrote, make echoes its recipe before)."""
    lines = stdout.splitlines()
    start = lines.index("# the sandbox's environment (copy into your shell):")
    return lines[start:]


def run_as_printed(commands: List[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "printed.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(commands) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=1500, env=env, check=False)


def test_make_sandbox_runs_the_shipped_stacks_as_printed_and_sandbox_down_stops_it(tmp_path: Path) -> None:
    built(("kubernetes", "etcd", "kwok", "pulumi", "pulumi-kubernetes"))
    where = tmp_path / "sandbox"
    shipped = (ROOT / "Pulumi.pytorch-process-recovery.yaml").read_text()
    plane: List[controlplane.Process] = []
    up = make("sandbox", f"SANDBOX={where}")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        commands = printed_commands(up.stdout)
        stacks = [c.split()[-1] for c in commands if c.startswith("pulumi stack select --create ")]
        assert stacks == ["ascend-a2-cluster", "pytorch-process-recovery"], commands
        # process-level recovery has no pod-level rung in its plan: nothing to drill
        assert not any(" drill --dir " in c for c in commands), commands
        done = run_as_printed(commands, tmp_path)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        assert "llama-pretrain" in done.stdout  # the AscendJob, listed by the last command
        plane = controlplane.recorded(where)
        assert {p.name for p in plane} == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
            "podrunner",
        }
        # the checkout's stack file is as shipped: the sandbox set the config in its copy
        assert (ROOT / "Pulumi.pytorch-process-recovery.yaml").read_text() == shipped
        assert "images" in (where / "project" / "Pulumi.pytorch-process-recovery.yaml").read_text()
        again = make("sandbox", f"SANDBOX={where}")
        assert again.returncode != 0 and "already runs" in again.stderr
    finally:
        down = make("sandbox-down", f"SANDBOX={where}")
    assert down.returncode == 0, down.stderr
    assert not any(p.alive() for p in plane)
    assert (where / "state").is_dir()  # the stacks' state stays for the next sandbox
    # and so does the cluster: a new sandbox in the same directory has the objects the stacks made
    again = make("sandbox", f"SANDBOX={where}")
    try:
        assert again.returncode == 0, again.stderr
        kubectl = next(str(p / "kubectl") for p in go_tools_bins() if (p / "kubectl").exists())
        env = dict(os.environ, KUBECONFIG=str(where / "kubeconfig"))
        found = subprocess.run([kubectl, "get", "ascendjob", "llama-pretrain", "-n", "training"],
                               capture_output=True, text=True, env=env, check=False)  # fmt: skip
        assert found.returncode == 0, found.stderr
    finally:
        assert make("sandbox-down", f"SANDBOX={where}").returncode == 0


def test_a_profile_of_no_shipped_stack_gets_a_stack_of_its_own(tmp_path: Path) -> None:
    built(("kubernetes", "etcd", "kwok", "pulumi", "pulumi-kubernetes"))
    doc = yaml.safe_load((EXAMPLES / "pytorch-pod-rescheduling.yaml").read_text())
    doc["jobs"][0]["name"] = "my-job"
    profile = tmp_path / "mine.yaml"
    profile.write_text(yaml.safe_dump(doc, sort_keys=False))
    where = tmp_path / "sandbox"
    up = make("sandbox", f"SANDBOX={where}", f"SANDBOX_PROFILE={profile}")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        commands = printed_commands(up.stdout)
        assert "pulumi stack select --create sandbox" in commands
        assert "pulumi config set --path images.my-job registry.example.com/ai/my-job:sandbox" in commands
        done = run_as_printed(commands, tmp_path)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        assert "my-job" in done.stdout
        # a 7.3.0 job with fault-retry-times: the printed drill faults a pod and the job comes back
        assert any(" drill --dir " in c for c in commands), commands
        assert "every pod of training/my-job Running again in" in done.stdout, done.stdout[-3000:]
    finally:
        assert make("sandbox-down", f"SANDBOX={where}").returncode == 0


def test_a_mistake_is_refused_before_anything_starts(tmp_path: Path) -> None:
    tool = [sys.executable, str(ROOT / "tools" / "sandbox.py"), "up", "--dir", str(tmp_path / "sb")]
    missing = subprocess.run([*tool, "--profile", str(tmp_path / "nope.yaml")], capture_output=True, text=True)
    assert missing.returncode == 2 and "nope.yaml: not a file" in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster: {mindcluster: '0.1'}\n")
    refused = subprocess.run([*tool, "--profile", str(bad)], capture_output=True, text=True)
    assert refused.returncode == 2 and "bad.yaml" in refused.stderr and "\n\n" not in refused.stderr.strip()
    assert not (tmp_path / "sb").exists()


def test_a_workload_stack_brings_the_cluster_stack_it_reads() -> None:
    """pytorch-pod-rescheduling's stack file is a workload on the ascend-a2-cluster stack, which is declared with
    another profile of that cluster: the sandbox printed only the workload, whose `pulumi up` then failed reading a
    stack that did not exist. Every shipped workload stack now comes after the cluster stack it names."""
    sys.path.insert(0, str(ROOT / "tools"))
    import sandbox

    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        config = sandbox.stack_config(path)
        if config.get("stackRole") != "workload":
            continue
        steps = [(s.name, s.role) for s in sandbox.stacks_for((ROOT / config["profile"]).resolve(), [])]
        cluster = str(config["clusterStack"]).rsplit("/", 1)[-1]
        assert (cluster, "cluster") in steps, (path.name, steps)
        assert steps.index((cluster, "cluster")) < [name for name, _ in steps].index(path.stem[len("Pulumi.") :])
    pod = sandbox.stacks_for((EXAMPLES / "pytorch-pod-rescheduling.yaml").resolve(), [])
    assert [s.name for s in pod] == ["ascend-a2-cluster", "pytorch-pod-rescheduling"]
