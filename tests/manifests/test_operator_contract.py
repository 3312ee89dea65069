"""The operator contract: every AscendJob this project renders passes the Ascend Operator's admission
at each supported release, and on every pod the launcher reads exactly what that operator injects
there and starts a rendezvous whose ranks cannot collide.

The operator is the double :mod:`tests.manifests.ascend_operator`, written from
Ascend/mind-cluster component/ascend-operator at v7.3.0 and v26.1.0 (file:line in its ``CITE``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable import constants as C
from resumable.api import job_plan, load_plan_text
from resumable.manifests import build_deployment
from resumable.plan.model import JobPlan
from resumable.runtime import installed
from resumable.runtime.launch import build_spec

from . import ascend_operator as op

EXAMPLE_NAMES = [p.stem for p in EXAMPLE_FILES]


def profile_text(example: str, nodes: int = 0) -> str:
    doc = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    for job in doc["jobs"]:
        if nodes:
            job["nodes"] = nodes
        for wheel in job.get("image", {}).get("wheels", {}).values():
            wheel["file"] = str(EXAMPLES / wheel["file"])
    return yaml.safe_dump(doc, sort_keys=False)


#: every example as written, and generated ones: each example at 1 and 3 nodes
PROFILES = [(e, 0) for e in EXAMPLE_NAMES] + [(e, n) for e in EXAMPLE_NAMES for n in (1, 3)]


def rendered(text: str) -> Tuple[JobPlan, Dict[str, Any]]:
    plan = load_plan_text(text, "<contract>")
    objs = build_deployment(plan, profile_text=text).stage("jobs").objects
    (job,) = [o for o in objs if o["kind"] == C.ASCENDJOB_KIND]
    return job_plan(plan), job


def pod_ips(job: Dict[str, Any]) -> Dict[Tuple[str, int], str]:
    out: Dict[Tuple[str, int], str] = {}
    for rtype, spec in sorted(job["spec"]["replicaSpecs"].items()):
        for index in range(spec.get("replicas", 1)):
            out[(rtype, index)] = "10.0.%d.%d" % (len(out) // 200, len(out) % 200 + 1)
    return out


@pytest.mark.parametrize("release", op.RELEASES)
@pytest.mark.parametrize("example,nodes", PROFILES, ids=["%s-%d" % p for p in PROFILES])
def test_every_rendered_ascendjob_passes_the_operators_admission(example: str, nodes: int, release: str) -> None:
    """validateJob with gang scheduling on and Volcano's 'default' queue: queue, framework label,
    replica types and counts, the ascend container and its image (CITE[release])."""
    text = profile_text(example, nodes)
    if yaml.safe_load(text)["jobs"][0].get("kind", "ascendjob") != "ascendjob":
        pytest.skip("not an AscendJob")
    _, job = rendered(text)
    op.validate(job, release)
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "default"


@pytest.mark.parametrize("release", op.RELEASES)
def test_the_double_refuses_what_the_operator_refuses(release: str) -> None:
    """Each refusal of validateJob, so that a pass above means something (CITE[release])."""
    _, good = rendered(profile_text("pytorch-process-recovery"))
    op.validate(good, release)
    cases: List[Tuple[str, Any]] = [
        ("QueueGetFailed", lambda j: j["spec"]["runPolicy"]["schedulingPolicy"].pop("queue")),
        ("QueueGetFailed", lambda j: j["spec"]["runPolicy"]["schedulingPolicy"].update(queue="team-a")),
        ("framework label", lambda j: j["metadata"]["labels"].pop("framework")),
        ("must be one of", lambda j: j["spec"]["replicaSpecs"].update(Chief=j["spec"]["replicaSpecs"].pop("Master"))),
        ("must be only 1", lambda j: j["spec"]["replicaSpecs"]["Master"].update(replicas=2)),
        (
            "no container named ascend",
            lambda j: j["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(name="pytorch"),
        ),
        (
            "Image is undefined",
            lambda j: j["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(image=""),
        ),
        ("leader", lambda j: j["spec"]["replicaSpecs"].pop("Master")),
        ("success policy", lambda j: j["spec"].update(successPolicy="Any")),
    ]
    for says, edit in cases:
        job = copy.deepcopy(good)
        edit(job)
        with pytest.raises(op.Refused) as info:
            op.validate(job, release)
        assert says.lower() in str(info.value).lower(), (says, str(info.value))
    op.validate(good, release, queues=("team-a", "default"))
    scheduling = good["spec"]["runPolicy"].pop("schedulingPolicy")
    op.validate(good, release, queues=())  # no schedulingPolicy: no queue lookup (validateBasicInfo)
    assert scheduling["queue"] == "default"


def launch_everywhere(
    plan: JobPlan, job: Dict[str, Any], release: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Dict[Tuple[str, int], Any]:
    """build_spec on every pod with the operator's env, in an image that has what the plan installs."""
    lib = tmp_path / "libtaskd.so"
    lib.write_text("")
    run_py = tmp_path / "run.py"
    run_py.write_text("%s\nimport os\n" % (plan.image.runpy_patch or ""))
    monkeypatch.setattr(installed, "find_command", lambda name: "/usr/local/bin/" + name)
    monkeypatch.setattr(installed, "script_python", lambda exe: None)
    monkeypatch.setattr(installed, "libtaskd_path", lambda: str(lib))
    monkeypatch.setattr(installed, "torch_run_py", lambda: str(run_py))
    monkeypatch.setattr(installed, "package_dir", lambda name: str(tmp_path))
    ips = pod_ips(job)
    envs = op.pod_envs(job, release, ips)
    out: Dict[Tuple[str, int], Any] = {}
    for pod, env in envs.items():
        env = dict(env, POD_IP=ips[pod], XDL_IP="192.168.0.%d" % (len(out) + 1))
        out[pod] = build_spec(plan, env, (), str(tmp_path / "logs"))
    return out


def option(command: List[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in command if a.startswith(name + "=")]
    return value


@pytest.mark.parametrize("release", op.RELEASES)
@pytest.mark.parametrize("example,nodes", PROFILES, ids=["%s-%d" % p for p in PROFILES])
def test_the_launcher_reads_what_the_operator_injects(
    example: str, nodes: int, release: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On every pod: nothing missing, no size the plan disagrees with, node ranks 0..n-1 once each, one
    rendezvous address, msrun workers only where there are NPUs, the TaskD Manager once, and the
    MindIO controller address each rank connects to (CITE[release] env.go, pod.go, utils.go)."""
    text = profile_text(example, nodes)
    if yaml.safe_load(text)["jobs"][0].get("kind", "ascendjob") != "ascendjob":
        pytest.skip("not an AscendJob")
    plan, job = rendered(text)
    specs = launch_everywhere(plan, job, release, tmp_path, monkeypatch)
    ips = pod_ips(job)
    nodes_total = sum(s.get("replicas", 1) for s in job["spec"]["replicaSpecs"].values())
    # MindIO TTP is in use where the job template sets its controller port (RT06 TTP_PORT)
    ttp_ports = {
        e.get("value")
        for s in job["spec"]["replicaSpecs"].values()
        for e in (op._ascend(s) or {}).get("env", [])
        if e["name"] == C.ENV_TTP_PORT
    }
    ttp_port = ttp_ports.pop() if ttp_ports else None
    ranks: List[int] = []
    managers = 0
    for (rtype, index), spec in specs.items():
        assert spec.problems == [], (rtype, index, spec.problems)
        assert not [w for w in spec.warnings if "from the Ascend Operator" in w], spec.warnings
        rank = int(option(spec.command, "--node_rank"))
        ranks.append(rank)
        managers += spec.manager is not None
        npus = op._npus(op._ascend(job["spec"]["replicaSpecs"][rtype]) or {})
        # the rendezvous port is the leader's ascendjob-port, which every pod declares (service.go)
        declared = {
            p["name"]: p["containerPort"] for p in (op._ascend(job["spec"]["replicaSpecs"][rtype]) or {})["ports"]
        }
        assert option(spec.command, "--master_port") == str(declared[op.PORT_NAME])
        if plan.launcher.launcher == "msrun":
            assert int(option(spec.command, "--local_worker_num")) == npus > 0, "msrun workers need NPUs here"
            assert int(option(spec.command, "--worker_num")) == nodes_total * npus
            leader = ips[("Scheduler", 0)]
            assert option(spec.command, "--master_addr") == (leader if rtype == "Scheduler" else op.SERVICE_IP)
            if ttp_port is not None:
                assert spec.env["MS_TFT_IP"] == option(spec.command, "--master_addr")
                assert spec.env["MS_TFT_PORT"] == ttp_port
        else:
            rank0_hosts_manager = rank == 0 and plan.launcher.taskd_manager.where == "rank0"
            assert option(spec.command, "--master_addr") == (
                ips[(rtype, index)] if rank0_hosts_manager else op.SERVICE_IP
            )
            assert option(spec.command, "--nproc_per_node") == str(npus)
            if ttp_port is not None:
                assert spec.env["TTP_ADDR"] == (ips[(rtype, index)] if rank == 0 else op.SERVICE_IP)
            else:
                assert "TTP_ADDR" not in spec.env
    assert sorted(ranks) == list(range(nodes_total)), "node ranks collide or leave a gap"
    assert managers == (1 if plan.launcher.taskd_manager.enabled else 0)
