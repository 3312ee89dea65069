"""Unit tests of the Ansible side's hardware logic: npu-smi tables (910B and A3), board ids,
vendor package names, hardware against the profile, device holders, and the driver/CANN plans.

The npu-smi samples follow the layouts read by ADEPLOY module_utils/check_library_utils/npu_checks.py
(two rows per chip; on A3 nodes the
second header reads "Chip  Phy-ID" and every chip repeats its NPU row); the device ids and board
ids follow ADEPLOY module_utils/common_info.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from role_code import plugin

hw = plugin("module_utils", "ascend_hardware")
facts = plugin("modules", "ascend_npu_facts")
driver_filters = plugin("filter", "ascend_driver")
cann_filters = plugin("filter", "ascend_cann")

A2_TABLE = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 25.2.0                   Version: 25.2.0                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 92.2        36                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3314 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | Alarm         | 91.9        38                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3307 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 4242          | python3                  | 2048                    |
+===========================+===============+====================================================+
| No running processes found in NPU 1                                                            |
+===========================+===============+====================================================+
"""

A3_TABLE = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 25.3.rc1                 Version: 25.3.rc1                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 161.9       34                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 0           0    / 0          3099 / 65536         |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -           34                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 0           0    / 0          2885 / 65536         |
+===========================+===============+====================================================+
| 1     Ascend910           | OK            | 167.2       36                0    / 0             |
| 0     2                   | 0000:99:00.0  | 0           0    / 0          3122 / 65536         |
+------------------------------------------------------------------------------------------------+
| 1     Ascend910           | Warning       | -           36                0    / 0             |
| 1     3                   | 0000:9B:00.0  | 0           0    / 0          2891 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
| No running processes found in NPU 1                                                            |
+===========================+===============+====================================================+
"""


def test_910b_table_one_chip_per_npu() -> None:
    parsed = hw.parse_npu_smi(A2_TABLE)
    assert parsed["driver_version"] == "25.2.0"
    assert parsed["npus"] == {"0": "OK", "1": "Alarm"}
    assert [(c["npu"], c["chip"], c["bus_id"], c["phy_id"]) for c in parsed["chips"]] == [
        ("0", "0", "0000:C1:00.0", None),
        ("1", "0", "0000:C2:00.0", None),
    ]
    assert parsed["processes"] == [{"npu": "0", "chip": "0", "pid": "4242", "name": "python3"}]
    assert not parsed["phy_id_column"]


def test_a3_table_two_chips_per_npu_and_the_bus_id_is_not_the_health() -> None:
    parsed = hw.parse_npu_smi(A3_TABLE)
    assert parsed["phy_id_column"]
    # the Bus-Id of a "Chip Phy-ID" row is never taken for a health value
    assert parsed["npus"] == {"0": "OK", "1": "Warning"}
    assert [(c["npu"], c["chip"], c["phy_id"], c["bus_id"], c["health"]) for c in parsed["chips"]] == [
        ("0", "0", "0", "0000:9D:00.0", "OK"),
        ("0", "1", "1", "0000:9F:00.0", "OK"),
        ("1", "0", "2", "0000:99:00.0", "OK"),
        ("1", "1", "3", "0000:9B:00.0", "Warning"),
    ]
    assert parsed["processes"] == []


# Atlas 350/950: npu-smi built with NPU_SMI_V2 (PRODUCT ascend950), written from its source in the public
# mirror of the Ascend driver sources, verylucky01/driver commit 999c25d7 ("sync 20260626"; no release tag carries
# it), src/custom/dev_prod/user/npucli/: CMakeLists.txt:55-59 (NPU_SMI_V2 for ascend950); src/npu_info_print.c
# :584-592 (header), :427-436 (NPU row: id, name and health cells of their own), :393-403 + :474-481 (second row:
# only the Bus-Id, upper-case hex), :508-511; process table :626-629 (header "NPU ID | Process id"), :534-539
# (one row per process: NPU id, pid, name, memory; no chip column), :553-559.
A5_TABLE = """\
+-------------------------------------------------------------------------------------------------+
| npu-smi 25.7.rc1.6                               Version: 25.7.rc1.6                            |
+--------+------------------+---------------+-----------------------------------------------------+
| NPU ID | Name             | Health        | Power(W)    Temp(C)           Hugepages-Usage(page) |
|        |                  | Bus-Id        | NPU Util(%) Memory-Usage(MB)  HBM-Usage(MB)         |
+========+==================+===============+=====================================================+
| 0      | Ascend950PR      | OK            | 195.6       56                0     / 0             |
|        |                  | 0000:61:00.0  | 0           0    / 0          5239  / 131072        |
+========+==================+===============+=====================================================+
| 1      | Ascend950PR      | Critical      | 195.6       56                0     / 0             |
|        |                  | 0000:9B:00.0  | 0           0    / 0          5239  / 131072        |
+========+==================+===============+=====================================================+
+---------------------------+---------------+-----------------------------------------------------+
| NPU ID                    | Process id    | Process name             | Process memory(MB)       |
+===========================+===============+=====================================================+
| No running processes found in NPU 0                                                             |
+===========================+===============+=====================================================+
| 1                          | 3728646       | python3                  | 396                     |
| 1                          | 3728650       |                          | 120                     |
+===========================+===============+=====================================================+
"""


def test_atlas_950_table_npu_id_name_layout() -> None:
    parsed = hw.parse_npu_smi(A5_TABLE)
    assert parsed["driver_version"] == "25.7.rc1.6"
    assert parsed["npus"] == {"0": "OK", "1": "Critical"}
    assert [(c["npu"], c["chip"], c["name"], c["bus_id"], c["phy_id"]) for c in parsed["chips"]] == [
        ("0", "0", "Ascend950PR", "0000:61:00.0", None),
        ("1", "0", "Ascend950PR", "0000:9B:00.0", None),
    ]
    assert not parsed["phy_id_column"]


def test_atlas_950_process_table_has_no_chip_column() -> None:
    """The NPU_SMI_V2 process rows (NPU id, pid, name, memory) are processes on the NPU, not NPU rows: read as
    the 910B table, a node running a job on its NPUs looked idle to the driver role."""
    processes = hw.parse_npu_smi(A5_TABLE)["processes"]
    assert processes == [
        {"npu": "1", "chip": "0", "pid": "3728646", "name": "python3"},
        {"npu": "1", "chip": "0", "pid": "3728650", "name": ""},
    ]
    assert hw.parse_npu_smi(A5_TABLE)["npus"] == {"0": "OK", "1": "Critical"}  # no process row became an NPU
    # Atlas 900 A5 UB mainboards print NA for the Bus-Id (npu_info_print.c:469-472); the chip is still listed
    ub = A5_TABLE.replace("| 0000:61:00.0  |", "| NA            |")
    assert [c["bus_id"] for c in hw.parse_npu_smi(ub)["chips"]] == ["NA", "0000:9B:00.0"]


def test_an_all_digit_npu_name_is_still_an_npu_row() -> None:
    table = A2_TABLE.replace("910B3       ", "310         ")
    assert hw.parse_npu_smi(table)["npus"] == {"0": "OK", "1": "Alarm"}


def test_board_query() -> None:
    text = "\tNPU ID : 0\n\tSoftware Version : 25.2.0\n\tFirmware Version : 7.7.0.1.231\n\tBoard ID : 0x33\n"
    assert hw.parse_board(text) == {"board_id": "0x33", "firmware_version": "7.7.0.1.231", "software_version": "25.2.0"}


@pytest.mark.parametrize(
    ("board", "types"),
    [
        ("0x33", ["module-910b-8"]),
        ("0x52", ["module-910b-16"]),
        ("0xb3", ["module-a3-16"]),
        ("0xb0", ["module-a3-16-super-pod"]),
        # ADEPLOY module_utils/common_info.py lists 0xb1 for the A3 Box8 and for the 900 A3 PoD: the profile decides
        ("0xb1", ["module-a3-16", "module-a3-16-super-pod"]),
        ("0x99", []),
        (None, []),
    ],
)
def test_board_ids(board: Optional[str], types: Any) -> None:
    assert hw.board_accelerator_types(board) == types


@pytest.mark.parametrize(
    ("name", "kind", "chip", "arch", "version"),
    [
        ("Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run", "driver", "910B", "aarch64", "25.0.rc1.1"),
        ("Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run", "driver", "910B", "x86_64", "25.2.0"),
        ("Ascend-hdk-910-npu-driver_25.0.rc1.1_sph001_linux.run", "driver", "910", None, "25.0.rc1.1"),
        ("Atlas-A3-hdk-npu-driver_25.3.rc1_linux-aarch64.run", "driver", "910_93", "aarch64", "25.3.rc1"),
        ("Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run", "firmware", "910B", None, "7.7.0.1.231"),
        ("Atlas-A3-hdk-npu-firmware_7.8.0.1.220.run", "firmware", "910_93", None, "7.8.0.1.220"),
        ("Ascend-cann-toolkit_8.5.0_linux-x86_64.run", "toolkit", None, "x86_64", "8.5.0"),
        ("Ascend-cann-kernels-910b_8.3.RC1_linux-aarch64.run", "kernels", "910B", "aarch64", "8.3.RC1"),
        ("Ascend-cann-A3-ops_8.5.0_linux-aarch64.run", "ops", "910_93", "aarch64", "8.5.0"),
    ],
)
def test_package_names(name: str, kind: str, chip: Optional[str], arch: Optional[str], version: str) -> None:
    info = hw.package_info("/srv/packages/" + name)
    assert info is not None
    assert (info["kind"], info["chip"], info["arch"], info["version"]) == (kind, chip, arch, version)


def test_unknown_package_names() -> None:
    assert hw.package_info("driver.run") is None
    assert hw.package_info("Ascend-hdk-910b-npu-driver.run") is None


def _facts(device: str = "d802", board: Optional[str] = "0x33", arch: str = "x86_64", count: int = 8) -> Dict[str, Any]:
    chip, profile_chip = hw.CHIPS[device]
    types = hw.board_accelerator_types(board)
    return {
        "arch": arch,
        "present": count > 0,
        "devices": [{"device_id": device, "chip": chip, "profile_chip": profile_chip}] * count,
        "chips": [chip] if count else [],
        "board_id": board,
        "accelerator_types": types,
    }


PLAN = {"chip": "ascend-910b", "accelerator_type": "module-910b-8", "arch": "x86_64"}


def test_hardware_that_matches_the_profile() -> None:
    assert hw.profile_mismatches(_facts(), PLAN) == []
    a3 = dict(PLAN, accelerator_type="module-a3-16-super-pod")
    assert hw.profile_mismatches(_facts("d803", "0xb1", count=16), a3) == []


def test_hardware_that_disagrees_names_both() -> None:
    problems = hw.profile_mismatches(_facts("d801", "0x02", arch="aarch64"), PLAN)
    assert problems == [
        "the profile says cluster.arch x86_64, the node is aarch64",
        "the profile says cluster.chip ascend-910b, the node has ascend-910 (PCI 19e5:d801)",
        "the profile says cluster.accelerator_type module-910b-8, board id 0x02 means module",
    ]
    inference = hw.profile_mismatches(_facts("d500", None), PLAN)
    assert inference == ["the profile says cluster.chip ascend-910b, the node has none (310P) (PCI 19e5:d500)"]


def test_a_node_without_npus_is_only_checked_for_its_architecture() -> None:
    assert hw.profile_mismatches(_facts(count=0), PLAN) == []
    assert len(hw.profile_mismatches(_facts(count=0, arch="aarch64"), PLAN)) == 1


def test_packages_against_the_node() -> None:
    facts = _facts()
    good = hw.package_info("Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run")
    assert hw.package_mismatches(facts, good, "the driver package") == []
    wrong_chip = hw.package_info("Ascend-hdk-910-npu-driver_25.2.0_linux-x86-64.run")
    assert hw.package_mismatches(facts, wrong_chip, "the driver package") == [
        "the driver package Ascend-hdk-910-npu-driver_25.2.0_linux-x86-64.run is built for Ascend 910, "
        "the node has Ascend 910B"
    ]
    wrong_arch = hw.package_info("Ascend-cann-toolkit_8.5.0_linux-aarch64.run")
    assert hw.package_mismatches(facts, wrong_arch, "the toolkit") == [
        "the toolkit Ascend-cann-toolkit_8.5.0_linux-aarch64.run is built for aarch64, the node is x86_64"
    ]


def test_device_holders_from_docker_and_cri() -> None:
    docker = json.dumps(
        [
            {
                "Id": "a" * 64,
                "Name": "/npu-exporter",
                "State": {"Running": True},
                "HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci_manager"}, {"PathOnHost": "/dev/null"}]},
            },
            {"Id": "b" * 64, "Name": "/web", "State": {"Running": True}, "HostConfig": {"Devices": None}},
        ]
    )
    assert hw.docker_holders(docker) == [
        {
            "runtime": "docker",
            "id": "a" * 12,
            "name": "npu-exporter",
            "pid": "",
            "privileged": False,
            "devices": ["/dev/davinci_manager"],
        }
    ]
    cri = json.dumps(
        {
            "status": {"id": "c" * 64, "metadata": {"name": "train"}},
            "info": {"runtimeSpec": {"linux": {"devices": [{"path": "/dev/davinci3"}, {"path": "/dev/hisi_hdc"}]}}},
        }
    )
    assert hw.crictl_holders(cri) == [
        {
            "runtime": "cri",
            "id": "c" * 12,
            "name": "train",
            "pid": "",
            "privileged": False,
            "devices": ["/dev/davinci3", "/dev/hisi_hdc"],
        }
    ]


def test_busy_is_what_holds_an_npu_not_what_a_spec_lists() -> None:
    """containerd lists every host device in a privileged container's spec (containerd v1.7.27
    pkg/cri/server/container_create_linux.go:225-231, WithHostDevices): kube-proxy is no NPU user."""
    kube_proxy = {"runtime": "cri", "name": "kube-proxy", "pid": "31", "privileged": True, "devices": ["/dev/davinci0"]}
    train = {"runtime": "cri", "name": "train", "pid": "401", "privileged": False, "devices": ["/dev/davinci1"]}
    idle = hw.npu_holders([], [], [kube_proxy])
    assert idle == {"busy": False, "pids": [], "containers": []}
    smi = [{"npu": "1", "chip": "0", "pid": "401", "name": "python3"}]
    assert hw.npu_holders(smi, [], [kube_proxy, train]) == {"busy": True, "pids": ["401"], "containers": [train]}
    host = [{"pid": "77", "comm": "sleep", "devices": ["/dev/davinci2"]}]
    assert hw.npu_holders([], host, [kube_proxy])["busy"]


def test_processes_the_driver_installer_kills_before_its_hot_reset_are_not_busy(tmp_path: Path) -> None:
    """Huawei driver scripts (verylucky01/driver v8.5.0) common.sh:324-378 killWhiteProcess: the
    AllowKilledWhenResetNPU:<name>:<pid> entries of /etc/custom_process.cfg (first 20 lines, name checked
    against /proc/<pid>/status, 240-262) on A2/A3 devices; device_hot_reset.sh:375-385 the
    "msnpureport report --permanent" daemons when /etc/npu_dev_syslog.cfg enables syslog."""
    cfg = "# operator list\nAllowKilledWhenResetNPU: npu-exporter :31\nAllowKilledWhenResetNPU:python3:401\nbogus\n"
    procs = {
        "31": {"name": "npu-exporter", "cmdline": "npu-exporter -port 8082"},
        "401": {"name": "train", "cmdline": "python3 train.py"},  # the name must match: not killed
        "55": {"name": "msnpureport", "cmdline": "msnpureport report --permanent"},
    }
    assert hw.reset_killed_pids(cfg, None, ["d802"], procs) == ["31"]
    assert hw.reset_killed_pids(cfg, "syslog_host_mode:enable\n", ["d803"], procs) == ["31", "55"]
    # other chips: the installer kills no listed process, only the log daemons
    assert hw.reset_killed_pids(cfg, "syslog_host_mode:enable\n", ["d806"], procs) == ["55"]
    assert hw.reset_killed_pids("\n" * 20 + "AllowKilledWhenResetNPU:npu-exporter:31\n", None, ["d802"], procs) == []
    smi = [{"npu": "0", "chip": "0", "pid": "31", "name": "npu-exporter"}]
    assert hw.npu_holders(smi, [], [], spared=["31"]) == {"busy": False, "pids": [], "containers": []}
    assert hw.npu_holders([*smi, {"pid": "401"}], [], [], spared=["31"])["pids"] == ["401"]
    # the facts module reads name and command line from /proc
    (tmp_path / "31").mkdir()
    (tmp_path / "31" / "status").write_text("Name:\tnpu-exporter\nState:\tS\n")
    (tmp_path / "31" / "cmdline").write_text("npu-exporter\0-port\08082\0")
    assert facts.process_identities(str(tmp_path), ["31", "999"]) == {
        "31": {"name": "npu-exporter", "cmdline": "npu-exporter -port 8082"}
    }


class _BoardModule:
    """run_command of npu-smi with a different running firmware on NPU 1."""

    def __init__(self, table: str, firmware: Dict[str, str]) -> None:
        self.table, self.firmware, self.calls = table, firmware, []  # type: ignore[var-annotated]

    def run_command(self, argv: Any) -> Any:
        self.calls.append(argv[1:])
        if argv[1:] == ["info"]:
            return 0, self.table, ""
        npu = argv[-1]
        return 0, "\tSoftware Version : 25.2.0\n\tFirmware Version : %s\n\tBoard ID : 0x33\n" % self.firmware[npu], ""


def test_running_firmware_is_read_from_every_npu(tmp_path: Path) -> None:
    """A firmware change that reached NPU 0 but not NPU 1 is not running (it was read from NPU 0 only)."""
    smi_path = tmp_path / "npu-smi"
    smi_path.write_text("#!/bin/sh\n")
    smi_path.chmod(0o755)
    module = _BoardModule(A2_TABLE, {"0": "7.8.0.1.220", "1": "7.7.0.1.231"})
    smi = facts.npu_smi_facts(module, str(smi_path), True)
    assert ["info", "-t", "board", "-i", "1"] in module.calls
    assert smi["firmware_by_npu"] == {"0": "7.8.0.1.220", "1": "7.7.0.1.231"} and smi["firmware_version"] is None
    assert facts.running_firmware(smi["firmware_by_npu"], "7.8.0.1.220") == "7.7.0.1.231"
    assert facts.running_firmware(smi["firmware_by_npu"], "7.7.0.1.231") == "7.8.0.1.220"
    same = facts.npu_smi_facts(_BoardModule(A2_TABLE, {"0": "7.8.0.1.220", "1": "7.8.0.1.220"}), str(smi_path), True)
    assert facts.running_firmware(same["firmware_by_npu"], "7.8.0.1.220") == "7.8.0.1.220"
    assert same["board_id"] == "0x33"


# --- the driver role's plan -------------------------------------------------------------------


def _installed(
    driver: Optional[str] = None,
    firmware: Optional[str] = None,
    complete: bool = True,
    for_all: str = "yes",
    user: str = "HwHiAiUser",
) -> Dict[str, Any]:
    record = {"Driver_Install_For_All": for_all, "UserName": user, "UserGroup": user} if driver else {}
    return {
        "driver": {"installed": driver is not None, "version": driver, "complete": complete and driver is not None},
        "firmware": {"installed": firmware is not None, "version": firmware},
        "install_info": record,
    }


plan = driver_filters.ascend_driver_plan


def test_plan_fresh_node_driver_first() -> None:
    p = plan(_installed(), "25.2.0", "7.7.0.1.231")
    assert p["order"] == ["driver", "firmware"] and p["driver"]["action"] == "full"


def test_plan_upgrade_firmware_first() -> None:
    p = plan(_installed("25.2.0", "7.7.0.1.231"), "25.3.0", "7.8.0.1.220")
    assert p["order"] == ["firmware", "driver"] and p["driver"]["action"] == "upgrade"


def test_plan_converged_node_does_nothing_whatever_the_spelling() -> None:
    p = plan(_installed("25.0.rc1.1", "7.7.0.1.231"), "25.0.RC1.1", "7.7.0.1.231")
    assert p["order"] == [] and not p["changes"]


def test_plan_refuses_downgrade_unless_allowed() -> None:
    p = plan(_installed("25.2.0", "7.7.0.1.231"), "25.1.0", "7.7.0.1.231")
    assert p["downgrades"] == ["driver"] and not p["changes"]
    assert p["refusals"] == [
        "refusing to downgrade the driver from 25.2.0 to 25.1.0 (set ascend_driver_allow_downgrade=true if intended)"
    ]
    allowed = plan(_installed("25.2.0", "7.7.0.1.231"), "25.1.0", "", True, [], True)
    assert allowed["driver"]["action"] == "full" and allowed["changes"]


def test_plan_refuses_a_run_user_change() -> None:
    p = plan(_installed("25.2.0", "7.7.0.1.231"), "25.2.0", "7.7.0.1.231", True, [], False, "npurun", "npurun")
    assert not p["changes"]
    assert p["refusals"][0].startswith(
        "the driver is installed for run user HwHiAiUser:HwHiAiUser, the profile/inventory wants npurun:npurun"
    )
    same = plan(_installed("25.2.0", "7.7.0.1.231"), "25.3.0", "", True, [], False, "HwHiAiUser", "HwHiAiUser")
    assert same["refusals"] == [] and same["changes"]


def test_plan_resumes_interrupted_driver_in_fresh_order() -> None:
    p = plan(_installed("25.3.0", "7.8.0.1.220"), "25.3.0", "7.8.0.1.220", True, ["driver"])
    assert p["order"] == ["driver"] and p["driver"]["action"] == "full"
    incomplete = plan(_installed("25.3.0", "7.8.0.1.220", complete=False), "25.3.0", "")
    assert incomplete["driver"]["action"] == "full"


# --- the CANN role's plan ---------------------------------------------------------------------


def _cann(version: Optional[str], ops: Optional[str] = None) -> Dict[str, Any]:
    return {"installed": version is not None, "version": version, "ops_version": ops}


cann_plan = cann_filters.ascend_cann_plan


def test_cann_fresh_and_converged() -> None:
    fresh = cann_plan(_cann(None), "8.5.0", True)
    assert (fresh["toolkit"], fresh["ops"], fresh["unified"]) == ("install", "install", True)
    done = cann_plan(_cann("8.5.0", "8.5.0"), "8.5.0", True)
    assert not done["changes"]
    legacy = cann_plan(_cann("8.3.RC1", "8.3.RC1"), "8.3.rc1", True)
    assert not legacy["changes"] and not legacy["unified"]


def test_cann_upgrade_reinstalls_ops_and_interrupted_steps_repeat() -> None:
    up = cann_plan(_cann("8.3.RC1", "8.3.RC1"), "8.5.0", True)
    assert (up["toolkit"], up["ops"]) == ("upgrade", "install")
    ops_only = cann_plan(_cann("8.5.0", None), "8.5.0", True)
    assert (ops_only["toolkit"], ops_only["ops"]) == ("none", "install")
    resumed = cann_plan(_cann("8.5.0", "8.5.0"), "8.5.0", True, ["toolkit"])
    assert resumed["toolkit"] == "upgrade"


def test_cann_refuses_downgrade_unless_allowed() -> None:
    down = cann_plan(_cann("8.5.0", "8.5.0"), "8.3.RC1", True)
    assert not down["changes"] and down["refusals"] == [
        "refusing to downgrade CANN from 8.5.0 to 8.3.RC1 (set ascend_cann_allow_downgrade=true if intended)"
    ]
    allowed = cann_plan(_cann("8.5.0", "8.5.0"), "8.3.RC1", True, [], True)
    assert allowed["toolkit"] == "upgrade" and allowed["refusals"] == []


def test_package_problems_before_the_node_is_touched() -> None:
    facts = _facts()
    good = {"driver": {"src": "/srv/Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run"}}
    kinds = {"driver": "driver", "ops": "ops"}
    assert hw.package_problems(facts, good, kinds, {"driver": "25.2.0"}) == []
    renamed = {"driver": {"path": "/srv/driver.run"}}
    assert hw.package_problems(facts, renamed, kinds) == [
        "the driver package driver.run is not a driver package by the vendor naming (ADEPLOY downloader/software), "
        "so it cannot be checked against this node"
    ]
    other = {"driver": {"url": "https://mirror/Ascend-hdk-910b-npu-driver_25.3.0_linux-aarch64.run"}}
    assert hw.package_problems(facts, other, kinds, {"driver": "25.2.0"}) == [
        "the driver package Ascend-hdk-910b-npu-driver_25.3.0_linux-aarch64.run is built for aarch64, "
        "the node is x86_64",
        "the driver package Ascend-hdk-910b-npu-driver_25.3.0_linux-aarch64.run is version 25.3.0, "
        "the wanted version is 25.2.0",
    ]
    kernels_for_85 = {"ops": {"src": "Ascend-cann-kernels-910b_8.5.0_linux-x86_64.run"}}
    assert "is not a ops package" in hw.package_problems(facts, kernels_for_85, kinds)[0]


def test_checksum_problems_name_the_package_and_both_sums() -> None:
    filters = plugin("filter", "ascend")
    item = {"key": "ops", "value": {"path": "/p/ops.run", "checksum": "sha256:" + "f" * 64}}
    results = [
        {"ascend_package_item": item, "stat": {"exists": True, "checksum": "a" * 64}},
        {"ascend_package_item": {"key": "toolkit", "value": {"src": "/c/tk.run"}}, "stat": {"exists": False}},
        {"ascend_package_item": {"key": "x", "value": {"src": "/c/x.run"}}, "stat": {"exists": True, "checksum": "b"}},
    ]
    assert filters.checksum_problems(results, "node-1") == [
        "package ops (/p/ops.run on node-1) has sha256 %s, the inventory says %s" % ("a" * 64, "f" * 64),
        "package toolkit (/c/tk.run on the controller) is missing",
    ]


# --- everything the roles decide before they touch a node (one read) ---------------------------

decide = driver_filters.ascend_driver_decide
cann_decide = cann_filters.ascend_cann_decide
NODES = {"hdk": "25.2.0", "chip": "ascend-910b", "accelerator_type": "module-910b-8", "arch": "x86_64"}
DRIVER_PKG = {"src": "/srv/Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run"}
FIRMWARE_PKG = {"src": "/srv/Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run"}


def _node(driver: Optional[str] = None, firmware: Optional[str] = None, **extra: Any) -> Dict[str, Any]:
    facts = dict(_facts(), **_installed(driver, firmware))
    facts["accounts"] = {
        "users": {"HwHiAiUser": None, "1000": None},
        "groups": {"HwHiAiUser": None, "1000": None},
    }
    facts.update(extra)
    return facts


def _params(**changes: Any) -> Dict[str, Any]:
    params: Dict[str, Any] = {
        "plan_nodes": NODES,
        "profile": "p.yaml",
        "reboot_policy": "if_needed",
        "versions": {"driver": "25.2.0", "firmware": "7.7.0.1.231"},
        "packages": {"driver": DRIVER_PKG, "firmware": FIRMWARE_PKG},
        "install_for_all": True,
        "allow_downgrade": False,
        "user": "HwHiAiUser",
        "group": "HwHiAiUser",
        "uid": 1000,
        "gid": 1000,
        "home": "/home/HwHiAiUser",
        "shell": "/bin/bash",
        "state_dir": "/var/lib/ascend-resumable",
        "window_file": "/var/lib/ascend-resumable/driver-window.json",
        "prerequisites": True,
    }
    params.update(changes)
    return params


def test_decide_a_fresh_node() -> None:
    d = decide(_node(packages={"make": None, "pciutils": "1:3.9.0-4"}), _params())
    assert d["problems"] == []
    assert d["plan"]["order"] == ["driver", "firmware"] and d["needs_window"]
    assert d["account"] == {"create_group": True, "create_user": True}
    assert d["missing_prerequisites"] == ["make"]


def test_decide_a_converged_node_needs_nothing() -> None:
    user = {"name": "HwHiAiUser", "uid": 1000, "gid": 1000, "home": "/home/HwHiAiUser", "shell": "/bin/bash"}
    group = {"name": "HwHiAiUser", "gid": 1000, "members": []}
    accounts = {"users": {"HwHiAiUser": user, "1000": user}, "groups": {"HwHiAiUser": group, "1000": group}}
    facts = _node("25.2.0", "7.7.0.1.231", accounts=accounts, packages={"make": "4.3"})
    d = decide(facts, _params())
    assert d["problems"] == [] and not d["needs_window"] and not d["needs_change"]
    window = '{"drained": true}'
    again = decide(dict(facts, files={"/var/lib/ascend-resumable/driver-window.json": window}), _params())
    assert again["window"] == {"drained": True} and again["needs_window"] and again["needs_change"]
    resumed = decide(dict(facts, files={"/var/lib/ascend-resumable/driver.inprogress": "25.2.0 full\n"}), _params())
    assert resumed["plan"]["order"] == ["driver"]


def test_decide_collects_every_problem_before_anything_is_touched() -> None:
    other = {"name": "someone", "uid": 1000, "gid": 1000, "home": "/home/someone", "shell": "/bin/sh"}
    facts = _node("25.3.0", "7.7.0.1.231", accounts={"users": {"HwHiAiUser": None, "1000": other}, "groups": {}})
    params = _params(packages={"driver": {"src": "/srv/Ascend-hdk-910-npu-driver_25.2.0_linux-x86-64.run"}})
    problems = decide(facts, dict(params, plan_nodes=dict(NODES, chip="ascend-910")))["problems"]
    assert problems[0] == "the profile says cluster.chip ascend-910, the node has ascend-910b (PCI 19e5:d802)"
    assert "refusing to downgrade the driver from 25.3.0 to 25.2.0" in problems[1]
    assert problems[2].startswith("the driver run user must be HwHiAiUser 1000 / group HwHiAiUser 1000")
    assert "uid 1000 belongs to someone" in problems[2]


def test_decide_stops_at_parameter_problems() -> None:
    no_plan = decide(_node(), _params(plan_nodes={}))
    assert no_plan["plan"] is None and "run playbooks/preflight.yml first" in no_plan["problems"][0]
    hdk = decide(_node(), _params(versions={"driver": "25.5.0", "firmware": "7.7.0.1.231"}))
    assert hdk["problems"] == [
        "the profile p.yaml says cluster.hdk 25.2.0, but ascend_driver_driver_version is 25.5.0: change one of them "
        "(normally the profile, and drop ascend_driver_driver_version from the inventory)"
    ]
    root = decide(_node(), _params(user="root", install_for_all=False))
    assert "root only with --install-for-all" in root["problems"][0]


def test_cann_decide() -> None:
    toolkit = {"src": "/srv/Ascend-cann-toolkit_8.5.0_linux-x86_64.run"}
    ops = {"path": "/srv/Ascend-cann-910b-ops_8.5.0_linux-x86_64.run"}
    params = {
        "version": "8.5.0",
        "toolkit_package": toolkit,
        "ops_package": ops,
        "allow_downgrade": False,
        "state_dir": "/var/lib/ascend-resumable",
    }
    fresh = cann_decide(dict(_facts(), cann=_cann(None)), params)
    assert fresh["problems"] == [] and fresh["needs_change"]
    kernels = dict(params, ops_package={"src": "/srv/Ascend-cann-kernels-910b_8.5.0_linux-x86_64.run"})
    assert "is not a ops package" in cann_decide(dict(_facts(), cann=_cann(None)), kernels)["problems"][0]
    files = {"/var/lib/ascend-resumable/cann-ops.inprogress": "8.5.0\n"}
    resumed = cann_decide(dict(_facts(), cann=_cann("8.5.0", "8.5.0"), files=files), params)
    assert resumed["plan"]["ops"] == "install" and resumed["plan"]["toolkit"] == "none"
    assert not cann_decide({}, dict(params, version=""))["needs_change"]


def test_inventory_problems_per_host() -> None:
    filters = plugin("filter", "ascend")
    hostvars = {
        "good": {"ascend_driver_firmware_version": "7.7.0.1.231", "ascend_driver_kubectl_host": "mgmt"},
        "bad": {
            "ascend_driver_reboot_policy": "sometimes",
            "ascend_driver_force": "yes",
            "ascend_cann_version": "8.5",
            "ascend_driver_firmware_version": "seven",
            "ascend_cann_toolkit_package": {"checksum": "sha256:REPLACE"},
            "ascend_driver_kubectl_host": "elsewhere",
        },
    }
    assert filters.inventory_problems(hostvars, ["good", "bad"], ["good", "bad", "mgmt"]) == [
        "bad: ascend_driver_reboot_policy 'sometimes' is not never/if_needed/always, ascend_driver_force must be "
        "true or false, not 'yes', ascend_driver_firmware_version 'seven' is not a version like 25.2.0, 7.7.0.1.231 "
        "or 8.3.RC1, ascend_cann_toolkit_package checksum 'sha256:REPLACE' is not sha256:<64 lowercase hex>, "
        "ascend_driver_kubectl_host 'elsewhere' is not an inventory host"
    ]


def test_release_accepts_more_npus_than_before_the_window() -> None:
    """A node whose faulty NPU the upgrade fixed reports 8 where it had 7: released, not held."""
    filters = plugin("filter", "ascend")
    before = {"huawei.com/Ascend910": "7"}
    assert filters.allocatable_short({"huawei.com/Ascend910": "8", "cpu": "190"}, before) == []
    assert filters.allocatable_short({"huawei.com/Ascend910": "7"}, before) == []
    assert filters.allocatable_short({"huawei.com/Ascend910": "6"}, before) == ["huawei.com/Ascend910: 6/7"]
    assert filters.allocatable_short({}, before) == ["huawei.com/Ascend910: 0/7"]
