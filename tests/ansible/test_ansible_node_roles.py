"""Unit tests for the node roles' Python: engine config merge (ascend_docker_runtime), reserved ports,
node labels and accounts (mindcluster_node), and the plan part they read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import tomllib
from conftest import FIXTURES
from conftest import ROOT as REPO
from role_code import ROLES, plugin

from resumable import constants as C
from resumable.api import load_plan_text

toml = plugin("module_utils", "ascend_toml")
runtime = plugin("module_utils", "ascend_runtime")
ports = plugin("modules", "ascend_reserved_ports")
labels_module = plugin("modules", "ascend_node_labels")
node_filters = plugin("filter", "mindcluster_node")
hw = plugin("module_utils", "ascend_hardware")
facts = plugin("modules", "ascend_npu_facts")
engine = plugin("module_utils", "ascend_engine")

BIN = "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"
CONFIG = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-ascend-docker-runtime.toml"


def nodes_plan(**cluster: Any) -> Dict[str, Any]:
    """The plan's nodes part for a minimal profile with these cluster fields."""
    base: Dict[str, Any] = {"mindcluster": "7.3.0", "arch": "x86_64", "kubernetes": "1.28"}
    base.update(cluster)
    text = json.dumps(
        {
            "cluster": base,
            "jobs": [
                {
                    "name": "j",
                    "image": {"framework": "pytorch", "torch": "2.1.0", "framework_pt_adapter": "6.0.0"},
                    "nodes": 2,
                    "npus_per_node": 8,
                    "recovery": {"fault_scheduling": "grace", "fault_retry_times": 3},
                }
            ],
        }
    )
    result: Dict[str, Any] = load_plan_text(text).nodes.to_dict()
    return result


# --- containerd / docker configuration --------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "major"),
    [
        ("containerd github.com/containerd/containerd v1.7.27 05044ec0a9a7", 1),
        ("containerd containerd.io 1.6.33 d2d58213f83a", 1),
        ("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4", 2),
    ],
)
def test_containerd_major(out: str, major: int) -> None:
    assert runtime.containerd_major(out) == major


def test_containerd_major_refuses_garbage() -> None:
    with pytest.raises(runtime.RuntimeConfigError):
        runtime.containerd_major("containerd")


def _plan17() -> Dict[str, Any]:
    cfg: Dict[str, Any] = toml.loads(
        (ROLES / "ascend_docker_runtime/molecule/default/files/containerd-1.7.toml").read_text()
    )
    return cfg


def test_version2_in_place_copies_runc_and_keeps_everything_else() -> None:
    main = _plan17()
    plan = runtime.plan_containerd(main, CONFIG, 1, "ascend", BIN, DROPIN, None, True)
    assert plan["mode"] == "in-place" and plan["target"] == CONFIG
    ctd = plan["desired"]["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert ctd["default_runtime_name"] == "ascend"
    assert ctd["runtimes"]["ascend"]["options"] == {"SystemdCgroup": True, "BinaryName": BIN}
    assert ctd["runtimes"]["ascend"]["base_runtime_spec"] == "/etc/containerd/cri-base.json"
    assert ctd["runtimes"]["nvidia"] == main["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"]
    # only the two keys changed
    before = json.loads(json.dumps(main))
    before["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] = "ascend"
    before["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["ascend"] = ctd["runtimes"]["ascend"]
    assert plan["desired"] == before
    assert plan["previous_default"] == "runc"
    # and the file written from it reads back the same (as containerd's parser would)
    assert tomllib.loads(toml.dumps(plan["desired"])) == plan["desired"]


def test_idempotent_once_applied() -> None:
    first = runtime.plan_containerd(_plan17(), CONFIG, 1, "ascend", BIN, DROPIN, None, True)["desired"]
    again = runtime.plan_containerd(first, CONFIG, 1, "ascend", BIN, DROPIN, None, True)
    assert again["current"] == again["desired"]


def test_missing_version_is_version_1_as_containerd_reads_it() -> None:
    plan = runtime.plan_containerd({}, CONFIG, 1, "ascend", BIN, DROPIN, None, True)
    assert plan["plugin"] == "cri"
    assert plan["desired"]["plugins"]["cri"]["containerd"]["runtimes"]["ascend"] == {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"BinaryName": BIN},
    }


@pytest.mark.parametrize("version", ["3", 4, True])
def test_unknown_config_version_is_refused(version: Any) -> None:
    with pytest.raises(runtime.RuntimeConfigError, match="unsupported containerd config version"):
        runtime.plan_containerd({"version": version}, CONFIG, 2, "ascend", BIN, DROPIN, None, True)


V3 = {
    "version": 3,
    "imports": ["conf.d/*.toml"],
    "plugins": {
        "io.containerd.cri.v1.runtime": {
            "containerd": {
                "runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}}
            }
        }
    },
}


def test_dropin_only_where_containerd_merges_it() -> None:
    plan = runtime.plan_containerd(V3, CONFIG, 2, "ascend", BIN, DROPIN, None, True)
    assert plan["mode"] == "drop-in" and plan["target"] == DROPIN and plan["current"] is None
    assert plan["desired"] == {
        "version": 3,
        "plugins": {
            "io.containerd.cri.v1.runtime": {
                "containerd": {
                    "default_runtime_name": "ascend",
                    "runtimes": {
                        "ascend": {
                            "runtime_type": "io.containerd.runc.v2",
                            "options": {"SystemdCgroup": True, "BinaryName": BIN},
                        }
                    },
                }
            }
        },
    }
    # containerd 1.x would replace the whole CRI section with the drop-in's: edit in place instead
    assert runtime.plan_containerd(V3, CONFIG, 1, "ascend", BIN, DROPIN, None, True)["mode"] == "in-place"
    # no imports that cover the file, or drop-ins switched off
    no_imports = dict(V3, imports=["/etc/other/*.toml"])
    assert runtime.plan_containerd(no_imports, CONFIG, 2, "ascend", BIN, DROPIN, None, True)["mode"] == "in-place"
    assert runtime.plan_containerd(V3, CONFIG, 2, "ascend", BIN, DROPIN, None, False)["mode"] == "in-place"


def test_docker_merge_keeps_keys_and_runtime_args() -> None:
    daemon = {
        "log-driver": "json-file",
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}, "ascend": {"path": "/old", "runtimeArgs": ["-x"]}},
        "default-runtime": "nvidia",
    }
    desired, previous = runtime.merge_docker(daemon, "ascend", BIN)
    assert previous == "nvidia"
    assert desired == {
        "log-driver": "json-file",
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}, "ascend": {"path": BIN, "runtimeArgs": ["-x"]}},
        "default-runtime": "ascend",
    }
    assert daemon["default-runtime"] == "nvidia"  # input untouched
    with pytest.raises(runtime.RuntimeConfigError):
        runtime.merge_docker({"runtimes": []}, "ascend", BIN)


# --- reserved ports ---------------------------------------------------------------------------


def test_port_ranges_merge_like_the_kernel() -> None:
    assert ports.fmt(ports.parse_ranges("30000-30005,9602") + ports.parse_ranges("9601")) == "9601-9602,30000-30005"
    assert ports.fmt(ports.parse_ranges("10-20, 15-25 30")) == "10-25,30"
    assert ports.fmt([]) == ""
    for bad in ("x", "0", "70000", "20-10"):
        with pytest.raises(ValueError):
            ports.parse_ranges(bad)


def test_sysctl_file_value_last_one_wins_in_either_spelling() -> None:
    text = "# c\nnet.ipv4.ip_local_reserved_ports = 1\n; c\n-net/ipv4/ip_local_reserved_ports=2-3\nother = 4\n"
    assert ports.setting_in(text) == "2-3"
    assert ports.setting_in("kernel.x = 1\n") is None


def test_boot_order_of_sysctl_files(tmp_path: Path) -> None:
    etc, usr = tmp_path / "etc", tmp_path / "usr"
    etc.mkdir()
    usr.mkdir()
    for d, name in ((usr, "10-a.conf"), (usr, "90-ours.conf"), (etc, "95-late.conf"), (usr, "95-late.conf")):
        (d / name).write_text("x = 1\n")
    conf = tmp_path / "sysctl.conf"
    conf.write_text("y = 1\n")
    own = str(etc / "90-ours.conf")
    order = ports.boot_files([str(etc), str(usr), str(conf)], own)
    assert order == [str(usr / "10-a.conf"), own, str(etc / "95-late.conf"), str(conf)]


# --- labels and accounts ----------------------------------------------------------------------


def npu_of(tmp_path: Path, device: str, sub_vendor: str, sub: str, board: Optional[str]) -> Dict[str, Any]:
    """The ascend_npu fact parts the label decision reads, built by the facts module's own code
    from a sysfs tree like the one tests/fixtures/ascend/setup-node.sh writes."""
    pci = tmp_path / "bus/pci/devices/0000:c1:00.0"
    pci.mkdir(parents=True)
    for attr, value in (
        ("vendor", "0x19e5"),
        ("device", device),
        ("subsystem_vendor", sub_vendor),
        ("subsystem_device", sub),
    ):
        (pci / attr).write_text(value + "\n")
    devices = facts.pci_devices(str(tmp_path))
    types = hw.board_accelerator_types(board)
    return {
        "arch": "x86_64",
        "present": bool(devices),
        "count": len(devices),
        "devices": devices,
        "product": devices[0]["product"],
        "board_id": board,
        "accelerator_types": types,
        "accelerator_type": types[0] if len(types) == 1 else None,
    }


#: Labels every compute node gets (INST01 "Creating a node label": node-role worker, the NPU
#: DaemonSets' workerselector, NodeD's nodeDEnable) on x86_64 (host-arch=huawei-x86).
WORKER = {
    "node-role.kubernetes.io/worker": "worker",
    "workerselector": "dls-worker-node",
    "nodeDEnable": "on",
    "host-arch": "huawei-x86",
}

#: Per product, INST01 Table 1 (the product -> label table of MindCluster's "preparing for
#: installation" page): the product, how the fixtures emulate it (PCI device, subsystem device,
#: npu-smi board id as tests/fixtures/ascend/setup-node.sh takes them), the profile's cluster
#: fields for it, and the labels INST01 lists for it beyond WORKER.
PRODUCTS: List[Tuple[str, Tuple[str, str, str, Optional[str]], Dict[str, str], Dict[str, str]]] = [
    (
        "Atlas 800T A2",
        ("0xd802", "0x19e5", "0x3000", "0x33"),
        {"chip": "ascend-910b", "accelerator_type": "module-910b-8"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module-910b-8"},
    ),
    (
        "Atlas 800I A2",
        ("0xd802", "0x19e5", "0x3002", "0x33"),
        {"chip": "ascend-910b", "accelerator_type": "module-910b-8"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module-910b-8", "server-usage": "infer"},
    ),
    (
        "Atlas 200T A2 Box16",
        ("0xd802", "0x19e5", "0x3000", "0x50"),
        {"chip": "ascend-910b", "accelerator_type": "module-910b-16"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module-910b-16"},
    ),
    (
        "Atlas 900 A3 SuperPoD",
        ("0xd803", "0x19e5", "0x3000", "0xb0"),
        {"chip": "ascend-910b", "accelerator_type": "module-a3-16-super-pod"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module-a3-16-super-pod"},
    ),
    (
        # board 0xb1 is ambiguous (A3 Box8 or 900 A3 SuperPoD): the profile decides
        "Atlas 900 A3 SuperPoD (board 0xb1)",
        ("0xd803", "0x19e5", "0x3000", "0xb1"),
        {"chip": "ascend-910b", "accelerator_type": "module-a3-16-super-pod"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module-a3-16-super-pod"},
    ),
    (
        "Atlas 800I A3",
        ("0xd803", "0x19e5", "0x3003", "0xb3"),
        {"chip": "ascend-910b", "accelerator_type": "module-a3-16"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module-a3-16", "server-usage": "infer"},
    ),
    (
        "Atlas 800 (Model 9000)",
        ("0xd801", "0x0200", "0x0100", "0x02"),
        {"chip": "ascend-910", "accelerator_type": "module"},
        {"accelerator": "huawei-Ascend910", "accelerator-type": "module"},
    ),
]


@pytest.mark.parametrize(("product", "quad", "cluster", "expected"), PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_labels_of_each_fixture_product_follow_inst01_and_the_plan(
    tmp_path: Path,
    product: str,
    quad: Tuple[str, str, str, Optional[str]],
    cluster: Dict[str, str],
    expected: Dict[str, str],
) -> None:
    plan = nodes_plan(**cluster)
    npu = npu_of(tmp_path, *quad)
    assert npu["product"], "the facts module does not know the PCI ids of %s" % product
    # npu_facts accepts the hardware for this profile (what site.yml checks before any label)
    assert hw.profile_mismatches(npu, plan) == []
    out = node_filters.node_labels(plan, npu, ["compute"])
    assert out["problems"] == [] and out["held"] == []
    assert out["labels"] == dict(WORKER, **expected)
    # the plan's own labels are the INST01 ones; only the product adds server-usage
    assert {k: v for k, v in out["labels"].items() if k != "server-usage"} == plan["labels"]


def test_every_product_a_scenario_emulates_has_its_labels_checked() -> None:
    """Each fixture_npu of the molecule scenarios (setup-node.sh arguments) is a row of PRODUCTS
    (or a node without NPUs), so a scenario's label expectations rest on this table."""
    import yaml

    known = {quad for _, quad, _, _ in PRODUCTS}
    seen = set()
    for path in list(ROLES.glob("*/molecule/*/molecule.yml")) + list(REPO.glob("molecule/*/molecule.yml")):
        inventory = yaml.safe_load(path.read_text())["provisioner"].get("inventory", {})
        for host in (inventory.get("host_vars") or {}).values():
            npu = host.get("fixture_npu")
            if npu and int(npu[3]) > 0:
                seen.add((str(npu[0]), str(npu[1]), str(npu[2]), str(npu[4])))
    assert seen, "no scenario emulates an NPU node"
    assert seen <= known, "scenario products without a label row: %s" % sorted(seen - known)


def test_management_and_compute_get_both_label_sets(tmp_path: Path) -> None:
    plan = nodes_plan(chip="ascend-910b", accelerator_type="module-910b-8")
    npu = npu_of(tmp_path, "0xd802", "0x19e5", "0x3000", "0x33")
    both = node_filters.node_labels(plan, npu, ["compute", "management"])["labels"]
    assert both["masterselector"] == "dls-master-node" and both["workerselector"] == "dls-worker-node"
    mgmt = node_filters.node_labels(plan, {"count": 0}, ["management"])
    assert mgmt == {"labels": {"masterselector": "dls-master-node"}, "held": [], "problems": []}


def test_compute_node_without_npus_is_refused() -> None:
    plan = nodes_plan(chip="ascend-910b", accelerator_type="module-910b-8")
    problems = node_filters.node_labels(plan, {"count": 0}, ["compute"])["problems"]
    assert problems[0].startswith("it is a compute node but npu_facts finds no Ascend NPU")


def test_daemonset_selector_waits_for_the_maintenance_window(tmp_path: Path) -> None:
    plan = nodes_plan(chip="ascend-910b", accelerator_type="module-910b-8")
    npu = npu_of(tmp_path, "0xd802", "0x19e5", "0x3000", "0x33")
    out = node_filters.node_labels(plan, npu, ["compute"], list(plan["worker_selector"]))
    assert out["held"] == ["workerselector"] and "workerselector" not in out["labels"]
    assert out["labels"]["accelerator-type"] == "module-910b-8"


def test_inference_products_are_products_npu_facts_reports() -> None:
    assert set(C.INFERENCE_PRODUCTS) <= set(hw.PRODUCTS.values())


def test_accounts_compare_without_renumbering() -> None:
    users = nodes_plan()["users"]
    fresh = node_filters.accounts(users, "", "")
    assert [g["name"] for g in fresh["missing_groups"]] == ["HwHiAiUser", "hwMindX"]
    assert [u["name"] for u in fresh["missing_users"]] == ["HwHiAiUser", "hwMindX"] and fresh["problems"] == []
    pw = "HwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/sh\nhwMindX:x:9000:9000::/home/hwMindX:/sbin/nologin\n"
    gr = "HwHiAiUser:x:1000:\nhwMindX:x:9000:\n"
    no_member = node_filters.accounts(users, pw, gr)
    assert [u["name"] for u in no_member["missing_memberships"]] == ["hwMindX"] and no_member["problems"] == []
    done = node_filters.accounts(users, pw, gr.replace("1000:\n", "1000:hwMindX\n"))
    assert done == {"problems": [], "missing_groups": [], "missing_users": [], "missing_memberships": []}
    taken = node_filters.accounts(users, "alice:x:9000:9000::/home/alice:/bin/sh\n", "alice:x:9000:\n")
    assert "uid 9000 (for hwMindX) belongs to alice" in taken["problems"]
    assert "gid 9000 (for group hwMindX) belongs to alice" in taken["problems"]


def test_label_diff() -> None:
    added, updated = labels_module.diff_labels({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"})
    assert added == {"d": "4"} and updated == {"b": ["2", "9"]}


# --- the plan part the roles read -------------------------------------------------------------


def test_node_plan_for_the_roles() -> None:
    plan = nodes_plan(container_runtime="docker", host_network=True)
    assert plan["container_runtime"] == "docker"
    assert plan["docker_runtime"] == {
        "version": "7.3.0",
        "name": "ascend",
        "install_path": "/usr/local/Ascend",
        "binary": "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime",
    }
    assert plan["device_plugin"] == {"namespace": "kube-system", "selector": "name=ascend-device-plugin-ds"}
    assert plan["host_files"][0]["path"] == "/etc/vnpu.cfg" and plan["host_files"][0]["where"] == "compute"
    users = {u["name"]: u for u in plan["users"]}
    assert users["hwMindX"]["shell"] == "/sbin/nologin" and users["hwMindX"]["groups"] == ["HwHiAiUser"]


def test_profiles_of_the_scenarios_are_valid_and_plan_what_the_scenarios_check() -> None:
    for name in ("nodes-containerd.yaml", "nodes-docker.yaml"):
        out = subprocess.run(
            [sys.executable, "-m", "resumable", "plan", str(FIXTURES / "profiles" / name), "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        )
        nodes = json.loads(out.stdout)["nodes"]
        assert nodes["reserved_ports"] == [9601, 9602]
        assert nodes["nofile_limit"] == 100000
        assert nodes["ranktable_dirs"] == ["/user/mindx-dl/ranktable/training.gpt-pod-level"]
        (mount,) = nodes["shared_mounts"]
        export = nodes["export_mount"]
        assert mount["source"] == "a2-nfs:/exports/ascend/ranktable" and mount["opts"] == "rw,hard,_netdev"
        assert (mount["owner"], mount["group"], mount["mode"]) == ("hwMindX", "HwHiAiUser", "2775")
        # the whole export on management nodes, where the job directories are created (shared_storage molecule);
        # not among the shared mounts `resumable doctor --node` asks for
        assert (export["source"], export["path"], export["where"]) == (
            "a2-nfs:/exports/ascend",
            "/mnt/ascend-resumable/export",
            "management",
        )
        assert "owner" not in export, "the export's own owner stays as the server has it"
        assert nodes["job_dirs"] == [
            {
                "path": "/mnt/ascend-resumable/export/training/gpt-pod-level/checkpoints",
                "owner": 65534,
                "group": 65534,
                "mode": "0775",
                "volume": "gpt-pod-level-checkpoints",
                "namespace": "training",
            }
        ]


def test_npu_daemonset_selector_covers_the_pre_26_1_device_plugin() -> None:
    """Before MindCluster 26.1 the device plugin selects accelerator=huawei-Ascend910 (the 910 variant of
    device-plugin-volcano-v{ver}.yaml), so the driver role's window must remove that label too; the
    selector comes from the same function the device plugin manifest uses."""
    from resumable.traits import device_plugin_selector, traits

    text = (FIXTURES / "profiles" / "site.yaml").read_text()
    old = load_plan_text(text).nodes
    assert old.npu_daemonset_selector == {
        C.NODE_LABEL_WORKER: C.NODE_LABEL_WORKER_VALUE,
        C.NODE_LABEL_ACCELERATOR: "huawei-Ascend910",
    }
    assert device_plugin_selector(traits("7.3.0"), old.worker_selector).items() <= old.npu_daemonset_selector.items()
    new = load_plan_text(text.replace('mindcluster: "7.3.0"', 'mindcluster: "26.1.0"')).nodes
    assert new.npu_daemonset_selector == new.worker_selector


class _ReadOnlyNode:
    """What the engine dry run asks of AnsibleModule; a write or an exit would be a bug of the dry run."""

    check_mode = False  # the dry run must be check mode whatever the module's own mode

    def get_bin_path(self, name: str) -> Optional[str]:
        return None

    def run_command(self, argv: List[str]) -> Tuple[int, str, str]:
        raise AssertionError("the Docker dry run runs no command: %s" % argv)

    def fail_json(self, **kwargs: Any) -> None:
        raise AssertionError("the dry run must not exit the module: %s" % kwargs)


def test_the_engine_dry_run_in_the_read_of_the_node(tmp_path: Path) -> None:
    """ascend_npu_facts folds ascend_runtime_config's check mode into its read: the same answer, no write, and what
    would fail that module comes back as {failed, msg} (decide.yml then runs the module to fail where it did)."""
    daemon = tmp_path / "daemon.json"
    options = {"engine": "docker", "runtime_path": "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"}
    options["config_path"] = str(daemon)
    daemon.write_text(json.dumps({"log-driver": "json-file"}))
    planned = engine.dry_run(_ReadOnlyNode(), options)
    assert planned["config_changes"] is True and planned["changed"] is False and "diff" not in planned
    assert json.loads(daemon.read_text()) == {"log-driver": "json-file"}  # untouched
    desired, _ = runtime.merge_docker({"log-driver": "json-file"}, "ascend", options["runtime_path"])
    daemon.write_text(json.dumps(desired))
    assert engine.dry_run(_ReadOnlyNode(), options)["config_changes"] is False
    daemon.write_text("{not json")
    failed = engine.dry_run(_ReadOnlyNode(), options)
    assert failed["failed"] is True and str(daemon) in failed["msg"]
    assert engine.dry_run(_ReadOnlyNode(), {"engine": "podman"})["failed"] is True
