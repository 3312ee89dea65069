"""The driver role's own kubectl calls (roles/ascend_driver/tasks/drain.yml, resume.yml) run by
ansible-playbook on this machine against the emulated kubectl (tests/fixtures/kube/kubectl), which
drains as kubectl v0.34.0 does (pkg/drain/filters.go, drain.go): the role's drain flags pass the
DaemonSet and emptyDir pods of a node, a PodDisruptionBudget that allows no disruption fails the drain
at the role's timeout with kubectl's reason, a bare pod is refused (no --force: the operator decides);
re-labelling reports changed only when kubectl changed the node ("not labeled" is no change).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from conftest import FIXTURES, ROOT
from role_code import PLAYBOOK, playbook_env

KUBECTL = str(FIXTURES / "kube" / "kubectl")

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")


def _play(tmp_path: Path, tasks_from: str, extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Run one task file of the role on host w1 (local); returns what the play recorded in out.json."""
    state = tmp_path / "kube"
    out = tmp_path / "out.json"
    play_vars: Dict[str, Any] = {
        "ascend_driver_kubectl": KUBECTL,
        "ascend_driver_kubectl_host": "w1",
        "ascend_driver_daemonset_selector": {"workerselector": "dls-worker-node"},
        "ascend_driver_plan": {"order": ["driver"], "driver": {"reason": "driver 25.3.0 wanted"}},
        "ascend_driver_window": None,
    }
    play_vars.update(extra or {})
    play = [
        {
            "name": "One task file of ascend_driver against the emulated kubectl",
            "hosts": "w1",
            "gather_facts": False,
            "vars": play_vars,
            "tasks": [
                {
                    "name": "Run it",
                    "block": [
                        {
                            "name": "The role's tasks",
                            "ansible.builtin.include_role": {
                                "name": "ascend_resumable.npu.ascend_driver",
                                "tasks_from": tasks_from,
                            },
                        },
                        {
                            "name": "Record success",
                            "ansible.builtin.copy": {
                                "dest": str(out),
                                "content": "{{ {'failed': false, 'relabel': ascend_driver_relabel | default({})}"
                                " | to_json }}",
                                "mode": "0644",
                            },
                        },
                    ],
                    "rescue": [
                        {
                            "name": "Record the failure",
                            "ansible.builtin.copy": {
                                "dest": str(out),
                                "content": "{{ {'failed': true, 'task': ansible_failed_task.name,"
                                " 'stderr': ansible_failed_result.stderr | default(''),"
                                " 'msg': ansible_failed_result.msg | default('')} | to_json }}",
                                "mode": "0644",
                            },
                        }
                    ],
                }
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "hosts.yml").write_text(
        yaml.safe_dump(
            {"all": {"hosts": {"w1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
        )
    )
    env = playbook_env(
        tmp_path,
        "%s:%s" % (ROOT / "collections", ROOT),
        # the local connection passes its environment on (the role's kubectl env is a role var)
        KUBE_FIXTURE_STATE=str(state),
        ASCEND_FIXTURE_ENV=str(tmp_path / "none"),
    )
    # the window record's path is a role var: only extra vars override it
    window_file = "ascend_driver_window_file=%s" % (tmp_path / "w.json")
    argv = [str(PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), "-e", window_file, str(tmp_path / "play.yml")]
    run = subprocess.run(
        argv,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.exists(), run.stdout + run.stderr
    return dict(json.loads(out.read_text()))


def _kubectl(tmp_path: Path, *argv: str) -> str:
    env = dict(os.environ, KUBE_FIXTURE_STATE=str(tmp_path / "kube"), ASCEND_FIXTURE_ENV=str(tmp_path / "none"))
    return subprocess.run([KUBECTL, *argv], env=env, capture_output=True, text=True, check=True, timeout=60).stdout


def _node(tmp_path: Path) -> Dict[str, Any]:
    return dict(json.loads(_kubectl(tmp_path, "get", "node", "w1", "-o", "json")))


def _pods(tmp_path: Path) -> List[str]:
    return sorted(p.stem for p in (tmp_path / "kube" / "pods").glob("*/*.json"))


def _cluster(tmp_path: Path) -> None:
    _kubectl(tmp_path, "fixture", "node", "w1", "workerselector=dls-worker-node")
    _kubectl(tmp_path, "fixture", "daemonset-pod", "kube-system", "kube-proxy", "k8s-app=kube-proxy", "w1")
    _kubectl(tmp_path, "fixture", "daemonset-pod", "kube-system", "ascend-device-plugin", "name=dp", "w1")
    _kubectl(tmp_path, "fixture", "pod", "default", "train-0", "w1", "app=train")
    _kubectl(tmp_path, "fixture", "pod", "default", "cache-0", "w1", "app=cache", "--emptydir")


def test_the_roles_drain_flags_pass_daemonset_and_emptydir_pods(tmp_path: Path) -> None:
    _cluster(tmp_path)
    result = _play(tmp_path, "drain.yml")
    assert result == {"failed": False, "relabel": {}}
    assert _pods(tmp_path) == ["ascend-device-plugin-w1-0", "kube-proxy-w1-0"]
    node = _node(tmp_path)
    assert node["spec"]["unschedulable"] is True and "workerselector" not in node["metadata"]["labels"]
    log = (tmp_path / "kube" / "kubectl.log").read_text()
    assert "drain w1 --ignore-daemonsets --delete-emptydir-data --timeout=600s" in log


def test_a_disruption_budget_fails_the_drain_with_kubectls_reason(tmp_path: Path) -> None:
    _cluster(tmp_path)
    _kubectl(tmp_path, "fixture", "pdb", "default", "train", "app=train", "0")
    result = _play(
        tmp_path,
        "drain.yml",
        {"ascend_driver_drain_args": ["--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2s"]},
    )
    assert result["failed"] and result["task"] == "Drain the node (pods using NPUs are evicted; DaemonSet pods stay)"
    assert "Cannot evict pod as it would violate the pod's disruption budget." in result["stderr"]
    assert 'error when evicting pods/"train-0" -n "default": global timeout reached: 2s' in result["stderr"]
    # the window's rescue (window.yml) restores the node and stops with this reason; the drain itself
    # left the node cordoned, the NPU DaemonSets running (not paused yet) and the budgeted pod in place
    assert _node(tmp_path)["spec"]["unschedulable"] is True
    assert "train-0" in _pods(tmp_path) and "cache-0" not in _pods(tmp_path)


def test_a_bare_pod_is_refused_without_force(tmp_path: Path) -> None:
    _cluster(tmp_path)
    _kubectl(tmp_path, "fixture", "pod", "default", "debug", "w1", "--bare")
    result = _play(tmp_path, "drain.yml")
    assert result["failed"]
    assert "declare no controller (use --force to override): default/debug" in result["stderr"]
    assert "train-0" in _pods(tmp_path)  # kubectl evicts nothing when a pod is refused


@pytest.mark.parametrize(("labelled", "changed"), [(False, True), (True, False)])
def test_relabel_is_changed_only_when_kubectl_labeled(tmp_path: Path, labelled: bool, changed: bool) -> None:
    """kubectl prints "node/w1 not labeled" when the label is already there: no change."""
    _kubectl(tmp_path, "fixture", "node", "w1", *(["workerselector=dls-worker-node"] if labelled else []))
    window = {
        "node": "w1",
        "drained": True,
        "was_cordoned": True,
        "paused_labels": {"workerselector": "dls-worker-node"},
        "allocatable": {},
    }
    result = _play(tmp_path, "resume.yml", {"ascend_driver_window": window, "ascend_driver_resume_wait": False})
    assert not result["failed"]
    [item] = result["relabel"]["results"]
    assert item["stdout"] == ("node/w1 not labeled" if labelled else "node/w1 labeled")
    assert item["changed"] is changed


# kubectl drain's refusals, as the emulated kubectl prints them (pkg/cmd/drain/drain.go:344)
PDB_REFUSAL = (
    'error: unable to drain node "w1" due to error: error when evicting pods/"train-0" -n "default": '
    "global timeout reached: 2s, continuing command..."
)
BARE_REFUSAL = (
    'error: unable to drain node "w1" due to error: cannot delete cannot delete Pods that declare no controller '
    "(use --force to override): default/debug, continuing command..."
)


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        (["pdb", "default", "train", "app=train", "0"], PDB_REFUSAL),
        (["pod", "default", "debug", "w1", "--bare"], BARE_REFUSAL),
    ],
    ids=["disruption-budget", "bare-pod"],
)
def test_a_window_for_cann_or_the_engine_stops_with_kubectls_reason(
    tmp_path: Path, fixture: List[str], reason: str
) -> None:
    """open.yml (the window compute.yml opens for a CANN-only or engine-only change) stopped with
    ansible_failed_result.msg, "non-zero return code", as the reason a node was held; it now names kubectl's
    "error:" line, as window.yml does, and puts the node back into service."""
    _cluster(tmp_path)
    _kubectl(tmp_path, "fixture", *fixture)
    result = _play(
        tmp_path,
        "open.yml",
        {
            "ascend_driver_window_reason": "CANN",
            "ascend_driver_state_dir": str(tmp_path / "state"),
            "ascend_driver_drain_args": ["--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2s"],
        },
    )
    assert result["failed"] and result["task"] == "Stop with what holds the node", result
    assert "w1 could not be taken out of service for CANN: %s. Nothing was changed" % reason in result["msg"], result
    assert "non-zero return code" not in result["msg"]
    assert "the node was put back into service as it was" in result["msg"]
    node = _node(tmp_path)
    assert not node["spec"].get("unschedulable") and node["metadata"]["labels"]["workerselector"] == "dls-worker-node"


def test_both_windows_name_a_failure_with_one_filter() -> None:
    """window.yml (driver/firmware) and open.yml (CANN, the engine) stop with the same reason extraction, and so
    does compute.yml's hold: kubectl's last error line, else the task's msg."""
    from role_code import plugin

    reason = plugin("filter", "failure_reason").failure_reason
    drain = {
        "msg": "non-zero return code",
        "rc": 1,
        "stderr_lines": ["evicting pod default/train-0", PDB_REFUSAL, " w1"],
    }
    assert reason(drain) == PDB_REFUSAL
    missing = {"msg": "non-zero return code", "stderr": 'Error from server (NotFound): nodes "w9" not found'}
    assert reason(missing) == 'Error from server (NotFound): nodes "w9" not found'
    assert reason({"msg": "driver installer exited 1", "stderr_lines": ["tar: broken"]}) == "driver installer exited 1"
    assert reason({}) == "see the failed task above" and reason(None, "failed, see above") == "failed, see above"
    tasks = ROOT / "ansible_collections/ascend_resumable/npu/roles/ascend_driver/tasks"
    for path in (
        tasks / "window.yml",
        tasks / "open.yml",
        ROOT / "ansible_collections/ascend_resumable/npu/playbooks/compute.yml",
    ):
        assert "ansible_failed_result | ascend_resumable.npu.failure_reason" in path.read_text(), path
        assert "ansible_failed_result.msg" not in path.read_text(), path


@pytest.mark.parametrize(
    ("driver_installed", "refused"),
    [(True, True), (False, False)],
    ids=["upgrade-waits-and-names-it", "fresh-install-not-refused"],
)
def test_a_docker_container_on_davinci_manager_is_waited_for_before_a_driver_upgrade(
    tmp_path: Path, driver_installed: bool, refused: bool
) -> None:
    """The driver installer refuses to install over an installed driver while a running docker container's
    `docker inspect` names /dev/davinci_manager (HDK-DRV v8.5.0 custom variant driver_install.sh:377-422; the
    fixture installer does the same, installer-body.sh devices_busy), even when no process uses the NPUs. idle.yml
    (after the drain) waits for such a container and, when it stays, stops naming it before any installer runs;
    a fresh install (no driver yet) is not refused by it and goes on."""
    state = tmp_path / "fixture-state"
    (state / "containers").mkdir(parents=True)
    # a container started by hand outside Kubernetes, with the devices in its spec and no process on the NPUs
    (state / "containers" / "manual-infer").write_text(
        "kind=manual\ndevices=/dev/davinci_manager /dev/davinci0\npid=\nprocess=\n"
    )
    # the fixtures' environment file (_play points ASCEND_FIXTURE_ENV at tmp_path/none): their state directory
    (tmp_path / "none").write_text("ASCEND_FIXTURE_STATE=%s\n" % state)
    (tmp_path / "sys").mkdir()
    result = _play(
        tmp_path,
        "idle.yml",
        {
            "ascend_npu": {"driver": {"installed": driver_installed}},
            "npu_facts_sysfs_root": str(tmp_path / "sys"),
            "npu_facts_npu_smi": str(tmp_path / "no-npu-smi"),
            "npu_facts_install_root": str(tmp_path / "ascend"),
            "npu_facts_install_info": str(tmp_path / "ascend_install.info"),
            "npu_facts_cann_registry": str(tmp_path / "cann.info"),
            "npu_facts_container_clis": [str(FIXTURES / "ascend" / "docker")],
            "ascend_driver_idle_timeout": 2,
            "ascend_driver_poll_delay": 1,
        },
    )
    if not refused:
        assert not result["failed"], result
        return
    assert result["failed"] and result["task"] == "Stop with what still holds the NPUs", result
    assert "running docker container manual-infer lists /dev/davinci_manager" in result["msg"], result
    assert "refuses to install over the installed driver" in result["msg"], result
