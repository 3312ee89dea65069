"""The driver role's own kubectl calls (roles/ascend_driver/tasks/drain.yml, resume.yml, open.yml) run by
ansible-playbook on this machine with the real kubectl against a real API server: the local control plane of
tests/cluster (kube-apiserver, controller-manager and scheduler v1.28.15, KWOK v0.8.0 playing the kubelet of
fake nodes; module_plane). Every test has a node and a namespace of its own, with real objects on it: the
DaemonSets of a node (kube-proxy on every node, an NPU device plugin on nodes labelled workerselector), a
Deployment pod with an emptyDir volume, a Deployment pod selected by a PodDisruptionBudget that allows no
disruption (minAvailable = replicas), a bare pod. The role gets the real kubectl and the cluster's kubeconfig
through its own variables (ascend_driver_kubectl, ascend_driver_kubeconfig); ansible-playbook itself runs without
KUBECONFIG, so only the role's kubectl environment reaches the cluster.

- The role's drain flags pass the DaemonSet and emptyDir pods: the node is cordoned, the Deployment pods are
  evicted (their replacements find no node), kube-proxy stays, and the device plugin goes once the role removed
  the label it selects (the DaemonSet controller deletes it).
- A PodDisruptionBudget fails the drain at the role's --timeout with kubectl's reason; the budgeted pod and the
  NPU DaemonSets stay, the node stays cordoned (window.yml's rescue restores it).
- A bare pod is refused (no --force: the operator decides); kubectl evicts nothing.
- Re-labelling reports changed only when kubectl labelled the node ("not labeled" is no change), and the
  device plugin comes back onto the node.
- open.yml (the window for CANN or the container engine) stops with kubectl's refusal and puts the node back.

The emulated kubectl (tests/fixtures/kube/kubectl) stays for the molecule scenarios, whose containers cannot
reach a loopback API server; the kubectl calls the roles read the words of are made to it and to the real kubectl
here, and must answer alike. idle.yml (after the drain: no NPU process or container may hold the devices) calls no
kubectl; it runs against the docker double (tests/fixtures/ascend/docker): there is no NPU here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TypeVar

import pytest
import yaml
from cluster.fixtures import Plane, controlplane
from conftest import FIXTURES, ROOT
from role_code import PLAYBOOK, ROLES, playbook_env

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")

WORKER = {"workerselector": "dls-worker-node"}
NPUS = {"huawei.com/Ascend910": 8}
DRAIN_TASK = "Drain the node (pods using NPUs are evicted; DaemonSet pods stay)"
#: the role's own drain flags (defaults/main.yml): what every test drains with, only --timeout shortened where a
#: budget blocks the drain
ROLE_DRAIN_ARGS: List[str] = yaml.safe_load((ROLES / "ascend_driver" / "defaults" / "main.yml").read_text())[
    "ascend_driver_drain_args"
]
BLOCKED_TIMEOUT = "2s"
T = TypeVar("T")

#: the DaemonSets every test node gets: kube-proxy everywhere, the NPU device plugin where workerselector is
DAEMONSETS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-proxy, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: kube-proxy}}
  template:
    metadata: {labels: {k8s-app: kube-proxy}}
    spec:
      containers: [{name: kube-proxy, image: registry.invalid/kube-proxy:1}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ascend-device-plugin, namespace: kube-system}
spec:
  selector: {matchLabels: {name: ascend-device-plugin}}
  template:
    metadata: {labels: {name: ascend-device-plugin}}
    spec:
      nodeSelector: {workerselector: dls-worker-node}
      containers: [{name: device-plugin, image: registry.invalid/ascend-k8sdeviceplugin:1}]
"""


@pytest.fixture(scope="module")
def plane(module_plane: Plane) -> Plane:
    module_plane.kubectl("apply", "-f", "-", stdin=DAEMONSETS)
    return module_plane


def _until(probe: Callable[[], Optional[T]], what: str, seconds: float = 60) -> T:
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f} s: {what}")
        time.sleep(0.5)


def _deployment(name: str, node: str, emptydir: bool = False) -> Dict[str, Any]:
    pod: Dict[str, Any] = {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "containers": [{"name": name, "image": f"registry.invalid/{name}:1"}],
    }
    if emptydir:
        pod["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
        pod["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    }


def _pods(plane: Plane, node: str) -> Dict[str, Dict[str, Any]]:
    """The pods bound to ``node``, by app (the Deployment or DaemonSet they belong to, or the bare pod's name)."""
    items = plane.get_json("pods", "-A", "--field-selector", f"spec.nodeName={node}")["items"]
    out: Dict[str, Dict[str, Any]] = {}
    for pod in items:
        labels = pod["metadata"].get("labels") or {}
        app = labels.get("app") or labels.get("k8s-app") or labels.get("name") or pod["metadata"]["name"]
        out[app] = pod
    return out


def _running(plane: Plane, node: str, apps: List[str]) -> Dict[str, str]:
    """Wait until a pod of each app runs on ``node`` and none there is being deleted; returns app -> pod name."""

    def probe() -> Optional[Dict[str, str]]:
        pods = _pods(plane, node)
        if any("deletionTimestamp" in p["metadata"] for p in pods.values()):
            return None
        if all(pods.get(a, {}).get("status", {}).get("phase") == "Running" for a in apps):
            return {a: pods[a]["metadata"]["name"] for a in apps}
        return None

    return _until(probe, f"{apps} running on {node}")


def _cluster(
    plane: Plane, node: str, budget: bool = False, bare: bool = False, labels: bool = True, deployments: bool = True
) -> Dict[str, str]:
    """Node ``node`` (an NPU worker; ``labels``: with workerselector) with, in namespace ``node``: a training
    Deployment (``budget``: selected by a PodDisruptionBudget of minAvailable 1 = its replicas), a cache
    Deployment with an emptyDir volume, a bare pod (``bare``). Returns app -> pod name of what runs on it."""
    plane.add_nodes([controlplane.FakeNode(node, WORKER if labels else {}, NPUS)])
    plane.kubectl("create", "namespace", node)
    # pods are admitted once the namespace's ServiceAccount exists
    _until(lambda: plane.kubectl("get", "sa", "default", "-n", node, check=False).returncode == 0, "ServiceAccount")
    objects: List[Dict[str, Any]] = []
    if deployments:
        objects += [_deployment("train", node), _deployment("cache", node, emptydir=True)]
    if budget:
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "train"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "train"}}},
            }
        )
    if bare:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "debug", "labels": {"app": "debug"}},
                "spec": {"nodeName": node, "containers": [{"name": "debug", "image": "registry.invalid/debug:1"}]},
            }
        )
    if objects:
        manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        plane.kubectl("apply", "-n", node, "-f", "-", stdin=manifest)
    apps = ["kube-proxy"] + (["train", "cache"] if deployments else []) + (["ascend-device-plugin"] if labels else [])
    apps += ["debug"] if bare else []
    running = _running(plane, node, apps)
    if budget:  # the disruption controller has counted the pod: the budget allows no disruption now

        def counted() -> bool:
            status = plane.get_json("pdb", "train", "-n", node).get("status", {})
            return bool(status.get("currentHealthy") == 1 and status.get("disruptionsAllowed") == 0)

        _until(counted, "the PodDisruptionBudget counted")
    return running


def _node(plane: Plane, name: str) -> Dict[str, Any]:
    return dict(plane.get_json("node", name))


def _play(
    tmp_path: Path, node: str, tasks_from: str, extra: Optional[Dict[str, Any]] = None, plane: Optional[Plane] = None
) -> Dict[str, Any]:
    """Run one task file of the role on host ``node`` (local; its own kubectl host); returns what the play
    recorded in out.json. The role's kubectl is the real one of ``plane``; without a plane the task file calls no
    kubectl and the NPU doubles (tests/fixtures/ascend) read their environment file from tmp_path/none."""
    out = tmp_path / "out.json"
    play_vars: Dict[str, Any] = {
        "ascend_driver_kubectl_host": node,
        "ascend_driver_daemonset_selector": WORKER,
        "ascend_driver_plan": {"order": ["driver"], "driver": {"reason": "driver 25.3.0 wanted"}},
        "ascend_driver_window": None,
    }
    if plane is not None:
        play_vars.update(
            ascend_driver_kubectl=str(plane.bins["kubectl"]), ascend_driver_kubeconfig=str(plane.kubeconfig)
        )
    play_vars.update(extra or {})
    play = [
        {
            "name": "One task file of ascend_driver",
            "hosts": node,
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
            {"all": {"hosts": {node: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
        )
    )
    env = playbook_env(tmp_path, "%s:%s" % (ROOT / "collections", ROOT))
    env.pop("KUBECONFIG", None)  # the role's ascend_driver_kubeconfig is the only way to the cluster
    if plane is None:
        env["ASCEND_FIXTURE_ENV"] = str(tmp_path / "none")
    # the window record's path is a role var: only extra vars override it
    window_file = "ascend_driver_window_file=%s" % (tmp_path / "w.json")
    argv = [str(PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), "-e", window_file, str(tmp_path / "play.yml")]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.exists(), run.stdout + run.stderr
    return dict(json.loads(out.read_text()))


def _blocked_args() -> List[str]:
    """The role's drain flags with a short --timeout, so a drain a budget blocks ends in seconds."""
    assert any(a.startswith("--timeout=") for a in ROLE_DRAIN_ARGS), ROLE_DRAIN_ARGS  # a bounded drain
    return [a for a in ROLE_DRAIN_ARGS if not a.startswith("--timeout=")] + ["--timeout=" + BLOCKED_TIMEOUT]


def _gone(plane: Plane, node: str, app: str) -> bool:
    return app not in _pods(plane, node)


def test_the_roles_drain_flags_pass_daemonset_and_emptydir_pods(plane: Plane, tmp_path: Path) -> None:
    node = "w-drain"
    before = _cluster(plane, node)
    result = _play(tmp_path, node, "drain.yml", plane=plane)
    assert result == {"failed": False, "relabel": {}}
    spec = _node(plane, node)
    assert spec["spec"]["unschedulable"] is True and "workerselector" not in spec["metadata"]["labels"]
    # the Deployment pods were evicted; their replacements cannot go back onto the cordoned node
    after = _pods(plane, node)
    assert "train" not in after and "cache" not in after, sorted(after)
    names = {p["metadata"]["name"] for p in plane.get_json("pods", "-n", node)["items"]}
    assert not names & {before["train"], before["cache"]}
    # kube-proxy stays where it ran; the device plugin goes with the label its DaemonSet selects
    assert after["kube-proxy"]["metadata"]["name"] == before["kube-proxy"]
    _until(lambda: _gone(plane, node, "ascend-device-plugin"), "the device plugin paused")


def test_a_disruption_budget_fails_the_drain_with_kubectls_reason(plane: Plane, tmp_path: Path) -> None:
    node = "w-budget"
    before = _cluster(plane, node, budget=True)
    started = time.monotonic()
    result = _play(tmp_path, node, "drain.yml", {"ascend_driver_drain_args": _blocked_args()}, plane=plane)
    assert result["failed"] and result["task"] == DRAIN_TASK, result
    assert "Cannot evict pod as it would violate the pod's disruption budget." in result["stderr"]
    reached = 'error when evicting pods/"%s" -n "%s": global timeout reached: %s' % (
        before["train"],
        node,
        BLOCKED_TIMEOUT,
    )
    assert reached in result["stderr"], result["stderr"]
    assert time.monotonic() - started < 120  # the role's --timeout ended it, not the test's
    # the window's rescue (window.yml) restores the node and stops with this reason; the drain itself left the
    # node cordoned, the NPU DaemonSets running (not paused yet), the budgeted pod in place, the other evicted
    spec = _node(plane, node)
    assert spec["spec"]["unschedulable"] is True and spec["metadata"]["labels"]["workerselector"] == "dls-worker-node"
    after = _pods(plane, node)
    assert after["train"]["metadata"]["name"] == before["train"]
    assert after["ascend-device-plugin"]["metadata"]["name"] == before["ascend-device-plugin"]
    assert "cache" not in after


def test_a_bare_pod_is_refused_without_force(plane: Plane, tmp_path: Path) -> None:
    node = "w-bare"
    before = _cluster(plane, node, bare=True)
    result = _play(tmp_path, node, "drain.yml", plane=plane)
    assert result["failed"] and result["task"] == DRAIN_TASK, result
    assert "declare no controller (use --force to override): %s/debug" % node in result["stderr"], result["stderr"]
    # kubectl evicts nothing when a pod is refused; the node stays cordoned
    assert {a: p["metadata"]["name"] for a, p in _pods(plane, node).items()} == before
    assert _node(plane, node)["spec"]["unschedulable"] is True


@pytest.mark.parametrize(("labelled", "changed"), [(False, True), (True, False)])
def test_relabel_is_changed_only_when_kubectl_labeled(
    plane: Plane, tmp_path: Path, labelled: bool, changed: bool
) -> None:
    """kubectl prints "node/N not labeled" when the label is already there: no change."""
    node = "w-relabel-%s" % ("on" if labelled else "off")
    _cluster(plane, node, labels=labelled)
    plane.kubectl("cordon", node)  # by someone else before the window: it stays cordoned
    window = {"node": node, "drained": True, "was_cordoned": True, "paused_labels": WORKER, "allocatable": {}}
    extra = {"ascend_driver_window": window, "ascend_driver_resume_wait": False}
    result = _play(tmp_path, node, "resume.yml", extra, plane=plane)
    assert not result["failed"], result
    [item] = result["relabel"]["results"]
    assert item["stdout"] == ("node/%s not labeled" if labelled else "node/%s labeled") % node
    assert item["changed"] is changed
    spec = _node(plane, node)
    assert spec["metadata"]["labels"]["workerselector"] == "dls-worker-node" and spec["spec"]["unschedulable"] is True
    _running(plane, node, ["ascend-device-plugin"])  # the NPU DaemonSets run on it again


@pytest.mark.parametrize("holder", ["disruption-budget", "bare-pod"])
def test_a_window_for_cann_or_the_engine_stops_with_kubectls_reason(plane: Plane, tmp_path: Path, holder: str) -> None:
    """open.yml (the window compute.yml opens for a CANN-only or engine-only change) stopped with
    ansible_failed_result.msg, "non-zero return code", as the reason a node was held; it names kubectl's
    "error:" line, as window.yml does, and puts the node back into service."""
    node = "w-open-%s" % holder
    before = _cluster(plane, node, budget=holder == "disruption-budget", bare=holder == "bare-pod")
    args = _blocked_args() if holder == "disruption-budget" else ROLE_DRAIN_ARGS
    extra = {"ascend_driver_window_reason": "CANN", "ascend_driver_state_dir": str(tmp_path / "state")}
    result = _play(tmp_path, node, "open.yml", dict(extra, ascend_driver_drain_args=args), plane=plane)
    msg = " ".join(result["msg"].split())
    assert result["failed"] and result["task"] == "Stop with what holds the node", result
    # kubectl's last "error:" line is the reason
    assert '%s could not be taken out of service for CANN: error: unable to drain node "%s"' % (node, node) in msg, msg
    if holder == "disruption-budget":
        held = 'error when evicting pods/"%s" -n "%s": global timeout reached: %s' % (
            before["train"],
            node,
            BLOCKED_TIMEOUT,
        )
    else:
        held = "declare no controller (use --force to override): %s/debug" % node
    assert held + ", continuing command.... Nothing was installed;" in msg, msg
    assert "non-zero return code" not in msg
    # what kubectl evicted before it stopped is said, not hidden behind "nothing was changed"
    assert "pods kubectl evicted before it stopped stay evicted" in msg
    assert "the node was put back into service" in msg
    spec = _node(plane, node)
    assert not spec["spec"].get("unschedulable") and spec["metadata"]["labels"]["workerselector"] == "dls-worker-node"


#: the emulated kubectl of the molecule scenarios (tests/fixtures/kube/kubectl)
EMULATED = FIXTURES / "kube" / "kubectl"
#: what the roles run on the kubectl host and read the words of (changed_when, failure_reason), in this order
ROLE_CALLS = [
    ["label", "node", "NODE", "workerselector=dls-worker-node", "--overwrite"],
    ["label", "node", "NODE", "workerselector-"],
    ["label", "node", "NODE", "workerselector-"],
    ["label", "node", "NODE", "workerselector=dls-worker-node", "--overwrite"],
    ["label", "node", "NODE", "workerselector=other"],
    ["cordon", "NODE"],
    ["cordon", "NODE"],
    ["drain", "NODE", "--timeout=30s"],
    ["drain", "NODE", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s"],
    ["uncordon", "NODE"],
    ["uncordon", "NODE"],
    ["wait", "--for=condition=Ready", "node/NODE", "--timeout=30s"],
    ["get", "node", "w-absent", "-o", "json"],
]


def test_the_emulated_kubectl_of_the_molecule_scenarios_says_what_kubectl_says(plane: Plane, tmp_path: Path) -> None:
    """The molecule scenarios run the roles against the emulated kubectl (their containers cannot reach this API
    server); the roles decide changed from its words ("already cordoned", "unlabeled", "not labeled") and stop on its
    refusals. The same calls on a node with the same DaemonSet pods: the same exit codes and output, pod names aside,
    and the drain refusal's words (its "due to error:" spacing is kubectl v1.28's here, v0.34's in the double)."""
    node = "w-words"
    running = _cluster(plane, node, deployments=False)
    env = dict(os.environ, KUBE_FIXTURE_STATE=str(tmp_path / "kube"), ASCEND_FIXTURE_ENV=str(tmp_path / "none"))
    env.pop("KUBECONFIG", None)
    emulated: Dict[str, str] = {}
    for app, label in (("ascend-device-plugin", "name=ascend-device-plugin"), ("kube-proxy", "k8s-app=kube-proxy")):
        subprocess.run(
            [str(EMULATED), "fixture", "daemonset-pod", "kube-system", app, label, node], env=env, check=True
        )
        emulated[app] = "%s-%s-0" % (app, node)
    subprocess.run(
        [str(EMULATED), "fixture", "node", node, *("%s=%s" % kv for kv in WORKER.items())], env=env, check=True
    )

    def named(text: str, names: Dict[str, str]) -> str:
        for app, name in names.items():
            text = text.replace(name, "<%s>" % app)
        return text

    for call in ROLE_CALLS:
        argv = [word.replace("NODE", node) for word in call]
        if argv[0] == "drain":  # the relabelled node's device plugin pod is a new one
            running = _running(plane, node, list(running))
        real = plane.kubectl(*argv, check=False)
        double = subprocess.run([str(EMULATED), *argv], env=env, capture_output=True, text=True, timeout=60)
        assert (double.returncode, double.stdout) == (real.returncode, real.stdout), argv
        if argv[0] == "drain" and real.returncode:
            refusal = "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
            refusal += "kube-system/<ascend-device-plugin>, kube-system/<kube-proxy>"
            assert refusal in named(real.stderr, running) and refusal in named(double.stderr, emulated), argv
            assert real.stderr.startswith('error: unable to drain node "%s" due to error:' % node)
            assert double.stderr.startswith('error: unable to drain node "%s" due to error:' % node)
        else:
            assert named(double.stderr, emulated) == named(real.stderr, running), argv


# kubectl v1.28.15's stderr of a drain a PodDisruptionBudget held until --timeout=2s (seen from the control plane)
PDB_STDERR = [
    "Warning: ignoring DaemonSet-managed Pods: kube-system/kube-proxy-47df2",
    'error when evicting pods/"train-7dc76dbc89-fj775" -n "default" (will retry after 5s): '
    "Cannot evict pod as it would violate the pod's disruption budget.",
    'error: unable to drain node "w1" due to error:error when evicting pods/"train-7dc76dbc89-fj775" -n "default": '
    "global timeout reached: 2s, continuing command...",
    "There are pending nodes to be drained:",
    " w1",
    'error when evicting pods/"train-7dc76dbc89-fj775" -n "default": global timeout reached: 2s',
]


def test_both_windows_name_a_failure_with_one_filter() -> None:
    """window.yml (driver/firmware) and open.yml (CANN, the engine) stop with the same reason extraction, and so
    does compute.yml's hold: kubectl's last error line, else the task's msg."""
    from role_code import plugin

    reason = plugin("filter", "failure_reason").failure_reason
    drain = {"msg": "non-zero return code", "rc": 1, "stderr_lines": PDB_STDERR}
    assert reason(drain) == PDB_STDERR[2]
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
        "w1",
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
