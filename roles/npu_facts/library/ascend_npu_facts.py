#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Read-only Ascend NPU facts: PCI devices, installed driver/firmware/CANN, npu-smi state."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_npu_facts
short_description: Collect Ascend NPU hardware and software facts (read-only)
description:
  - Lists Huawei Ascend PCI functions from sysfs and maps device and subsystem ids to chip
    family, product and Kubernetes accelerator label.
  - Reads the installed driver and firmware C(version.info), C(/etc/ascend_install.info) and the
    CANN toolkit install info in both layouts (C(ascend-toolkit/latest) up to 8.3,
    C(cann/) from 8.5), plus kernels/ops versions.
  - Asks C(npu-smi) for health, busy state and board id when the driver is loaded.
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
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Gather NPU facts
  ascend_npu_facts:
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
import re

from ansible.module_utils.basic import AnsibleModule

VENDOR = "0x19e5"

# device id -> (chip family, accelerator label); node-prep.md §2.6 and §3.4
CHIPS = {
    "d100": ("310", "huawei-Ascend310"),
    "d500": ("310P", "huawei-Ascend310P"),
    "d105": ("310B", "huawei-Ascend310P"),
    "d107": ("310B", "huawei-Ascend310P"),
    "d801": ("910", "huawei-Ascend910"),
    "d802": ("910B", "huawei-Ascend910"),
    "d803": ("910_93", "huawei-Ascend910"),
    "d806": ("910_95", "huawei-npu"),
}

# (device, subsystem_vendor, subsystem_device) -> product; node-prep.md §2.6
PRODUCTS = {
    ("d100", "0200", "0100"): "Atlas 300I (310)",
    ("d500", "0200", "0100"): "Atlas 300I Pro",
    ("d500", "0200", "0110"): "Atlas 300I Duo",
    ("d105", "0200", "0100"): "Atlas 200I A2",
    ("d107", "0000", "0000"): "Atlas 200I A2",
    ("d801", "0200", "0100"): "Atlas 800 (Model 9000/9010)",
    ("d802", "0200", "0100"): "Atlas 900T / 800T A2",
    ("d802", "19e5", "4000"): "Atlas 300I A2",
    ("d802", "19e5", "6000"): "Atlas 300T A2",
    ("d803", "19e5", "0100"): "Atlas 800I A3",
    ("d803", "19e5", "3003"): "Atlas 800I A3",
}
for _sub in ("3000", "3001", "3003", "3400", "3401", "3402", "3403"):
    PRODUCTS[("d802", "19e5", _sub)] = "Atlas 800T A2 / 900 A2 PoD"
for _sub in ("3002", "3004", "3005"):
    PRODUCTS[("d802", "19e5", _sub)] = "Atlas 800I A2"
for _sub in ("3000", "3001", "3002"):
    PRODUCTS[("d803", "19e5", _sub)] = "Atlas 900 A3 SuperPoD"
for _sub in ("4003", "4004", "4005"):
    PRODUCTS[("d806", "19e5", _sub)] = "Atlas 350"


def _board_type(board):
    """Board id (npu-smi info -t board) -> accelerator-type label; node-prep.md §2.6."""
    table = [
        ((0x02, 0x27, 0x21, 0x24, 0x28), "module"),
        (tuple(range(0x30, 0x35)) + (0x38,), "module-910b-8"),
        (tuple(range(0x50, 0x54)), "module-910b-16"),
        ((0x01, 0x03, 0x06), "card"),
        (tuple(range(0x10, 0x14)), "card-910b-2"),
        ((0xB3,), "module-a3-16"),
        ((0xB0, 0xB1, 0xB2), "module-a3-16-super-pod"),
        (tuple(range(0x18, 0x1D)), "300I-A5-8"),
    ]
    try:
        value = int(board, 16)
    except (TypeError, ValueError):
        return None
    for ids, label in table:
        if value in ids:
            return label
    return None


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def _kv(path):
    text = _read(path)
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip('"')
    return out


def _short(hexid):
    return (hexid or "").lower().replace("0x", "").zfill(4)


def version_key(version):
    """Order Ascend versions: 25.0.rc1 < 25.0.rc1.1 < 25.0.0; RC tokens sort before numbers."""
    key = []
    for token in str(version).lower().split("."):
        match = re.match(r"^rc(\d+)$", token)
        if match:
            key.append((0, int(match.group(1))))
        elif token.isdigit():
            key.append((1, int(token)))
        else:
            key.append((0, -1))
    return key


def in_ranges(version, ranges):
    """True when version lies in one of "[lo,hi],[lo,hi.]" (a trailing dot = prefix match)."""
    if not version or not ranges:
        return None
    for low, high in re.findall(r"\[([^,\]]+),([^\]]+)\]", ranges):
        if version_key(version) < version_key(low):
            continue
        if high.endswith("."):
            if version_key(version) <= version_key(high[:-1]) or version.lower().startswith(high.lower()):
                return True
        elif version_key(version) <= version_key(high):
            return True
    return False


def pci_devices(sysfs_root):
    devices = []
    for path in sorted(glob.glob(os.path.join(sysfs_root, "bus", "pci", "devices", "*"))):
        if (_read(os.path.join(path, "vendor")) or "").lower() != VENDOR:
            continue
        device = _short(_read(os.path.join(path, "device")))
        sub_vendor = _short(_read(os.path.join(path, "subsystem_vendor")))
        sub_device = _short(_read(os.path.join(path, "subsystem_device")))
        chip, accelerator = CHIPS.get(device, (None, None))
        devices.append({
            "address": os.path.basename(path),
            "device_id": device,
            "subsystem_vendor": sub_vendor,
            "subsystem_device": sub_device,
            "chip": chip,
            "product": PRODUCTS.get((device, sub_vendor, sub_device)),
            "accelerator": accelerator,
        })
    return devices


def cann_facts(root):
    """Toolkit in either layout, and kernels (<= 8.3) / ops (>= 8.5) versions."""
    result = {"installed": False, "version": None, "layout": None, "home": None,
              "set_env": None, "install_info": None, "install_conf": None,
              "ops_version": None}
    layouts = [
        ("unified", os.path.join(root, "cann"), os.path.join(root, "cann")),
        ("legacy", os.path.join(root, "ascend-toolkit", "latest"), os.path.join(root, "ascend-toolkit")),
    ]
    for layout, home, base in layouts:
        infos = sorted(glob.glob(os.path.join(home, "*-linux", "ascend_toolkit_install.info")))
        if not infos:
            continue
        info = _kv(infos[0]) or {}
        set_env = os.path.join(base, "set_env.sh")
        result.update({
            "installed": True,
            "version": info.get("version"),
            "layout": layout,
            "home": os.path.realpath(home),
            "install_info": info,
            "set_env": set_env if os.path.isfile(set_env) else None,
            "install_conf": _kv(os.path.join(base, "install.conf")),
        })
        # kernels (<= 8.3) land in <toolkit>/opp_kernel; the ops packages of 8.5 are read
        # from <root>/cann/opp_kernel (same file name; path for 8.5 unverified on hardware).
        ops = _kv(os.path.join(home, "opp_kernel", "version.info")) or {}
        result["ops_version"] = ops.get("Version")
        break
    return result


def parse_npu_smi(text):
    health, processes, driver_version = {}, [], None
    in_processes = False
    for line in text.splitlines():
        match = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", line)
        if match:
            driver_version = match.group(1)
        if "Process id" in line:
            in_processes = True
            continue
        if not in_processes:
            match = re.match(r"^\|\s*(\d+)\s+([^|\s]+)\s*\|\s*([^|\s]+)\s*\|", line)
            if match:
                health[match.group(1)] = match.group(3)
        else:
            match = re.match(r"^\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|", line)
            if match:
                processes.append({"npu": match.group(1), "chip": match.group(2),
                                  "pid": match.group(3), "name": match.group(4)})
    return driver_version, health, processes


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            npu_smi=dict(type="path", default="/usr/local/sbin/npu-smi"),
            install_root=dict(type="path", default="/usr/local/Ascend"),
            install_info=dict(type="path", default="/etc/ascend_install.info"),
            cann_registry=dict(type="path", default="/etc/Ascend/ascend_cann_install.info"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    root = params["install_root"]

    devices = pci_devices(params["sysfs_root"])
    chips = sorted(set(d["chip"] for d in devices if d["chip"]))

    drv = _kv(os.path.join(root, "driver", "version.info"))
    fw = _kv(os.path.join(root, "firmware", "version.info"))
    driver = {
        "installed": drv is not None,
        "version": (drv or {}).get("Version"),
        # ascend-deployer treats version.info without tools/upgrade-tool as a broken install
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
        checks = [in_ranges(firmware["version"], driver["compatible_version_fw"]),
                  in_ranges(driver["version"], firmware["compatible_version_drv"])]
        compatible = all(c is not False for c in checks)

    smi = {"available": False, "rc": None, "driver_version": None, "health": {},
           "all_healthy": None, "processes": [], "busy": None, "board_id": None,
           "error": None}
    if os.path.isfile(params["npu_smi"]) and os.access(params["npu_smi"], os.X_OK):
        rc, out, err = module.run_command([params["npu_smi"], "info"])
        smi["rc"] = rc
        if rc == 0:
            smi["available"] = True
            smi["driver_version"], smi["health"], smi["processes"] = parse_npu_smi(out)
            smi["all_healthy"] = bool(smi["health"]) and all(h == "OK" for h in smi["health"].values())
            smi["busy"] = bool(smi["processes"])
            if devices:
                brc, bout, _ = module.run_command([params["npu_smi"], "info", "-t", "board", "-i", "0"])
                match = re.search(r"Board ID\s*:\s*(0x[0-9a-fA-F]+)", bout) if brc == 0 else None
                smi["board_id"] = match.group(1).lower() if match else None
        else:
            smi["error"] = (err or out).strip()

    facts = {
        "sysfs_root": params["sysfs_root"],
        "install_root": root,
        "npu_smi_path": params["npu_smi"],
        "devices": devices,
        "count": len(devices),
        "present": bool(devices),
        "chips": chips,
        "chip": chips[0] if len(chips) == 1 else None,
        "product": devices[0]["product"] if devices else None,
        "accelerator": devices[0]["accelerator"] if devices else None,
        "accelerator_type": _board_type(smi["board_id"]),
        "driver": driver,
        "firmware": firmware,
        "driver_firmware_compatible": compatible,
        "install_info": _kv(params["install_info"]) or {},
        "cann": cann_facts(root),
        "cann_registry": _kv(params["cann_registry"]),
        "npu_smi": smi,
    }
    module.exit_json(changed=False, ansible_facts={"ascend_npu": facts})


if __name__ == "__main__":
    main()
