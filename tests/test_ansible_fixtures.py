"""Unit tests for the Ansible part: version/plan filters, npu-smi parsing, fixture packages."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Optional

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "ascend"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


plan_filters = _load("ascend_driver_filters", REPO / "roles/ascend_driver/filter_plugins/ascend_driver.py")
facts_module = _load("ascend_npu_facts", REPO / "roles/npu_facts/library/ascend_npu_facts.py")


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("25.0.rc1", "25.0.0", -1),
        ("25.0.rc1", "25.0.rc1.1", -1),
        ("25.3.0", "25.2.0", 1),
        ("7.7.0.1.231", "7.7.0.1.231", 0),
        ("8.3.RC1", "8.5.0", -1),
    ],
)
def test_version_compare(left: str, right: str, expected: int) -> None:
    assert plan_filters.ascend_version_compare(left, right) == expected


def test_ranges_with_prefix_upper_bound() -> None:
    ranges = "[25.2.0,25.2.0.],[25.3.0,25.3.0.]"
    assert plan_filters.ascend_version_in_ranges("25.2.0", ranges)
    assert plan_filters.ascend_version_in_ranges("25.3.0.1", ranges)
    assert not plan_filters.ascend_version_in_ranges("25.5.0", ranges)
    assert plan_filters.ascend_version_in_ranges("7.7.0.1.231", "[7.0.0,7.7.99]")
    assert not plan_filters.ascend_version_in_ranges("7.8.0.1.220", "[7.0.0,7.7.99]")
    assert plan_filters.ascend_version_in_ranges("", "[7.0.0,7.7.99]") is None


def _facts(
    driver: Optional[str] = None, firmware: Optional[str] = None, complete: bool = True, for_all: str = "yes"
) -> Dict[str, Any]:
    return {
        "driver": {"installed": driver is not None, "version": driver, "complete": complete and driver is not None},
        "firmware": {"installed": firmware is not None, "version": firmware},
        "install_info": {"Driver_Install_For_All": for_all} if driver else {},
    }


def test_plan_fresh_node_driver_first() -> None:
    plan = plan_filters.ascend_driver_plan(_facts(), "25.2.0", "7.7.0.1.231")
    assert plan["order"] == ["driver", "firmware"]
    assert plan["driver"]["action"] == "full"


def test_plan_upgrade_firmware_first() -> None:
    plan = plan_filters.ascend_driver_plan(_facts("25.2.0", "7.7.0.1.231"), "25.3.0", "7.8.0.1.220")
    assert plan["order"] == ["firmware", "driver"]
    assert plan["driver"]["action"] == "upgrade"


def test_plan_converged_node_does_nothing() -> None:
    plan = plan_filters.ascend_driver_plan(_facts("25.2.0", "7.7.0.1.231"), "25.2.0", "7.7.0.1.231")
    assert plan["order"] == [] and not plan["changes"]


def test_plan_install_parameter_change_reinstalls_with_full() -> None:
    plan = plan_filters.ascend_driver_plan(_facts("25.2.0", "7.7.0.1.231"), "25.2.0", "7.7.0.1.231", False)
    assert plan["order"] == ["driver"] and plan["driver"]["action"] == "full"


def test_plan_refuses_downgrade_unless_allowed() -> None:
    plan = plan_filters.ascend_driver_plan(_facts("25.2.0", "7.7.0.1.231"), "25.1.0", "7.7.0.1.231")
    assert plan["downgrades"] == ["driver"]
    allowed = plan_filters.ascend_driver_plan(_facts("25.2.0", "7.7.0.1.231"), "25.1.0", "", True, [], True)
    assert allowed["driver"]["action"] == "full"


def test_plan_resumes_interrupted_driver_in_fresh_order() -> None:
    plan = plan_filters.ascend_driver_plan(_facts("25.3.0", "7.8.0.1.220"), "25.3.0", "7.8.0.1.220", True, ["driver"])
    assert plan["order"] == ["driver"] and plan["driver"]["action"] == "full"
    incomplete = plan_filters.ascend_driver_plan(_facts("25.3.0", "7.8.0.1.220", complete=False), "25.3.0", "")
    assert incomplete["driver"]["action"] == "full"


def test_parse_npu_smi_fixture_output(tmp_path: Path) -> None:
    sysfs = tmp_path / "sys"
    state = tmp_path / "state"
    root = tmp_path / "Ascend"
    env_file = tmp_path / "fixture.env"
    (root / "driver").mkdir(parents=True)
    (root / "driver" / "version.info").write_text("Version=25.2.0\n")
    state.mkdir()
    (state / "busy").write_text("")
    (sysfs / "module" / "drv_pcie_host").mkdir(parents=True)
    for i, bus in enumerate(["01", "02"]):
        dev = sysfs / "bus" / "pci" / "devices" / ("0000:%s:00.0" % bus)
        dev.mkdir(parents=True)
        for name, value in [("vendor", "0x19e5"), ("device", "0xd802"), ("subsystem_vendor", "0x19e5")]:
            (dev / name).write_text(value + "\n")
        (dev / "subsystem_device").write_text("0x300%d\n" % i)
    env_file.write_text(
        "ASCEND_FIXTURE_SYSFS=%s\nASCEND_FIXTURE_STATE=%s\nASCEND_FIXTURE_ROOT=%s\n" % (sysfs, state, root)
    )
    out = subprocess.run(
        [str(FIXTURES / "npu-smi"), "info"],
        env={"ASCEND_FIXTURE_ENV": str(env_file), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    version, health, processes = facts_module.parse_npu_smi(out)
    assert version == "25.2.0"
    assert health == {"0": "OK", "1": "OK"}
    assert [p["pid"] for p in processes] == ["4242"]
    devices = facts_module.pci_devices(str(sysfs))
    assert [d["product"] for d in devices] == ["Atlas 800T A2 / 900 A2 PoD", "Atlas 800T A2 / 900 A2 PoD"]


def test_generated_packages_are_deterministic(tmp_path: Path) -> None:
    for out in (tmp_path / "a", tmp_path / "b"):
        subprocess.run([str(FIXTURES / "build-packages.sh"), str(out)], check=True)
    names = sorted(p.name for p in (tmp_path / "a").glob("*.run"))
    assert len(names) == 10
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    version = subprocess.run(
        ["bash", str(tmp_path / "a" / "Ascend-hdk-910b-npu-driver_25.3.0_linux-x86-64.run"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == "25.3.0"
