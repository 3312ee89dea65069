"""The driver role's wait for the NPUs after a reboot or a driver change (roles/ascend_driver/tasks/wait_npus.yml,
reached through tasks_from release.yml as compute.yml does), run by ansible-playbook on this machine against the
emulated npu-smi (tests/fixtures/ascend/npu-smi) while the devices still boot. Its node is a KWOK node of a real
API server (tests/cluster's control plane, one per module), left by the window as the driver role leaves it:
cordoned, the NPU DaemonSets' label workerselector removed; the release's kubectl calls (relabel, wait for Ready, read
the allocatable NPUs, uncordon) are the real kubectl v1.28.15's. npu-smi stays the double: no NPU here.

The fixture's device boot time: until ``$STATE/devices_ready_at`` (epoch seconds, what reboot-node.sh writes for
the knob ``device_boot_seconds``) npu-smi answers ``dcmi module initialize failed. ret is -8005``, what
ascend-deployer 26.0.0 module_utils/check_library_utils/npu_checks.py reads as "device not started". A wrapper
around the fixture records every call, so the tests see how often the role read the node:

- devices that come up a few seconds after the start: npu-smi is read more than once (the role retried on
  -8005), the wait ends as soon as they answer, and release.yml returns the node to service;
- devices that do not come up within ascend_driver_npu_wait_timeout: the wait gives up after its retries and
  release.yml fails the node with what npu-smi said and how long it waited (the node stays cordoned).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

from cluster.fixtures import Plane, controlplane
from test_ansible_fixtures import FIXTURES, _node
from test_ansible_installers import _play

WORKER = {"workerselector": "dls-worker-node"}
NPUS = {"huawei.com/Ascend910": 2}


def _booting_node(tmp_path: Path) -> Tuple[Path, Path]:
    """Two 910B chips with a loaded driver; returns (a wrapper of the npu-smi fixture, its call log)."""
    env = _node(tmp_path, device="0xd802", chips=2, running="25.2.0")
    calls = tmp_path / "npu-smi.calls"
    wrapper = tmp_path / "npu-smi"
    wrapper.write_text(
        "#!/bin/bash\n"
        'echo "$(date +%%s.%%N) $*" >>%s\n'
        'ASCEND_FIXTURE_ENV=%s exec %s "$@"\n' % (calls, env["ASCEND_FIXTURE_ENV"], FIXTURES / "npu-smi")
    )
    wrapper.chmod(0o755)
    return wrapper, calls


def _window_node(plane: Plane, name: str) -> Dict[str, Any]:
    """Node ``name`` with its two NPUs as the driver role's window leaves it (cordoned, workerselector removed);
    returns the window record the role wrote for it."""
    plane.add_nodes([controlplane.FakeNode(name, {}, NPUS)])
    plane.kubectl("cordon", name)
    allocatable = {k: str(v) for k, v in NPUS.items()}
    return {"node": name, "drained": True, "was_cordoned": False, "paused_labels": WORKER, "allocatable": allocatable}


def _release_tasks(
    tmp_path: Path, smi: Path, boot_seconds: int, timeout: int, plane: Plane, window: Dict[str, Any]
) -> List[Dict[str, Any]]:
    state = tmp_path / "state"
    return [
        {
            # what reboot-node.sh writes for device_boot_seconds, written here so the play's own start-up
            # time does not eat the boot time
            "name": "The devices boot for %d s" % boot_seconds,
            "ansible.builtin.shell": "echo $(( $(date +%%s) + %d )) > %s" % (boot_seconds, state / "devices_ready_at"),
            "changed_when": False,
        },
        {
            "name": "Release the node (waits for its NPUs first)",
            "ansible.builtin.include_role": {"name": "ascend_resumable.npu.ascend_driver", "tasks_from": "release.yml"},
            "vars": {
                "npu_facts_sysfs_root": str(tmp_path / "sys"),
                "npu_facts_npu_smi": str(smi),
                "npu_facts_install_root": str(tmp_path / "Ascend"),
                "npu_facts_install_info": str(tmp_path / "ascend_install.info"),
                "npu_facts_cann_registry": str(tmp_path / "ascend_cann_install.info"),
                "ascend_driver_state_dir": str(tmp_path / "role-state"),
                "ascend_driver_reboot_marker": str(tmp_path / "run" / "reboot-required"),
                "ascend_driver_window": window,
                "ascend_driver_node_name": window["node"],
                "ascend_driver_kubectl_host": "node",
                "ascend_driver_kubectl": str(plane.bins["kubectl"]),
                "ascend_driver_kubeconfig": str(plane.kubeconfig),
                "ascend_driver_npu_wait_timeout": timeout,
                "ascend_driver_poll_delay": 1,
            },
        },
    ]


def _info_calls(calls: Path) -> List[float]:
    """When `npu-smi info` (the table the wait judges) was called."""
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [float(stamp) for stamp, _, args in (line.partition(" ") for line in lines) if args == "info"]


def _node_of(plane: Plane, name: str) -> Dict[str, Any]:
    return dict(plane.get_json("node", name))


def _outcome(out: str, task: str) -> str:
    """The line ansible-playbook printed after the driver role's task ``task`` (``ok: [node]``, ``skipping: ...``)."""
    lines = out.splitlines()
    heading = f"TASK [ascend_resumable.npu.ascend_driver : {task}]"
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    return next(line for line in lines[start + 1 :] if line.strip())


def test_the_wait_reads_npu_smi_again_until_the_booting_devices_answer(module_plane: Plane, tmp_path: Path) -> None:
    smi, calls = _booting_node(tmp_path)
    window = _window_node(module_plane, "npu-booting")
    tasks = _release_tasks(tmp_path, smi, 4, 30, module_plane, window)
    result = _play(tmp_path, tasks, {"ansible_become": False})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    reads = _info_calls(calls)
    ready_at = int((tmp_path / "state" / "devices_ready_at").read_text())
    # -8005 while booting: read again every ascend_driver_poll_delay (1 s) until they answer, not until the 30 s
    # timeout (a wait that ran to the timeout would fail the play); every read but the last one failed, and
    # Ansible said it retried each time
    assert len(reads) >= 2 and reads[-2] < ready_at <= reads[-1], (reads, ready_at)
    retried = out.count("FAILED - RETRYING: [node]: Wait until npu-smi lists every NPU chip of the node as healthy")
    assert retried == len(reads) - 1, out
    assert "Every NPU chip the node has is listed by npu-smi and healthy" in out
    assert "failed=0" in out
    # back in service: the NPU DaemonSets' label again, Ready and its NPUs allocatable, uncordoned
    node = _node_of(module_plane, "npu-booting")
    assert node["metadata"]["labels"]["workerselector"] == "dls-worker-node" and not node["spec"].get("unschedulable")
    assert _outcome(out, "Wait until the node is Ready") == "ok: [node]"
    assert _outcome(out, "Wait until the NPUs are allocatable again (at least as many as before the window)") == (
        "ok: [node]"
    )


def test_devices_that_never_come_up_fail_the_node_after_the_timeout(module_plane: Plane, tmp_path: Path) -> None:
    smi, calls = _booting_node(tmp_path)
    window = _window_node(module_plane, "npu-never-up")
    result = _play(tmp_path, _release_tasks(tmp_path, smi, 600, 2, module_plane, window), {"ansible_become": False})
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    # the first read and ascend_driver_npu_wait_timeout // ascend_driver_poll_delay = 2 retries, then one
    # more read in the rescue (a failed read sets no facts)
    assert len(_info_calls(calls)) == 4, calls.read_text()
    assert (
        "node: %s info does not answer (rc 187: dcmi module initialize failed. ret is -8005) after waiting 2 s"
        " (ascend_driver_npu_wait_timeout). The node stays cordoned" % smi
    ) in " ".join(out.split()), out
    assert "Resume the node" not in out
    node = _node_of(module_plane, "npu-never-up")
    assert node["spec"]["unschedulable"] is True and "workerselector" not in node["metadata"]["labels"]
