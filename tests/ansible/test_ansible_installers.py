"""How the Ascend roles drive the vendor installers, and what the installer doubles refuse.

Each behaviour cites the vendor source it follows (HDK-DRV = the driver package scripts as
published in the verylucky01/driver mirror at tag v8.5.0; ADEPLOY = ascend-deployer 26.0.0):

- the driver installer refuses ``--install-for-all`` with ``--upgrade`` (args_parse.sh:239-241) and
  checks the run user in /etc/passwd, not NSS (install.sh:388-404); the roles must never pass that
  combination, and must find a directory-only run user before the drain;
- a driver installed without ``--install-for-all`` is accepted (``--upgrade`` keeps the recorded
  value, install.sh:447-451), not drained and reinstalled;
- an x86_64 management node passes the facts check of an aarch64 profile (only compute nodes are
  checked against ``cluster.arch``);
- CANN kernels/ops downgrades are refused; installers run under a timeout; a URL's credentials
  never reach the output of a failed download.
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest
import test_ansible_hardware as hardware_tests
import yaml
from conftest import FIXTURES as TEST_FIXTURES
from conftest import ROOT as REPO
from role_code import PLAYBOOK, ROLES, playbook_env, plugin

FIXTURES = TEST_FIXTURES / "ascend"


def _role_dir(role: str) -> Path:
    return ROLES / role


def _filters(role: str) -> Any:
    return plugin("filter", role)


# --- the driver installer double ----------------------------------------------------------------


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("packages")
    subprocess.run([str(FIXTURES / "build-packages.sh"), str(out)], check=True)
    return out


DRIVER = "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        # args_parse.sh:239-241 (ERR_NO:0x0004), before anything runs (not even the root check)
        (["--upgrade", "--install-for-all", "--quiet"], "ERR_NO:0x0004;ERR_DES:install-for-all param need used with"),
        (["--install-for-all", "--upgrade"], "ERR_NO:0x0004"),
        # args_parse.sh:243-245
        (["--upgrade", "--install-path=/opt/Ascend"], "ERR_NO:0x0004;ERR_DES:install-path param need used with"),
    ],
)
def test_driver_installer_refuses_install_for_all_with_upgrade(packages: Path, args: List[str], error: str) -> None:
    result = subprocess.run(
        ["bash", str(packages / DRIVER), "--nox11", *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1 and error in result.stderr, result.stderr


def test_driver_installer_still_takes_install_for_all_with_full(packages: Path) -> None:
    # --full --install-for-all passes the option checks (and stops at the root check as a non-root user)
    if os.geteuid() == 0:
        pytest.skip("as root the installer would go on and install")
    result = subprocess.run(
        ["bash", str(packages / DRIVER), "--nox11", "--full", "--quiet", "--install-for-all"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1 and "must run as root" in result.stderr


def test_the_installer_double_checks_the_run_user_in_etc_passwd() -> None:
    body = (FIXTURES / "installer-body.sh").read_text()
    check = body[body.index("check_local_account() {") :]
    check = check[: check.index("\n}\n")]
    assert "/etc/passwd" in check and "/etc/group" in check and "getent" not in check
    # on an upgrade too, with the recorded user (install.sh:1353 runs checkUserAndGroup for both)
    upgrade = body[body.index('if [ "$action" = upgrade ]; then\n    [ "$existing" = 1 ]') :]
    assert upgrade.index("check_local_account") < upgrade.index("else")


# --- the driver installer double and devices in use ------------------------------------------------
# What the real installer does (verylucky01/driver v8.5.0, custom variant scripts/package/custom/driver/common/
# scripts/; lines cited in installer-body.sh): over an installed driver and without --force it refuses (exit 1,
# nothing changed) when a running docker container's inspect output names /dev/davinci_manager
# (driver_install.sh:377-422, common.sh:172-194); any other use of the devices only stops the hot reset
# (device_hot_reset.sh:412-417): the new driver is installed, exit 2, reboot needed (install.sh:103-115);
# --force skips both, so there is no hot reset either: exit 2.

OCCUPIED = "The davinci nodes are occupied by some processes, please stop processes and install or uninstall again"


def _upgrade_in_a_namespace(tmp_path: Path, packages: Path, knobs: str, *args: str) -> Dict[str, str]:
    """Install driver 25.2.0, set the knobs, upgrade to 25.3.0 with args; the installers write to /etc and
    /usr/local, so all of it runs in a private mount namespace with overlays on both (nothing reaches this
    machine). Returns the upgrade's rc and output, the installed and the running version."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    sysfs, state = tmp_path / "sys", tmp_path / "state"
    (state / "containers").mkdir(parents=True)
    (sysfs / "module").mkdir(parents=True)
    for i in range(2):
        dev = sysfs / "bus" / "pci" / "devices" / ("0000:%02x:00.0" % (i + 1))
        dev.mkdir(parents=True)
        (dev / "vendor").write_text("0x19e5\n")
        (dev / "device").write_text("0xd802\n")
    env_file = tmp_path / "fixture.env"
    env_file.write_text(
        "ASCEND_FIXTURE_SYSFS=%s\nASCEND_FIXTURE_STATE=%s\nASCEND_FIXTURE_HOME=%s\n" % (sysfs, state, FIXTURES)
    )
    (old,) = packages.glob("Ascend-hdk-910b-npu-driver_25.2.0_*.run")
    (new,) = packages.glob("Ascend-hdk-910b-npu-driver_25.3.0_*.run")
    script = r"""
set -eu
T=$1; shift
for d in /etc /usr/local; do
  o="$T/overlay$(echo "$d" | tr / _)"
  mkdir -p "$o/up" "$o/work"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$o/up,workdir=$o/work" "$d"
done
grep -q '^HwHiAiUser:' /etc/passwd || echo 'HwHiAiUser:x:64242:64242::/nonexistent:/bin/false' >> /etc/passwd
grep -q '^HwHiAiUser:' /etc/group || echo 'HwHiAiUser:x:64242:' >> /etc/group
bash "$OLD" --nox11 --full --quiet >/dev/null
eval "$KNOBS"
rc=0
bash "$NEW" --nox11 "$@" > "$T/upgrade.out" 2>&1 || rc=$?
echo "rc=$rc"
echo "installed=$(sed -n 's/^Version=//p' /usr/local/Ascend/driver/version.info)"
echo "running=$(cat "$STATE/running_driver")"
"""
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "upgrade", str(tmp_path), *args],
        env=dict(
            os.environ, ASCEND_FIXTURE_ENV=str(env_file), OLD=str(old), NEW=str(new), KNOBS=knobs, STATE=str(state)
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0 and "mount" in result.stderr:
        pytest.skip("no overlay mounts here: %s" % result.stderr.strip())
    assert result.returncode == 0, result.stdout + result.stderr
    out = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    out["output"] = (tmp_path / "upgrade.out").read_text()
    return out


CONTAINER = "printf 'kind=%s\\ndevices=%s\\npid=401\\nprocess=python3\\n' > $STATE/containers/c1"


@pytest.mark.parametrize(
    ("knobs", "args", "rc", "installed", "running"),
    [
        # nothing holds the devices: the hot reset makes the new driver run at once
        ("true", ["--upgrade", "--quiet"], "0", "25.3.0", "25.3.0"),
        # a docker container on /dev/davinci_manager: refused before anything changed
        (
            CONTAINER % ("manual", "/dev/davinci_manager /dev/davinci0"),
            ["--upgrade", "--quiet"],
            "1",
            "25.2.0",
            "25.2.0",
        ),
        # ... not with --force: installed, no hot reset, reboot needed
        (
            CONTAINER % ("manual", "/dev/davinci_manager /dev/davinci0"),
            ["--upgrade", "--quiet", "--force"],
            "2",
            "25.3.0",
            "25.2.0",
        ),
        # a host process, or a container whose inspect names only /dev/davinci0 (checkUserDocker looks for
        # /dev/davinci_manager alone): installed, the hot reset aborted, reboot needed
        ("touch $STATE/busy", ["--upgrade", "--quiet"], "2", "25.3.0", "25.2.0"),
        (CONTAINER % ("pod", "/dev/davinci0"), ["--full", "--quiet"], "2", "25.3.0", "25.2.0"),
        # --force on idle devices: no hot reset either
        ("true", ["--upgrade", "--quiet", "--force"], "2", "25.3.0", "25.2.0"),
    ],
)
def test_the_driver_installer_double_and_devices_in_use(
    tmp_path: Path, packages: Path, knobs: str, args: List[str], rc: str, installed: str, running: str
) -> None:
    out = _upgrade_in_a_namespace(tmp_path, packages, knobs, *args)
    assert (out["rc"], out["installed"], out["running"]) == (rc, installed, running), out["output"]
    if rc == "1":
        assert "[ERROR]\x1b[31m" + OCCUPIED in out["output"] and "add the force parameter" in out["output"]
    if rc == "2":
        assert "\x1b[31mReboot needed for installation/upgrade to take effect! \x1b[0m" in out["output"]


def _render_installer_argv(component: str, action: str, for_all: bool) -> List[str]:
    """The driver role's installer argv (tasks/install_one.yml, the block's
    ``ascend_driver_installer_argv``, which the command runs under timeout(1)) rendered by Ansible's
    templar."""
    from ansible.parsing.dataloader import DataLoader  # type: ignore[import-untyped]
    from ansible.template import Templar, trust_as_template  # type: ignore[import-untyped]

    tasks = yaml.safe_load((_role_dir("ascend_driver") / "tasks" / "install_one.yml").read_text())
    run = next(t for t in tasks[0]["block"] if "ansible.builtin.command" in t)
    assert "ascend_driver_installer_argv" in run["ansible.builtin.command"]["argv"]
    role_vars = yaml.safe_load((_role_dir("ascend_driver") / "vars" / "main.yml").read_text())
    variables = {
        "ascend_driver_installer_args": role_vars["ascend_driver_installer_args"],
        "ascend_package_files": {component: "/p/%s.run" % component},
        "ascend_driver_component": component,
        "ascend_driver_step": {"action": action},
        "ascend_driver_install_for_all": for_all,
        "ascend_driver_user": "HwHiAiUser",
        "ascend_driver_group": "HwHiAiUser",
        "ascend_driver_force": False,
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    argv = templar.template(trust_as_template(tasks[0]["vars"]["ascend_driver_installer_argv"]))
    if isinstance(argv, str):
        argv = yaml.safe_load(argv)
    return list(argv)


@pytest.mark.parametrize("component", ["driver", "firmware"])
@pytest.mark.parametrize("action", ["full", "upgrade"])
@pytest.mark.parametrize("for_all", [True, False])
def test_the_driver_role_never_passes_install_for_all_with_upgrade(component: str, action: str, for_all: bool) -> None:
    argv = _render_installer_argv(component, action, for_all)
    assert argv[:2] == ["bash", "/p/%s.run" % component] and "--" + action in argv
    if action == "upgrade":
        # args_parse.sh:239-241 and :254-258: neither --install-for-all nor the run-user options
        assert not [a for a in argv if a == "--install-for-all" or a.startswith("--install-user")]
    else:
        assert ("--install-for-all" in argv) == (for_all and component == "driver")


# --- decisions of the driver role ----------------------------------------------------------------

driver_filters = _filters("ascend_driver")
cann_filters = _filters("ascend_cann")
# the decide parameters of the hardware tests (a 910B x86_64 node, HDK 25.2.0, HwHiAiUser 1000:1000)
NODES = hardware_tests.NODES
_params = hardware_tests._params
USER = {"name": "HwHiAiUser", "uid": 1000, "gid": 1000, "home": "/home/HwHiAiUser", "shell": "/bin/bash"}
GROUP = {"name": "HwHiAiUser", "gid": 1000, "members": []}
PASSWD = "root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash"
GROUPS = "root:x:0:\nHwHiAiUser:x:1000:"


def _node(
    driver: Optional[str] = "25.2.0",
    for_all: str = "yes",
    passwd: Optional[str] = PASSWD,
    group: Optional[str] = GROUPS,
) -> Dict[str, Any]:
    files: Dict[str, Any] = {"/etc/passwd": passwd, "/etc/group": group}
    return {
        "arch": "x86_64",
        "present": True,
        "devices": [{"device_id": "d802", "chip": "910B", "profile_chip": "ascend-910b"}] * 8,
        "chips": ["910B"],
        "board_id": "0x33",
        "accelerator_types": ["module-910b-8"],
        "driver": {"installed": driver is not None, "version": driver, "complete": driver is not None},
        "firmware": {"installed": True, "version": "7.7.0.1.231"},
        "install_info": {"Driver_Install_For_All": for_all, "UserName": "HwHiAiUser", "UserGroup": "HwHiAiUser"}
        if driver
        else {},
        "accounts": {"users": {"HwHiAiUser": USER, "1000": USER}, "groups": {"HwHiAiUser": GROUP, "1000": GROUP}},
        "packages": {},
        "files": files,
    }


def test_a_driver_installed_without_install_for_all_is_accepted_not_reinstalled() -> None:
    decide = driver_filters.ascend_driver_decide
    # the fleet runs the wanted driver, installed without --install-for-all; the role wants it
    d = decide(_node(for_all="no"), _params())
    assert d["problems"] == [] and not d["needs_window"] and not d["needs_change"]
    assert d["plan"]["order"] == [] and d["plan"]["driver"]["action"] is None
    assert d["plan"]["notes"] == [
        "installed with Driver_Install_For_All=no (/etc/ascend_install.info), ascend_driver_install_for_all wants "
        "yes: kept (--upgrade keeps it; changing it needs an uninstall and --full by hand, in a window)"
    ]
    assert "Driver_Install_For_All=no" in d["plan"]["driver"]["reason"]
    # a new version is an --upgrade (which keeps the recorded value), not a --full reinstall
    up = decide(
        _node(for_all="no"),
        _params(
            versions={"driver": "25.3.0", "firmware": "7.7.0.1.231"},
            plan_nodes=dict(NODES, hdk="25.3.0"),
            packages={"driver": {"src": "/srv/Ascend-hdk-910b-npu-driver_25.3.0_linux-x86-64.run"}},
        ),
    )
    assert up["problems"] == [] and up["plan"]["order"] == ["driver"]
    assert up["plan"]["driver"]["action"] == "upgrade"
    # the other way round too
    other = decide(_node(for_all="yes"), _params(install_for_all=False))
    assert other["plan"]["order"] == [] and not other["needs_window"]


def test_a_directory_only_run_user_is_refused_before_the_drain() -> None:
    decide = driver_filters.ascend_driver_decide
    ldap = "root:x:0:0:root:/root:/bin/bash\nhwhiaiuser2:x:1001:1001::/home/x:/bin/sh"
    # HwHiAiUser and its group come from LDAP/SSSD: getent finds them, /etc/passwd and /etc/group do not
    d = decide(_node(driver=None, passwd=ldap, group="root:x:0:"), _params())
    assert d["plan"]["changes"] and not d["account"]["create_user"] and not d["account"]["create_group"]
    assert len(d["problems"]) == 2
    assert d["problems"][0].startswith(
        "the driver run user HwHiAiUser is known to NSS (LDAP/SSSD) but is not in /etc/passwd, where the driver "
        "installer looks it up (it would refuse with ERR_NO:0x0091 after the node was drained): add a local entry "
        "with the same ids (uid 1000, gid 1000;"
    )
    assert "vipw" in d["problems"][0] and "local: true" in d["problems"][0]
    assert d["problems"][1].startswith(
        "the driver run group HwHiAiUser is known to NSS (LDAP/SSSD) but is not in /etc/group"
    )
    # a local user passes; so does a node where nothing will be installed
    assert decide(_node(driver=None), _params())["problems"] == []
    assert decide(_node(passwd=ldap, group="root:x:0:"), _params())["problems"] == []
    # a user the role creates itself is local
    fresh = _node(driver=None, passwd="root:x:0:0::/root:/bin/sh", group="root:x:0:")
    fresh["accounts"] = {"users": {"HwHiAiUser": None, "1000": None}, "groups": {"HwHiAiUser": None, "1000": None}}
    assert decide(fresh, _params())["problems"] == []


def test_the_driver_role_reads_the_local_account_files() -> None:
    read = yaml.safe_load((_role_dir("ascend_driver") / "tasks" / "read.yml").read_text())
    files = read[0]["vars"]["npu_facts_state_files"]
    assert "/etc/passwd" in files and "/etc/group" in files


# --- CANN ----------------------------------------------------------------------------------------


def test_cann_refuses_a_kernels_or_ops_downgrade() -> None:
    plan = cann_filters.ascend_cann_plan
    cann = {"installed": True, "version": "8.5.0", "ops_version": "8.5.1"}
    down = plan(cann, "8.5.0", True)
    assert not down["changes"] and (down["toolkit"], down["ops"]) == ("none", "none")
    assert down["refusals"] == [
        "refusing to downgrade the CANN kernels/ops package from 8.5.1 to 8.5.0 (set ascend_cann_allow_downgrade=true "
        "if intended)"
    ]
    allowed = plan(cann, "8.5.0", True, [], True)
    assert allowed["ops"] == "install" and allowed["refusals"] == []
    # without an ops package to install, an installed newer one is not our business
    assert plan(cann, "8.5.0", False)["refusals"] == []
    # the decide pass stops on it before anything is fetched
    facts = {"cann": cann, "arch": "x86_64", "chips": ["910B"], "files": {}}
    decided = cann_filters.ascend_cann_decide(
        facts,
        {
            "version": "8.5.0",
            "toolkit_package": {"path": "/p/Ascend-cann-toolkit_8.5.0_linux-x86_64.run"},
            "ops_package": {"path": "/p/Ascend-cann-910b-ops_8.5.0_linux-x86_64.run"},
            "allow_downgrade": False,
            "state_dir": "/var/lib/ascend-resumable",
        },
    )
    assert decided["problems"] == down["refusals"] and not decided["needs_change"]


# --- playbook runs on localhost ------------------------------------------------------------------


def _play(
    tmp_path: Path,
    tasks: List[Dict[str, Any]],
    extra_vars: Optional[Dict[str, Any]] = None,
    groups: Optional[Dict[str, Any]] = None,
    timeout: int = 240,
) -> subprocess.CompletedProcess[str]:
    if PLAYBOOK is None:
        pytest.skip("ansible-playbook is not installed (make test-venv)")
    inventory = {
        "all": {
            "hosts": {"node": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
            "children": groups or {},
        }
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    play = [{"name": "test", "hosts": "node", "gather_facts": False, "vars": extra_vars or {}, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    return subprocess.run(
        [PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
        capture_output=True,
        text=True,
        env=playbook_env(tmp_path, str(REPO)),
        timeout=timeout,
        check=False,
    )


def _facts_tasks(tmp_path: Path) -> List[Dict[str, Any]]:
    (tmp_path / "sys" / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
    return [
        {
            "name": "Read the facts with the profile check",
            "ansible.builtin.include_role": {"name": "ascend_resumable.npu.npu_facts"},
            "vars": {
                "npu_facts_sysfs_root": str(tmp_path / "sys"),
                "npu_facts_npu_smi": str(tmp_path / "no-npu-smi"),
                "npu_facts_install_root": str(tmp_path / "Ascend"),
                "npu_facts_install_info": str(tmp_path / "ascend_install.info"),
                "npu_facts_cann_registry": str(tmp_path / "ascend_cann_install.info"),
                "npu_facts_container_clis": [],
            },
        }
    ]


def _other_arch() -> str:
    return "x86_64" if os.uname().machine == "aarch64" else "aarch64"


def test_a_management_node_of_another_arch_passes_the_facts_check(tmp_path: Path) -> None:
    nodes = {"chip": "ascend-910b", "accelerator_type": "module-910b-8", "arch": _other_arch()}
    mgmt = _play(
        tmp_path, _facts_tasks(tmp_path), {"ascend_plan_nodes": nodes}, {"ascend_management": {"hosts": {"node": {}}}}
    )
    assert mgmt.returncode == 0, mgmt.stdout + mgmt.stderr
    # the same host as a compute node is refused, naming both architectures
    compute = _play(
        tmp_path, _facts_tasks(tmp_path), {"ascend_plan_nodes": nodes}, {"ascend_compute": {"hosts": {"node": {}}}}
    )
    assert compute.returncode != 0
    assert "the profile says cluster.arch %s, the node is %s" % (_other_arch(), os.uname().machine) in compute.stdout


# --- installer timeout ---------------------------------------------------------------------------


def test_a_hung_cann_installer_fails_the_node_instead_of_hanging_the_run(tmp_path: Path) -> None:
    hung = tmp_path / "hung.run"
    hung.write_text("#!/bin/bash\necho started\nsleep 600\n")
    state = tmp_path / "state"
    tasks = [
        {
            "name": "Run the CANN installer step",
            "ansible.builtin.include_tasks": str(_role_dir("ascend_cann") / "tasks" / "run_installer.yml"),
            "vars": {
                "ascend_cann_component": "toolkit",
                "ascend_cann_argv": ["bash", str(hung), "--nox11", "--install", "--quiet"],
                "ascend_cann_stdin": "",
                "ascend_cann_state_dir": str(state),
                "ascend_cann_version": "8.5.0",
                "ascend_cann_installer_timeout": 3,
                "ascend_cann_installer_poll": 1,
            },
        }
    ]
    started = time.monotonic()
    result = _play(tmp_path, tasks, {"ansible_become": False}, timeout=120)
    took = time.monotonic() - started
    assert result.returncode != 0 and took < 60, result.stdout
    assert "did not finish within 3 s" in result.stdout
    assert (state / "cann-toolkit.inprogress").exists()
    # the installer was killed, not left running
    left = subprocess.run(["pgrep", "-f", str(hung)], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == ""


def _driver_install_step(tmp_path: Path, installer: Path, state: Path, to: str, timeout: int) -> List[Dict[str, Any]]:
    """A play's tasks that run the driver role's install_one.yml (an upgrade of the driver to ``to``)
    with ``installer`` as the driver package, its state under ``state``."""
    state.mkdir()
    role_vars = yaml.safe_load((_role_dir("ascend_driver") / "vars" / "main.yml").read_text())
    return [
        {
            "name": "Run the driver installer step",
            "ansible.builtin.include_tasks": str(_role_dir("ascend_driver") / "tasks" / "install_one.yml"),
            "vars": {
                "ascend_driver_component": "driver",
                "ascend_driver_plan": {"driver": {"to": to, "action": "upgrade"}},
                "ascend_package_files": {"driver": str(installer)},
                "ascend_driver_installer_args": role_vars["ascend_driver_installer_args"],
                "ascend_driver_state_dir": str(state),
                "ascend_driver_install_for_all": True,
                "ascend_driver_user": "HwHiAiUser",
                "ascend_driver_group": "HwHiAiUser",
                "ascend_driver_force": False,
                "ascend_driver_reboot_marker": str(tmp_path / "reboot-required"),
                "ascend_driver_reboot_policy": "if_needed",
                "ascend_driver_installer_timeout": timeout,
                "ascend_driver_installer_poll": 1,
            },
        }
    ]


def test_a_hung_driver_installer_fails_the_node_instead_of_hanging_the_run(tmp_path: Path) -> None:
    hung = tmp_path / "hung-driver.run"
    hung.write_text("#!/bin/bash\necho started\nsleep 600\n")
    state = tmp_path / "state"
    tasks = _driver_install_step(tmp_path, hung, state, "25.2.0", timeout=3)
    started = time.monotonic()
    result = _play(tmp_path, tasks, {"ansible_become": False}, timeout=120)
    assert result.returncode != 0 and time.monotonic() - started < 60, result.stdout
    assert "it did not finish within 3 s (ascend_driver_installer_timeout) and was killed" in result.stdout
    assert (state / "driver.inprogress").exists() and not (tmp_path / "reboot-required").exists()
    left = subprocess.run(["pgrep", "-f", str(hung)], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == ""
    specs = yaml.safe_load((_role_dir("ascend_driver") / "meta" / "argument_specs.yml").read_text())
    assert "ascend_driver_installer_timeout" in specs["argument_specs"]["main"]["options"]


def test_the_driver_installers_refusal_on_stdout_is_the_reason_the_node_fails(tmp_path: Path) -> None:
    """The driver installer prints its errors on stdout (log_common.sh:45-48); the role's failure names them."""
    refusing = tmp_path / "busy-driver.run"
    lines = (FIXTURES / "installer-body.sh").read_text()
    assert "The davinci nodes are occupied" in lines  # the double's refusal, printed the same way
    refusing.write_text(
        "#!/bin/bash\n"
        'echo -e "[Driver] [2026-01-01 00:00:00] [ERROR]\\033[31m%s, details in : /var/log/x \\033[0m"\n'
        'echo "[Driver] [2026-01-01 00:00:00] [INFO]If you want to install or uninstall the driver forcibly, '
        'add the force parameter. For details, see [--help]."\n'
        "exit 1\n" % OCCUPIED
    )
    state = tmp_path / "state"
    tasks = _driver_install_step(tmp_path, refusing, state, "25.3.0", timeout=60)
    result = _play(tmp_path, tasks, {"ansible_become": False}, timeout=120)
    assert result.returncode != 0, result.stdout
    output = " ".join(result.stdout.split())
    failure = output[output.index("Action failed: The driver installer") :]
    failure = failure[: failure.index("(cordoned)")]
    # the [ERROR] line, not the rest of what the installer printed
    assert "failed on node: rc=1 [Driver] [2026-01-01 00:00:00] [ERROR]" in failure and OCCUPIED in failure, failure
    assert "add the force parameter" not in failure and not (tmp_path / "reboot-required").exists()


# --- URL credentials -----------------------------------------------------------------------------


@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1:%d" % server.server_address[1], root
    finally:
        server.shutdown()
        server.server_close()


def test_url_credentials_never_reach_the_output_of_a_failed_download(
    tmp_path: Path, http_root: tuple[str, Path]
) -> None:
    address, root = http_root
    name = "Ascend-cann-toolkit_8.5.0_linux-x86_64.run"
    (root / name).write_text("not the package the checksum names\n")
    url = "http://deploy:s3cr3t-Pa55@%s/%s" % (address, name)

    def fetch(item: Dict[str, str]) -> List[Dict[str, Any]]:
        return [
            {
                "name": "Fetch",
                "ansible.builtin.include_role": {"name": "ascend_resumable.npu.ascend_package"},
                "vars": {"ascend_package_items": {"toolkit": item}, "ascend_package_dir": str(tmp_path / "cache")},
            }
        ]

    tasks = fetch({"url": url, "checksum": "sha256:" + "0" * 64})
    result = _play(tmp_path, tasks, {"ansible_become": False})
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "s3cr3t-Pa55" not in out and "deploy:" not in out
    assert "http://***@%s/%s" % (address, name) in out
    assert "checksum" in out.lower()
    # a malformed item is refused without printing its URL either
    refused = _play(tmp_path, fetch({"url": url}), {"ansible_become": False})
    assert refused.returncode != 0 and "s3cr3t-Pa55" not in refused.stdout + refused.stderr
    assert "http://***@%s/%s" % (address, name) in refused.stdout
