"""Ascend hardware facts shared by the facts module (node) and the filters (controller).

Vendor facts only (each table cites its source by a code of docs/sources.md);
what the profile wants comes from the resumable plan, never from here.
"""

from __future__ import annotations

import json
import re

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version import VersionError, compare

VENDOR = "0x19e5"

# PCI device id -> (chip family, cluster.chip of the profile or None for inference chips).
# Families: ADEPLOY module_utils/common_info.py (ascend-deployer module_utils/common_info.py card_map); the
# cluster.chip values are the ring-controller.atlas values of MindCluster (YAMLCFG:
# ascend-910 = Atlas 800/300T, ascend-910b = A2 and A3, ascend-npu = Atlas 350/850/950).
CHIPS = {
    "d100": ("310", None),
    "d500": ("310P", None),
    "d105": ("310B", None),
    "d107": ("310B", None),
    "d801": ("910", "ascend-910"),
    "d802": ("910B", "ascend-910b"),
    "d803": ("910_93", "ascend-910b"),
    "d806": ("910_95", "ascend-npu"),
}

# (device, subsystem_vendor, subsystem_device) -> product; ADEPLOY module_utils/common_info.py
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

# Board id (npu-smi info -t board) -> the accelerator-type values it can mean; ADEPLOY module_utils/common_info.py.
# 0xb1 is listed both for the A3 Box8 (module-a3-16) and for the 900 A3 PoD
# (module-a3-16-super-pod) (ascend-deployer puts it in both tables, ADEPLOY module_utils/common_info.py):
# it is ambiguous, so the profile's cluster.accelerator_type decides and must be one of both.
_BOARD_TABLE = [
    ((0x02, 0x27, 0x21, 0x24, 0x28), ("module",)),
    ((*tuple(range(48, 53)), 56), ("module-910b-8",)),
    (tuple(range(0x50, 0x54)), ("module-910b-16",)),
    ((0x01, 0x03, 0x06), ("card",)),
    (tuple(range(0x10, 0x14)), ("card-910b-2",)),
    ((0xB3,), ("module-a3-16",)),
    ((0xB0, 0xB2), ("module-a3-16-super-pod",)),
    ((0xB1,), ("module-a3-16", "module-a3-16-super-pod")),
    (tuple(range(0x18, 0x1D)), ("300I-A5-8",)),
]

# Package file names (ADEPLOY downloader/software): the chip token -> chip family it is built for.
PACKAGE_CHIPS = {
    "910": "910",
    "910b": "910B",
    "a3": "910_93",
    "310p": "310P",
    "310b": "310B",
    "310": "310",
    "950": "910_95",
}
_ARCH = {"aarch64": "aarch64", "arm64": "aarch64", "x86-64": "x86_64", "x86_64": "x86_64"}
_PACKAGE_PATTERNS = [
    # Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run; patch drivers have no arch
    (
        "driver",
        re.compile(
            r"^Ascend-hdk-(?P<chip>[0-9a-z]+)-npu-driver_(?P<version>[^_]+)(_sph\d+)?_linux(-(?P<arch>[a-z0-9_-]+))?\.run$",
            re.I,
        ),
    ),
    (
        "driver",
        re.compile(r"^Atlas-(?P<chip>A3)-hdk-npu-driver_(?P<version>[^_]+)_linux-(?P<arch>[a-z0-9_-]+)\.run$", re.I),
    ),
    ("firmware", re.compile(r"^Ascend-hdk-(?P<chip>[0-9a-z]+)-npu-firmware_(?P<version>[^_]+)\.run$", re.I)),
    ("firmware", re.compile(r"^Atlas-(?P<chip>A3)-hdk-npu-firmware_(?P<version>[^_]+)\.run$", re.I)),
    ("toolkit", re.compile(r"^Ascend-cann-toolkit_(?P<version>[^_]+)_linux-(?P<arch>[a-z0-9_-]+)\.run$", re.I)),
    (
        "kernels",
        re.compile(
            r"^Ascend-cann-kernels-(?P<chip>[0-9a-z]+)_(?P<version>[^_]+)_linux-(?P<arch>[a-z0-9_-]+)\.run$", re.I
        ),
    ),
    (
        "ops",
        re.compile(r"^Ascend-cann-(?P<chip>[0-9a-z]+)-ops_(?P<version>[^_]+)_linux-(?P<arch>[a-z0-9_-]+)\.run$", re.I),
    ),
]

# Device nodes that make an NPU "in use" (ADEPLOY module_utils/check_library_utils; APPX).
DEVICE_PREFIX = "/dev/davinci"
DEVICE_NODES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
_BUS_ID = re.compile(r"^([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]|NA)$")


def board_accelerator_types(board):
    """The accelerator-type values a board id can mean ([] when unknown)."""
    try:
        value = int(str(board), 16)
    except (TypeError, ValueError):
        return []
    for ids, labels in _BOARD_TABLE:
        if value in ids:
            return list(labels)
    return []


def short_id(hexid):
    return (hexid or "").strip().lower().replace("0x", "").zfill(4)


def package_info(name):
    """Kind, chip family, arch and version of a vendor package, from its file name (2.1).

    Returns None when the name does not follow the vendor naming.
    """
    base = str(name).rsplit("/", 1)[-1]
    for kind, pattern in _PACKAGE_PATTERNS:
        m = pattern.match(base)
        if m is None:
            continue
        groups = m.groupdict()
        chip = groups.get("chip")
        arch = groups.get("arch")
        return {
            "name": base,
            "kind": kind,
            "chip": PACKAGE_CHIPS.get(chip.lower()) if chip else None,
            "chip_token": chip,
            "arch": _ARCH.get(arch.lower()) if arch else None,
            "version": groups["version"],
        }
    return None


def is_device_path(path):
    return path.startswith(DEVICE_PREFIX) or path in DEVICE_NODES


def _cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_npu_smi(text):
    """Parse ``npu-smi info`` (ADEPLOY module_utils/check_library_utils/npu_checks.py) for the 910B, A3 and
    Atlas 350/950 layouts.

    910B/A3: every chip has two rows: ``NPU Name | Health | ...`` then ``Chip [Phy-ID] | Bus-Id | ...``.
    On A3 nodes (header ``Chip  Phy-ID``) an NPU has two chips, each with both rows, and the
    second row starts with the chip id *and* the Phy-ID; on 910B nodes only with the chip id.
    Atlas 350/950 (npu-smi built with NPU_SMI_V2 for ascend950; its source in the verylucky01/driver mirror,
    commit 999c25d7, src/custom/dev_prod/user/npucli/src/npu_info_print.c): header ``NPU ID | Name | Health``
    (:584-592), the id, the name and the health are cells of their own (:427-436), and the second row of an
    NPU holds only the Bus-Id, ``NA`` on Atlas 900 A5 UB mainboards (:393-403, :469-481; one chip, id 0).
    Its process table has no chip column: header ``NPU ID | Process id | Process name | Process memory(MB)``
    (:626-629), rows ``| npu | pid | name | MB |`` (:534-539).
    Health is kept per chip and summarised per NPU (any chip not OK makes the NPU not OK).
    """
    result = {"driver_version": None, "npus": {}, "chips": [], "processes": [], "phy_id_column": False}
    section = None
    pending = None
    for line in text.splitlines():
        m = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", line)
        if m:
            result["driver_version"] = m.group(1)
            continue
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        head = cells[0].split()
        if head[:2] == ["NPU", "Name"]:
            section = "chips"
            continue
        if head == ["NPU", "ID"] and len(cells) >= 3 and cells[1] == "Name":
            section = "npu_id"
            continue
        if head[:1] == ["Chip"]:
            result["phy_id_column"] = "Phy-ID" in head
            continue
        if head[:2] == ["NPU", "Chip"] and len(cells) > 1 and cells[1].startswith("Process"):
            section = "processes"
            continue
        if head == ["NPU", "ID"] and len(cells) > 1 and cells[1].startswith("Process"):
            section = "processes_npu_id"
            continue
        if section == "processes_npu_id":
            pid = (cells[1].split() or [""])[0] if len(cells) >= 3 else ""
            if cells[0].isdigit() and pid.isdigit():
                result["processes"].append({"npu": cells[0], "chip": "0", "pid": pid, "name": cells[2]})
            continue
        if section == "npu_id":
            if len(cells) >= 3 and cells[0].isdigit():
                pending = {"npu": cells[0], "name": cells[1], "health": cells[2]}
            elif len(cells) >= 3 and not cells[0] and not cells[1] and _BUS_ID.match(cells[2]) and pending:
                result["chips"].append(dict(pending, chip="0", bus_id=cells[2], phy_id=None))
                pending = None
            continue
        if section == "chips" and len(cells) >= 3 and head and head[0].isdigit():
            if not _BUS_ID.match(cells[1]):
                # NPU row: id, name, health (the name may be all digits, e.g. "310")
                pending = {"npu": head[0], "name": head[1] if len(head) > 1 else "", "health": cells[1]}
            elif pending is not None:
                # chip row: chip id [Phy-ID], Bus-Id
                chip = dict(pending, chip=head[0], bus_id=cells[1], phy_id=None)
                if len(head) > 1 and head[1].isdigit():
                    chip["phy_id"] = head[1]
                result["chips"].append(chip)
                pending = None
        elif section == "processes" and len(cells) >= 3 and len(head) >= 2 and head[0].isdigit() and head[1].isdigit():
            pid = (cells[1].split() or [""])[0]
            if pid.isdigit():
                result["processes"].append(
                    {"npu": head[0], "chip": head[1], "pid": pid, "name": cells[2] if len(cells) > 2 else ""}
                )
    for chip in result["chips"]:
        previous = result["npus"].get(chip["npu"])
        if previous is None or previous == "OK":
            result["npus"][chip["npu"]] = chip["health"]
    return result


def parse_board(text):
    """``npu-smi info -t board -i N``: ``Key : value`` lines.

    Source: ADEPLOY module_utils/check_library_utils/npu_checks.py.
    """
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    board = out.get("Board ID")
    return {
        "board_id": board.lower() if board and re.match(r"^0x[0-9a-fA-F]+$", board) else None,
        "firmware_version": out.get("Firmware Version") or None,
        "software_version": out.get("Software Version") or None,
    }


def docker_holders(inspect_json):
    """Running containers whose ``docker inspect`` lists NPU device nodes (ADEPLOY
    module_utils/check_library_utils). Informational: see :func:`npu_holders` for what counts."""
    holders = []
    for item in json.loads(inspect_json or "[]"):
        host = item.get("HostConfig") or {}
        state = item.get("State") or {}
        devices = sorted(
            d.get("PathOnHost", "") for d in host.get("Devices") or [] if is_device_path(d.get("PathOnHost", ""))
        )
        if devices and state.get("Running", True):
            holders.append(
                {
                    "runtime": "docker",
                    "id": item.get("Id", "")[:12],
                    "name": item.get("Name", "").lstrip("/"),
                    "pid": str(state.get("Pid") or ""),
                    "privileged": bool(host.get("Privileged")),
                    "devices": devices,
                }
            )
    return holders


def crictl_holders(inspect_json):
    """Containers whose CRI runtime spec lists NPU device nodes (``crictl inspect``, containerd).

    ``info`` is containerd's verbose ContainerInfo (containerd v1.7.27
    pkg/cri/server/container_status.go:128-139: ``pid``, ``config``, ``runtimeSpec``). For a privileged
    container the spec lists every device under the host's /dev (pkg/cri/server/container_create_linux.go:225-231
    adds oci.WithHostDevices unless the runtime sets privileged_without_host_devices; oci/utils_unix.go:42-44), so
    a spec entry alone does not mean the container uses an NPU (:func:`npu_holders`).
    """
    doc = json.loads(inspect_json or "{}")
    items = doc if isinstance(doc, list) else [doc]
    holders = []
    for item in items:
        info = item.get("info") or {}
        spec = (info.get("runtimeSpec") or {}).get("linux") or {}
        devices = sorted(d.get("path", "") for d in spec.get("devices") or [] if is_device_path(d.get("path", "")))
        status = item.get("status") or {}
        security = ((info.get("config") or {}).get("linux") or {}).get("security_context") or {}
        if devices:
            holders.append(
                {
                    "runtime": "cri",
                    "id": str(status.get("id", ""))[:12],
                    "name": (status.get("metadata") or {}).get("name", ""),
                    "pid": str(info.get("pid") or ""),
                    "privileged": bool(security.get("privileged")),
                    "devices": devices,
                }
            )
    return holders


# Before its hot reset the driver installer kills, itself, the processes an operator listed in
# /etc/custom_process.cfg as "AllowKilledWhenResetNPU:<name>:<pid>" (first 20 lines, whitespace removed,
# the pid's /proc/<pid>/status Name must be <name>; A2 (d802) and A3 (d803) devices only) and, when
# /etc/npu_dev_syslog.cfg enables a syslog_*_mode, the device log daemons "msnpureport report --permanent".
# Source: Ascend driver scripts (github verylucky01/driver, a mirror of Huawei's driver, tag v8.5.0)
# scripts/package/custom/driver/common/scripts/common.sh:240-262 (checkPidNameMatch), 324-378
# (killWhiteProcess), 380-385 (setHotResetFlag calls it); device_hot_reset.sh:17, 375-385, 410.
RESET_KILL_ENTRY = re.compile(r"^AllowKilledWhenResetNPU:([^:]+):([0-9]+)$")
RESET_KILL_DEVICES = ("d802", "d803")


def reset_killed_pids(custom_cfg, syslog_cfg, device_ids, processes):
    """The pids among ``processes`` ({pid: {"name": status Name, "cmdline": argv joined by spaces}})
    that the driver installer kills before its hot reset: they do not make a node busy."""
    killed = set()
    if any(d in RESET_KILL_DEVICES for d in device_ids):
        for line in (custom_cfg or "").splitlines()[:20]:
            line = re.sub(r"\s", "", line)
            m = RESET_KILL_ENTRY.match(line)
            if m and m.group(2) in processes and processes[m.group(2)].get("name") == m.group(1):
                killed.add(m.group(2))
    if re.search(r"\bsyslog_.*_mode:enable\b", syslog_cfg or ""):
        for pid, info in processes.items():
            if "msnpureport report --permanent" in info.get("cmdline", ""):
                killed.add(pid)
    return sorted(killed, key=int)


def npu_holders(smi_processes, host_processes, containers, spared=()):
    """What really holds the NPUs: the processes npu-smi lists and the host processes with an NPU device
    node open (``/proc/<pid>/fd``, like ``fuser /dev/davinci*``; the node agent sees every container's
    processes from the host). A container is named only when its process is one of them.

    Container specs are not counted: containerd puts every host device into the spec of each privileged
    container (:func:`crictl_holders`), so kube-proxy, the CNI and CSI node pods would keep every node
    "busy" for ever, and a spec lists devices a container may open, not ones it has open.
    ``spared`` are pids the driver installer kills itself before its hot reset (:func:`reset_killed_pids`).
    Returns ``{"busy", "pids", "containers"}``.
    """
    every = {str(p.get("pid")) for p in list(smi_processes) + list(host_processes) if p.get("pid")}
    pids = sorted(every - set(str(p) for p in spared))
    named = [c for c in containers if c.get("pid") and str(c["pid"]) in pids]
    return {"busy": bool(pids), "pids": pids, "containers": named}


def profile_mismatches(facts, nodes):
    """What the detected hardware says against what the plan's ``nodes`` part wants.

    Returns one sentence per disagreement, naming both sides. Nodes without NPUs are only
    checked for their architecture.
    """
    problems = []
    arch = facts.get("arch")
    if nodes.get("arch") and arch and arch != nodes["arch"]:
        problems.append("the profile says cluster.arch %s, the node is %s" % (nodes["arch"], arch))
    if not facts.get("present"):
        return problems
    detected = sorted(set(d.get("profile_chip") or "none (%s)" % d.get("chip") for d in facts.get("devices", [])))
    if nodes.get("chip") and detected != [nodes["chip"]]:
        problems.append(
            "the profile says cluster.chip %s, the node has %s (PCI %s)"
            % (
                nodes["chip"],
                " and ".join(detected),
                ", ".join(sorted(set("19e5:" + d["device_id"] for d in facts["devices"]))),
            )
        )
    candidates = facts.get("accelerator_types") or []
    wanted = nodes.get("accelerator_type")
    if wanted and candidates and wanted not in candidates:
        problems.append(
            "the profile says cluster.accelerator_type %s, board id %s means %s"
            % (wanted, facts.get("board_id"), " or ".join(candidates))
        )
    return problems


def package_mismatches(facts, info, what):
    """A package built for another chip or architecture than the node (2.1, 2.2 guards)."""
    problems = []
    if info is None:
        return problems
    arch = facts.get("arch")
    if info.get("arch") and arch and info["arch"] != arch:
        problems.append("%s %s is built for %s, the node is %s" % (what, info["name"], info["arch"], arch))
    chips = facts.get("chips") or []
    if info.get("chip") and chips and chips != [info["chip"]]:
        problems.append(
            "%s %s is built for Ascend %s, the node has Ascend %s"
            % (what, info["name"], info["chip"], " and ".join(chips))
        )
    return problems


def _package_file(package):
    source = package.get("src") or package.get("url") or package.get("path") or ""
    return source.rstrip("/").rsplit("/", 1)[-1]


def package_problems(facts, packages, kinds, versions=None):
    """Everything wrong with the packages a role is about to use, before the node is touched.

    packages: name -> {src|url|path}; kinds: name -> the package kind (driver, firmware,
    toolkit, kernels, ops) it must be by the vendor naming (2.1); versions: name -> the version
    it must carry (from its file name). A name that does not follow the naming cannot be checked
    against the hardware, so it is a problem too.
    """
    problems = []
    for name in sorted(packages):
        what = "the %s package" % name
        file_name = _package_file(packages[name])
        info = package_info(file_name)
        if info is None or info["kind"] != kinds[name]:
            problems.append(
                "%s %s is not a %s package by the vendor naming (ADEPLOY downloader/software), so it cannot be checked "
                "against this node" % (what, file_name or "(no file)", kinds[name])
            )
            continue
        problems.extend(package_mismatches(facts, info, what))
        wanted = (versions or {}).get(name)
        try:
            different = bool(wanted) and compare(info["version"], wanted) != 0
        except VersionError:
            different = True
        if different:
            problems.append(
                "%s %s is version %s, the wanted version is %s" % (what, file_name, info["version"], wanted)
            )
    return problems
