#!/usr/bin/python
"""Read-only Ascend NPU facts: PCI devices, installed and running driver/firmware, CANN, npu-smi."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_npu_facts
short_description: Collect Ascend NPU hardware and software facts (read-only)
description:
  - Lists Huawei Ascend PCI functions from sysfs and maps device and subsystem ids to chip
    family, product and the C(cluster.chip) value of a resumable profile.
  - Reads the installed driver and firmware C(version.info), C(/etc/ascend_install.info) and the
    CANN toolkit and kernels/ops install records in both layouts (C(ascend-toolkit/latest) up
    to 8.3, C(cann) -> C(cann-<version>) from 8.5).
  - Asks C(npu-smi) for health per chip (910B, A3 and Atlas 350/950 tables), the processes on the NPUs,
    the running driver version, and the running firmware of every NPU and the board id. C(running.firmware)
    is the version all NPUs run; when they differ, the first one that is not the installed version (so a
    node whose NPUs do not all run the installed firmware never looks converged); C(npu_smi.firmware_by_npu)
    has each.
  - With I(check_holders), also lists host processes with C(/dev/davinci*) device nodes open and
    containers (docker, CRI) whose spec lists such nodes. C(busy) counts processes only (npu-smi's
    table and the host processes), because containerd lists every host device in the spec of a
    privileged container, so a spec entry does not mean an NPU is used. Processes the driver installer
    kills itself before its hot reset (I(reset_kill_config), I(device_syslog_config)) are listed under
    C(holders.killed_by_installer) and do not count.
  - Never changes anything; fully supports check mode.
options:
  sysfs_root:
    description: Root of the sysfs tree to read PCI devices and loaded modules from.
    type: path
    default: /sys
  npu_smi:
    description: Path of the npu-smi binary.
    type: path
    default: /usr/local/sbin/npu-smi
  install_root:
    description: Ascend install root of driver, firmware and CANN.
    type: path
    default: /usr/local/Ascend
  install_info:
    description: Driver/firmware install record written by the vendor installers.
    type: path
    default: /etc/ascend_install.info
  cann_registry:
    description: CANN >= 8.5 root install registry.
    type: path
    default: /etc/Ascend/ascend_cann_install.info
  cann_home:
    description: Home of CANN >= 8.5 (a link to C(cann-<version>)); default C(<install_root>/cann).
    type: path
  toolkit_home:
    description: Home of CANN <= 8.3; default C(<install_root>/ascend-toolkit/latest).
    type: path
  check_holders:
    description: Also look for processes and containers holding NPU device nodes.
    type: bool
    default: false
  proc_root:
    description: Root of the proc file system scanned for open NPU device nodes.
    type: path
    default: /proc
  reset_kill_config:
    description:
      - The driver installer's list of processes it kills before a hot reset on A2/A3 devices
        (C(AllowKilledWhenResetNPU:<name>:<pid>) lines; Huawei driver scripts, common.sh killWhiteProcess).
    type: path
    default: /etc/custom_process.cfg
  device_syslog_config:
    description:
      - Device syslog configuration; when a C(syslog_*_mode:enable) line is in it the driver installer kills the
        C(msnpureport report --permanent) log daemons before a hot reset (device_hot_reset.sh).
    type: path
    default: /etc/npu_dev_syslog.cfg
  container_clis:
    description: Container CLIs asked for containers with NPU devices (missing ones are skipped).
    type: list
    elements: str
    default: [docker, crictl]
  state_files:
    description: Small files (e.g. role state) whose content is returned under C(files); missing = null.
    type: list
    elements: path
    default: []
  state_dirs:
    description:
      - Directories whose small regular files (not recursive) are returned under C(files), so a role reads
        all its state in the same call. Missing directories are listed as read and empty.
    type: list
    elements: path
    default: []
  packages:
    description:
      - OS packages whose installed version is returned under C(packages) (C(dpkg-query) or C(rpm)), so a role
        can tell missing prerequisites without another call. A list of names, or a dict OS family -> names
        (the family of this node is used). C({kernel}) in a name is replaced by the running kernel release.
    type: raw
    default: []
  tag:
    description:
      - Returned as C(tag), so a caller can tell which read (with which state files, accounts and packages) the
        C(ascend_npu) fact it finds came from, and reuse it instead of reading the node again.
    type: str
    default: ""
  accounts:
    description:
      - Keyed account lookups through NSS (like C(getent passwd KEY) / C(getent group KEY), so directory users
        work and no whole database is read). C(users) and C(groups) are lists of names or numeric ids.
    type: dict
    default: {}
  runtime_config:
    description:
      - The options of M(ascend_resumable.npu.ascend_runtime_config) (engine, runtime_path and the others). Its
        check-mode result (config_changes, installed and the others, without the diff) is returned as
        C(runtime_config) of the fact, so the read of a compute node also says whether the engine configuration
        would change, without another module run.
      - What would fail that module is returned as C({failed, msg}) instead of failing this read.
    type: dict
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Gather NPU facts
  ascend_resumable.npu.ascend_npu_facts:
    sysfs_root: /sys
"""

RETURN = r"""
ansible_facts:
  description: C(ascend_npu) dictionary (see docs/ansible.md for every key).
  returned: always
  type: dict
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_engine import dry_run
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_hardware import (
    CHIPS,
    PRODUCTS,
    VENDOR,
    board_accelerator_types,
    crictl_holders,
    docker_holders,
    is_device_path,
    npu_holders,
    parse_board,
    parse_npu_smi,
    reset_killed_pids,
    short_id,
)
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_node import (
    installed_packages,
    lookup_accounts,
    os_family,
)
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_node import (
    key_values as _kv,
)
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_node import (
    read_text as _read,
)
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version import VersionError, in_ranges

_MAX_STATE_FILES = 64


def _arch():
    machine = os.uname()[4]
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine, machine)


def state_dir_files(directories):
    files = {}
    for directory in directories:
        try:
            names = sorted(os.listdir(directory))[:_MAX_STATE_FILES]
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                files[path] = _read(path)
    return files


def pci_devices(sysfs_root):
    devices = []
    for path in sorted(glob.glob(os.path.join(sysfs_root, "bus", "pci", "devices", "*"))):
        if (_read(os.path.join(path, "vendor")) or "").lower() != VENDOR:
            continue
        device = short_id(_read(os.path.join(path, "device")))
        sub_vendor = short_id(_read(os.path.join(path, "subsystem_vendor")))
        sub_device = short_id(_read(os.path.join(path, "subsystem_device")))
        chip, profile_chip = CHIPS.get(device, (None, None))
        devices.append(
            {
                "address": os.path.basename(path),
                "device_id": device,
                "subsystem_vendor": sub_vendor,
                "subsystem_device": sub_device,
                "chip": chip,
                "profile_chip": profile_chip,
                "product": PRODUCTS.get((device, sub_vendor, sub_device)),
            }
        )
    return devices


def cann_facts(root, cann_home, toolkit_home, arch):
    """The active toolkit in either layout, and its kernels (<= 8.3) / ops (>= 8.5) version.

    >= 8.5 (docs/ansible.md "CANN layouts"): <root>/cann -> cann-<version>, records in
    cann/<arch>-linux/ascend_toolkit_install.info and ascend_ops_install.info, cann/set_env.sh.
    <= 8.3: <root>/ascend-toolkit/<version> + latest, ascend-toolkit/set_env.sh, kernels in
    latest/opp_kernel/version.info.
    """
    result = {
        "installed": False,
        "version": None,
        "layout": None,
        "home": None,
        "set_env": None,
        "install_info": None,
        "install_conf": None,
        "ops_version": None,
        "versions_present": sorted(os.path.basename(p)[5:] for p in glob.glob(os.path.join(root, "cann-*"))),
    }
    layouts = [
        ("unified", cann_home, cann_home),
        ("legacy", toolkit_home, os.path.dirname(toolkit_home)),
    ]
    for layout, home, base in layouts:
        infos = sorted(glob.glob(os.path.join(home, "*-linux", "ascend_toolkit_install.info")))
        if not infos:
            continue
        preferred = os.path.join(home, "%s-linux" % arch, "ascend_toolkit_install.info")
        info = _kv(preferred if preferred in infos else infos[0]) or {}
        set_env = os.path.join(base, "set_env.sh")
        confs = sorted(glob.glob(os.path.join(home, "*", "install.conf")))
        result.update(
            {
                "installed": True,
                "version": info.get("version"),
                "layout": layout,
                "home": os.path.realpath(home),
                "install_info": info,
                "set_env": set_env if os.path.isfile(set_env) else None,
                "install_conf": _kv(confs[0]) if confs else None,
            }
        )
        if layout == "unified":
            ops = _kv(os.path.join(os.path.dirname(infos[0]), "ascend_ops_install.info")) or {}
            result["ops_version"] = ops.get("version")
        else:
            ops = _kv(os.path.join(home, "opp_kernel", "version.info")) or {}
            result["ops_version"] = ops.get("Version")
        break
    return result


def proc_holders(proc_root):
    """Processes with an open NPU device node (like fuser /dev/davinci*), any runtime."""
    holders = []
    me = str(os.getpid())
    for pid in sorted(p for p in os.listdir(proc_root) if p.isdigit() and p != me):
        devices = set()
        fd_dir = os.path.join(proc_root, pid, "fd")
        try:
            for fd in os.listdir(fd_dir):
                try:
                    target = os.readlink(os.path.join(fd_dir, fd))
                except OSError:
                    continue
                if is_device_path(target):
                    devices.add(target)
        except OSError:
            continue
        if devices:
            holders.append(
                {"pid": pid, "comm": _read(os.path.join(proc_root, pid, "comm")) or "", "devices": sorted(devices)}
            )
    return holders


def container_holders(module, clis):
    holders, errors = [], []
    for cli in clis:
        path = cli if os.path.isabs(cli) else module.get_bin_path(cli)
        if not path or not os.access(path, os.X_OK):
            continue
        rc, out, err = module.run_command([path, "ps", "-q"])
        if rc != 0:
            errors.append("%s ps: %s" % (cli, (err or out).strip()))
            continue
        ids = out.split()
        if not ids:
            continue
        if os.path.basename(path).startswith("crictl"):
            for cid in ids:
                rc, out, err = module.run_command([path, "inspect", cid])
                if rc == 0:
                    holders.extend(crictl_holders(out))
        else:
            rc, out, err = module.run_command([path, "inspect", *ids])
            if rc == 0:
                holders.extend(docker_holders(out))
            else:
                errors.append("%s inspect: %s" % (cli, (err or out).strip()))
    return holders, errors


def npu_smi_facts(module, path, present):
    smi = {
        "available": False,
        "rc": None,
        "driver_version": None,
        "firmware_version": None,
        "firmware_by_npu": {},
        "health": {},
        "chips": [],
        "all_healthy": None,
        "processes": [],
        "busy": None,
        "board_id": None,
        "error": None,
    }
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return smi
    rc, out, err = module.run_command([path, "info"])
    smi["rc"] = rc
    if rc != 0:
        smi["error"] = (err or out).strip()
        return smi
    parsed = parse_npu_smi(out)
    smi.update(
        {
            "available": True,
            "driver_version": parsed["driver_version"],
            "health": parsed["npus"],
            "chips": parsed["chips"],
            "processes": parsed["processes"],
            "all_healthy": bool(parsed["npus"]) and all(h == "OK" for h in parsed["npus"].values()),
            "busy": bool(parsed["processes"]),
        }
    )
    smi["firmware_by_npu"] = {}
    if present:
        # every NPU: a firmware upgrade that reached only some of them must not look complete
        for npu in sorted(parsed["npus"], key=int):
            brc, bout, _ = module.run_command([path, "info", "-t", "board", "-i", npu])
            board = parse_board(bout) if brc == 0 else {"board_id": None, "firmware_version": None}
            smi["board_id"] = smi["board_id"] or board["board_id"]
            smi["firmware_by_npu"][npu] = board["firmware_version"]
        versions = set(smi["firmware_by_npu"].values())
        smi["firmware_version"] = versions.pop() if len(versions) == 1 else None
    return smi


def running_firmware(by_npu, installed):
    """The firmware all NPUs run; when they differ, the first that is not ``installed`` (or None)."""
    versions = [by_npu[n] for n in sorted(by_npu, key=int)]
    if len(set(versions)) == 1:
        return versions[0]
    return next((v for v in versions if v != installed), None)


def process_identities(proc_root, pids):
    """{pid: {"name": /proc/<pid>/status Name, "cmdline": argv joined by spaces}} of the live pids."""
    out = {}
    for pid in pids:
        status = _read(os.path.join(proc_root, pid, "status"))
        if status is None:
            continue
        name = next((line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("Name:")), "")
        cmdline = _read(os.path.join(proc_root, pid, "cmdline")) or ""
        out[pid] = {"name": name, "cmdline": " ".join(cmdline.replace("\0", " ").split())}
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            npu_smi=dict(type="path", default="/usr/local/sbin/npu-smi"),
            install_root=dict(type="path", default="/usr/local/Ascend"),
            install_info=dict(type="path", default="/etc/ascend_install.info"),
            cann_registry=dict(type="path", default="/etc/Ascend/ascend_cann_install.info"),
            cann_home=dict(type="path"),
            toolkit_home=dict(type="path"),
            check_holders=dict(type="bool", default=False),
            proc_root=dict(type="path", default="/proc"),
            reset_kill_config=dict(type="path", default="/etc/custom_process.cfg"),
            device_syslog_config=dict(type="path", default="/etc/npu_dev_syslog.cfg"),
            container_clis=dict(type="list", elements="str", default=["docker", "crictl"]),
            state_files=dict(type="list", elements="path", default=[]),
            state_dirs=dict(type="list", elements="path", default=[]),
            accounts=dict(type="dict", default={}),
            packages=dict(type="raw", default=[]),
            tag=dict(type="str", default=""),
            runtime_config=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    root = params["install_root"]
    arch = _arch()
    family = os_family()

    devices = pci_devices(params["sysfs_root"])
    chips = sorted(set(d["chip"] for d in devices if d["chip"]))

    drv = _kv(os.path.join(root, "driver", "version.info"))
    fw = _kv(os.path.join(root, "firmware", "version.info"))
    driver = {
        "installed": drv is not None,
        "version": (drv or {}).get("Version"),
        # ascend-deployer treats version.info without tools/upgrade-tool as a broken install (1.8)
        "complete": drv is not None and os.path.exists(os.path.join(root, "driver", "tools", "upgrade-tool")),
        "compatible_version_fw": (drv or {}).get("compatible_version_fw"),
        "innerversion": (drv or {}).get("Innerversion"),
        "loaded": os.path.isdir(os.path.join(params["sysfs_root"], "module", "drv_pcie_host")),
    }
    firmware = {
        "installed": fw is not None,
        "version": (fw or {}).get("Version"),
        "compatible_version_drv": (fw or {}).get("compatible_version_drv"),
    }
    compatible = None
    if driver["version"] and firmware["version"]:
        try:
            checks = [
                in_ranges(firmware["version"], driver["compatible_version_fw"]),
                in_ranges(driver["version"], firmware["compatible_version_drv"]),
            ]
            compatible = all(c is not False for c in checks)
        except VersionError:
            compatible = None

    smi = npu_smi_facts(module, params["npu_smi"], bool(devices))
    holders = {
        "checked": False,
        "processes": [],
        "containers": [],
        "holding": [],
        "errors": [],
        "killed_by_installer": [],
    }
    if params["check_holders"]:
        containers, errors = container_holders(module, params["container_clis"])
        holders = {
            "checked": True,
            "processes": proc_holders(params["proc_root"]),
            "containers": containers,
            "errors": errors,
        }
    candidates_pids = sorted({str(p["pid"]) for p in smi["processes"] + holders["processes"] if p.get("pid")})
    spared = reset_killed_pids(
        _read(params["reset_kill_config"]),
        _read(params["device_syslog_config"]),
        [d["device_id"] for d in devices],
        process_identities(params["proc_root"], candidates_pids) if candidates_pids else {},
    )
    holders["killed_by_installer"] = spared
    holding = npu_holders(smi["processes"], holders["processes"], holders["containers"], spared)
    holders["holding"] = holding["containers"]
    candidates = board_accelerator_types(smi["board_id"])

    files = state_dir_files(params["state_dirs"])
    for path in params["state_files"]:
        files[path] = _read(path)

    facts = {
        "sysfs_root": params["sysfs_root"],
        "install_root": root,
        "npu_smi_path": params["npu_smi"],
        "arch": arch,
        "os_family": family,
        "kernel": os.uname()[2],
        "devices": devices,
        "count": len(devices),
        "present": bool(devices),
        "chips": chips,
        "chip": chips[0] if len(chips) == 1 else None,
        "profile_chip": devices[0]["profile_chip"] if devices and len(chips) == 1 else None,
        "product": devices[0]["product"] if devices else None,
        "board_id": smi["board_id"],
        "accelerator_types": candidates,
        "accelerator_type": candidates[0] if len(candidates) == 1 else None,
        "driver": driver,
        "firmware": firmware,
        "running": {
            "driver": smi["driver_version"],
            "firmware": running_firmware(smi["firmware_by_npu"], firmware["version"]),
        },
        "driver_firmware_compatible": compatible,
        "install_info": _kv(params["install_info"]) or {},
        "cann": cann_facts(
            root,
            params["cann_home"] or os.path.join(root, "cann"),
            params["toolkit_home"] or os.path.join(root, "ascend-toolkit", "latest"),
            arch,
        ),
        "cann_registry": _kv(params["cann_registry"]),
        "npu_smi": smi,
        "holders": holders,
        "busy": holding["busy"],
        "files": files,
        "state_dirs": params["state_dirs"],
        "tag": params["tag"],
        "accounts": lookup_accounts(params["accounts"]),
        "packages": installed_packages(module, params["packages"], family),
    }
    if params["runtime_config"]:
        facts["runtime_config"] = dry_run(module, params["runtime_config"])
    module.exit_json(changed=False, ansible_facts={"ascend_npu": facts})


if __name__ == "__main__":
    main()
