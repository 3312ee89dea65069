"""Unit tests of the emulated vendor pieces (tests/fixtures/ascend): npu-smi tables as the
facts module parses them, the package set, the installers' option contract (the parts that run
without touching a machine), and the emulated kubectl / docker.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import FIXTURES as TEST_FIXTURES
from role_code import plugin

FIXTURES = TEST_FIXTURES / "ascend"

hw = plugin("module_utils", "ascend_hardware")


def _node(tmp_path: Path, device: str = "0xd802", chips: int = 2, running: str = "25.2.0") -> Dict[str, str]:
    """A fake sysfs + fixture state; returns the environment the fixture scripts read."""
    sysfs, state = tmp_path / "sys", tmp_path / "state"
    (state / "containers").mkdir(parents=True)
    (state / "running_driver").write_text(running + "\n")
    (state / "running_firmware").write_text("7.1.0.11.220\n")
    (sysfs / "module" / "drv_pcie_host").mkdir(parents=True)
    for i in range(chips):
        dev = sysfs / "bus" / "pci" / "devices" / ("0000:%02x:00.0" % (i + 1))
        dev.mkdir(parents=True)
        for name, value in [
            ("vendor", "0x19e5"),
            ("device", device),
            ("subsystem_vendor", "0x19e5"),
            ("subsystem_device", "0x3000"),
            ("ascend_board_id", "0xb1"),
        ]:
            (dev / name).write_text(value + "\n")
    env_file = tmp_path / "fixture.env"
    env_file.write_text(
        "ASCEND_FIXTURE_SYSFS=%s\nASCEND_FIXTURE_STATE=%s\nASCEND_FIXTURE_HOME=%s\n" % (sysfs, state, FIXTURES)
    )
    return {"ASCEND_FIXTURE_ENV": str(env_file), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _run(argv: List[str], env: Dict[str, str], check: bool = True) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=check, timeout=60)


def test_fixture_npu_smi_910b_table(tmp_path: Path) -> None:
    env = _node(tmp_path)
    (tmp_path / "state" / "busy").write_text("")
    parsed = hw.parse_npu_smi(_run([str(FIXTURES / "npu-smi"), "info"], env).stdout)
    assert parsed["driver_version"] == "25.2.0"
    assert parsed["npus"] == {"0": "OK", "1": "OK"}
    assert [c["phy_id"] for c in parsed["chips"]] == [None, None]
    assert [p["pid"] for p in parsed["processes"]] == ["4242"]


def test_fixture_npu_smi_a3_table(tmp_path: Path) -> None:
    env = _node(tmp_path, device="0xd803", chips=4)
    parsed = hw.parse_npu_smi(_run([str(FIXTURES / "npu-smi"), "info"], env).stdout)
    assert parsed["phy_id_column"]
    assert parsed["npus"] == {"0": "OK", "1": "OK"}
    assert [(c["npu"], c["chip"], c["phy_id"]) for c in parsed["chips"]] == [
        ("0", "0", "0"),
        ("0", "1", "1"),
        ("1", "0", "2"),
        ("1", "1", "3"),
    ]
    board = hw.parse_board(_run([str(FIXTURES / "npu-smi"), "info", "-t", "board", "-i", "1"], env).stdout)
    assert board == {"board_id": "0xb1", "firmware_version": "7.1.0.11.220", "software_version": "25.2.0"}


def test_fixture_npu_smi_atlas_950_table(tmp_path: Path) -> None:
    """Atlas 350/950 (19e5:d806) print the "NPU ID | Name" layout, not the 910B one."""
    env = _node(tmp_path, device="0xd806", chips=2)
    (tmp_path / "state" / "busy").write_text("")
    out = _run([str(FIXTURES / "npu-smi"), "info"], env).stdout
    assert "| NPU ID | Name " in out and "| Chip" not in out
    # the NPU_SMI_V2 process table: no chip column (verylucky01/driver 999c25d7 npucli/src/npu_info_print.c:626-629)
    assert "| NPU ID                    | Process id    |" in out and "| NPU     Chip" not in out
    parsed = hw.parse_npu_smi(out)
    assert parsed["npus"] == {"0": "OK", "1": "OK"} and parsed["driver_version"] == "25.2.0"
    assert [(c["chip"], c["name"], c["bus_id"]) for c in parsed["chips"]] == [
        ("0", "Ascend950PR", "0000:01:00.0"),
        ("0", "Ascend950PR", "0000:02:00.0"),
    ]
    assert [p["pid"] for p in parsed["processes"]] == ["4242"]
    board = _run([str(FIXTURES / "npu-smi"), "info", "-t", "board", "-i", "1"], env).stdout
    assert "Ascend950PR" in board and hw.parse_board(board)["firmware_version"] == "7.1.0.11.220"


def test_fixture_reboot_device_boot_time(tmp_path: Path) -> None:
    """After reboot-node.sh the devices are not started for device_boot_seconds (default 0: at once)."""
    env = _node(tmp_path)
    state, root = tmp_path / "state", tmp_path / "Ascend"
    (root / "driver" / "tools").mkdir(parents=True)
    (root / "driver" / "version.info").write_text("Version=25.3.0\n")
    (root / "driver" / "tools" / "upgrade-tool").write_text("#!/bin/sh\n")
    (root / "driver" / "tools" / "upgrade-tool").chmod(0o755)
    (root / "firmware").mkdir()
    (root / "firmware" / "version.info").write_text("Version=7.8.0.1.220\n")
    env = dict(env, ASCEND_FIXTURE_ROOT=str(root))
    reboot, smi = str(FIXTURES / "reboot-node.sh"), str(FIXTURES / "npu-smi")
    _run([reboot], env)
    assert hw.parse_npu_smi(_run([smi, "info"], env).stdout)["driver_version"] == "25.3.0"
    (state / "device_boot_seconds").write_text("600\n")
    _run([reboot], env)
    booting = _run([smi, "info"], env, check=False)
    # npu-smi prints the dcmi error on stdout and exits with its low byte (-8005 & 255: npu_smi.c:147, :207)
    assert booting.returncode == 187 and "dcmi module initialize failed. ret is -8005" in booting.stdout
    kube = [KUBECTL, "get", "node", "n1", "-o", "json"]
    _run([KUBECTL, "fixture", "node", "n1", "--local", "workerselector=dls-worker-node"], env)
    assert "huawei.com/Ascend910" not in json.loads(_run(kube, env).stdout)["status"]["allocatable"]
    ready_at = int((state / "devices_ready_at").read_text())
    assert 590 <= ready_at - time.time() <= 600
    (state / "devices_ready_at").write_text("%d\n" % (time.time() - 1))  # ten minutes later
    board = hw.parse_board(_run([smi, "info", "-t", "board", "-i", "0"], env).stdout)
    assert board["software_version"] == "25.3.0" and board["firmware_version"] == "7.8.0.1.220"
    assert json.loads(_run(kube, env).stdout)["status"]["allocatable"]["huawei.com/Ascend910"] == "2"
    (state / "device_boot_seconds").write_text("soon\n")
    assert _run([reboot], env, check=False).returncode == 2


def test_fixture_npu_smi_without_a_loaded_driver(tmp_path: Path) -> None:
    env = _node(tmp_path)
    (tmp_path / "sys" / "module" / "drv_pcie_host").rmdir()
    result = _run([str(FIXTURES / "npu-smi"), "info"], env, check=False)
    assert result.returncode == 187 and "-8005" in result.stdout and result.stderr == ""


def test_generated_packages_are_deterministic(tmp_path: Path) -> None:
    for out in (tmp_path / "a", tmp_path / "b"):
        subprocess.run([str(FIXTURES / "build-packages.sh"), str(out)], check=True)
    names = sorted(p.name for p in (tmp_path / "a").glob("*.run"))
    assert len(names) == 11
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert hw.package_info(name) is not None, name
    version = _run(
        ["bash", str(tmp_path / "a" / "Ascend-hdk-910b-npu-driver_25.3.0_linux-x86-64.run"), "--version"],
        dict(os.environ),
    ).stdout.strip()
    assert version == "25.3.0"


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("packages")
    subprocess.run([str(FIXTURES / "build-packages.sh"), str(out)], check=True)
    return out


@pytest.mark.parametrize(
    ("package", "args", "error"),
    [
        # driver and firmware take --full, CANN --install (ADEPLOY library/process_npu.py,
        # library/install_cann.py; HDK-DRV install.sh, args_parse.sh)
        ("Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run", ["--install", "--quiet"], "unknown option '--install'"),
        # --install-for-all is a driver option, not a firmware one (2.2)
        ("Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run", ["--full", "--install-for-all"], "unknown option"),
        # the run-user options belong to driver and firmware, not to CANN (2.2)
        ("Ascend-cann-toolkit_8.5.0_linux-x86_64.run", ["--install", "--install-username=x"], "unknown option"),
        ("Ascend-cann-toolkit_8.5.0_linux-x86_64.run", ["--install", "--type=toolkit"], "unknown option"),
        ("Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run", ["--full", "--upgrade"], "only one of"),
        ("Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run", ["--quiet"], "no action given"),
    ],
)
def test_installers_refuse_what_the_vendor_refuses(packages: Path, package: str, args: List[str], error: str) -> None:
    result = _run(["bash", str(packages / package), "--nox11", *args], dict(os.environ), check=False)
    assert result.returncode == 1
    assert error in result.stderr


def test_installers_unpack_their_version_info(packages: Path, tmp_path: Path) -> None:
    package = packages / "Ascend-hdk-910b-npu-driver_25.3.0_linux-x86-64.run"
    _run(["bash", str(package), "--noexec", "--extract=%s" % tmp_path], dict(os.environ))
    text = (tmp_path / "driver" / "version.info").read_text()
    assert "Version=25.3.0" in text and "compatible_version_fw=[6.4.0,6.4.99],[7.7.0,7.8.99]" in text


KUBECTL = str(TEST_FIXTURES / "kube" / "kubectl")


def test_emulated_kubectl_and_docker(tmp_path: Path) -> None:
    """The maintenance window on a node that is its own kubectl host (registered --local)."""
    env = _node(tmp_path, chips=8)
    state = tmp_path / "state"
    (state / "containers" / "ds-device-plugin").write_text("kind=daemonset\ndevices=/dev/davinci_manager\npid=1\n")
    (state / "containers" / "pod-train").write_text("kind=pod\ndevices=/dev/davinci0\npid=2\nprocess=python3\n")
    kubectl, docker = KUBECTL, str(FIXTURES / "docker")
    unknown = _run([kubectl, "get", "node", "n1", "-o", "json"], env, check=False)
    assert unknown.returncode == 1 and 'nodes "n1" not found' in unknown.stderr
    _run([kubectl, "fixture", "node", "n1", "--local", "workerselector=dls-worker-node"], env)

    def node() -> Dict[str, object]:
        return dict(json.loads(_run([kubectl, "get", "node", "n1", "-o", "json"], env).stdout))

    assert node()["status"]["allocatable"]["huawei.com/Ascend910"] == "8"  # type: ignore[index]
    assert len(_run([docker, "ps", "-q"], env).stdout.split()) == 2
    refused = _run([kubectl, "drain", "n1"], env, check=False)
    assert refused.returncode == 1 and refused.stderr.startswith(
        'error: unable to drain node "n1" due to error: cannot delete DaemonSet-managed Pods (use --ignore-daemonsets'
        " to ignore): kube-system/ds-device-plugin, continuing command...\n"
    )
    assert (state / "containers" / "pod-train").exists()  # nothing evicted
    bad = _run([kubectl, "drain", "n1", "--ignore-daemonsets", "--timeout=ten"], env, check=False)
    assert bad.returncode == 1 and 'invalid duration "ten"' in bad.stderr
    assert "evicting pod default/pod-train" in _run([kubectl, "drain", "n1", "--ignore-daemonsets"], env).stdout
    assert _run([kubectl, "cordon", "n1"], env).stdout.strip() == "node/n1 already cordoned"
    assert _run([kubectl, "label", "node", "n1", "workerselector-"], env).stdout.strip() == "node/n1 unlabeled"
    assert _run([docker, "ps", "-q"], env).stdout.split() == []
    assert "huawei.com/Ascend910" not in node()["status"]["allocatable"]  # type: ignore[index]
    relabel = [kubectl, "label", "node", "n1", "workerselector=dls-worker-node", "--overwrite"]
    assert _run(relabel, env).stdout.strip() == "node/n1 labeled"
    assert _run([kubectl, "uncordon", "n1"], env).stdout.strip() == "node/n1 uncordoned"
    inspect = json.loads(_run([docker, "inspect", *_run([docker, "ps", "-q"], env).stdout.split()], env).stdout)
    holder = {
        "runtime": "docker",
        "id": inspect[0]["Id"][:12],
        "name": "ds-device-plugin",
        "pid": "1",
        "privileged": False,
    }
    assert hw.docker_holders(json.dumps(inspect)) == [dict(holder, devices=["/dev/davinci_manager"])]
    assert (state / "kubectl.log").read_text().splitlines()[:2] == ["get node n1 -o json", "get node n1 -o json"]


def test_emulated_crictl_reproduces_containerds_privileged_spec(tmp_path: Path) -> None:
    """containerd puts every host device into a privileged container's spec (containerd v1.7.27
    pkg/cri/server/container_create_linux.go:225-231, oci/utils_unix.go:42-44); crictl inspect shows
    containerd's ContainerInfo (pkg/cri/server/container_status.go:128-139)."""
    env = _node(tmp_path, chips=2)
    state = tmp_path / "state"
    (state / "containers" / "kube-proxy").write_text("kind=system\nprivileged=true\npid=31\nprocess=kube-proxy\n")
    (state / "containers" / "pod-train").write_text("kind=pod\ndevices=/dev/davinci1\npid=401\nprocess=python3\n")
    crictl = str(FIXTURES / "crictl")
    ids = _run([crictl, "ps", "-q"], env).stdout.split()
    assert len(ids) == 2 and all(len(i) == 64 for i in ids)
    by_name = {}
    for cid in ids:
        doc = json.loads(_run([crictl, "inspect", cid], env).stdout)
        by_name[doc["status"]["metadata"]["name"]] = doc
    proxy = by_name["kube-proxy"]["info"]
    assert proxy["pid"] == 31 and proxy["config"]["linux"]["security_context"]["privileged"] is True
    paths = [d["path"] for d in proxy["runtimeSpec"]["linux"]["devices"]]
    assert {"/dev/davinci0", "/dev/davinci1", "/dev/davinci_manager", "/dev/null"} <= set(paths)
    holders = hw.crictl_holders(json.dumps(by_name["kube-proxy"]))
    assert holders[0]["privileged"] and holders[0]["pid"] == "31"
    # no process of kube-proxy is on the NPUs (npu-smi lists none, it opens no /dev/davinci*): not busy
    assert not hw.npu_holders([], [], holders)["busy"]
    missing = _run([crictl, "inspect", "0" * 64], env, check=False)
    assert missing.returncode == 1 and "NotFound" in missing.stderr
    assert _run([crictl, "rm", ids[0]], env, check=False).returncode == 1


def test_emulated_kubectl_refuses_what_kubectl_refuses(tmp_path: Path) -> None:
    """Labels, pods and waits on a management host's view of the cluster (nodes not --local)."""
    env = dict(os.environ, KUBE_FIXTURE_STATE=str(tmp_path), ASCEND_FIXTURE_ENV=str(tmp_path / "none"))
    k = KUBECTL
    _run([k, "fixture", "node", "w1", "accelerator-type=module"], env)
    _run([k, "fixture", "daemonset-pod", "kube-system", "ascend-device-plugin-daemonset", "name=dp", "w1"], env)

    def label(*items: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
        return _run([k, "label", "node", "w1", *items], env, check=False)

    other = label("accelerator-type=module-910b-8")
    assert other.returncode == 1 and "already has a value (module), and --overwrite is false" in other.stderr
    assert label("bad key=x").returncode == 1 and label("k=" + "v" * 64).returncode == 1
    assert label("-k=v").returncode == 1
    # a refused call applies nothing, not even its valid items
    assert label("team=a", "accelerator-type=x").returncode == 1
    assert "team" not in json.loads(_run([k, "get", "node", "w1", "-o", "json"], env).stdout)["metadata"]["labels"]
    assert label("accelerator-type=module").stdout.strip() == "node/w1 not labeled"
    assert label("accelerator-type=module-910b-8", "--overwrite").stdout.strip() == "node/w1 labeled"
    assert label("gone-").stdout.splitlines() == ['label "gone" not found.', "node/w1 not labeled"]
    assert _run([k, "label", "node", "w9", "a=b"], env, check=False).returncode == 1
    assert _run([k, "wait", "--for=condition=Ready", "node/w1", "--timeout=5s"], env).stdout.strip() == (
        "node/w1 condition met"
    )
    (tmp_path / "node_not_ready").write_text("")
    assert _run([k, "wait", "--for=condition=Ready", "node/w1"], env, check=False).returncode == 1
    # the device plugin pod: drain keeps it (DaemonSet), delete replaces it under a new name
    drained = _run([k, "drain", "w1", "--ignore-daemonsets"], env)
    assert "ignoring DaemonSet-managed Pods: kube-system/ascend-device-plugin-daemonset-w1-0" in drained.stderr
    pods = [
        k,
        "get",
        "pods",
        "-n",
        "kube-system",
        "-l",
        "name=dp",
        "--field-selector",
        "spec.nodeName=w1",
        "-o",
        "json",
    ]
    before = [p["metadata"]["name"] for p in json.loads(_run(pods, env).stdout)["items"]]
    deleted = _run(
        [k, "delete", "pods", "-n", "kube-system", "-l", "name=dp", "--field-selector", "spec.nodeName=w1"], env
    )
    assert deleted.stdout.strip() == 'pod "%s" deleted' % before[0]
    after = [p["metadata"]["name"] for p in json.loads(_run(pods, env).stdout)["items"]]
    assert len(after) == 1 and after != before
    none = _run([k, "delete", "pods", "-n", "kube-system", "-l", "name=other"], env)
    assert none.returncode == 0 and "No resources found" in none.stderr
    missing = _run(
        [k, "get", "pods", "-n", "kube-system", "--field-selector", "status.phase=x", "-o", "json"], env, check=False
    )
    assert missing.returncode == 1
    assert (
        _run(
            [k, "--kubeconfig", str(tmp_path / "absent"), "get", "node", "w1", "-o", "json"], env, check=False
        ).returncode
        == 1
    )
