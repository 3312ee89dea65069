"""``resumable doctor --node compute|management``: what the plan's ``nodes`` part needs of this host.

The node roles (site.yml) run it on every node as their last step; run by hand it tells whether a
node is ready for the MindCluster DaemonSets and the training pods. It reads only this host: the
accounts (INST01; FAQ 337: the same ids on hosts and images), the log directories and the files
the DaemonSets mount (INST01), the reserved TaskD ports (RT07; SYSCTLD), the shared mounts (NFS5),
Ascend Docker Runtime (INST02) and the NPU driver (cluster.hdk).
Labels live in the API server and are checked by the role that sets them, not here.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from typing import Any, Dict, List, Optional, Set

from ..errors import ResumableError
from ..plan.model import NodePlan
from .doctor import FAIL, OK, SHARED_FS, Check, filesystem_of, key_values, python_check, read_text_lenient

#: where the kernel keeps the reserved local ports (one list; SYSCTLD)
RESERVED_PORTS = "/proc/sys/net/ipv4/ip_local_reserved_ports"
#: the driver's version file (HDK-FILES: <install path>/driver/version.info)
DRIVER_VERSION_INFO = "/usr/local/Ascend/driver/version.info"
#: what Ascend Docker Runtime's installer records next to its binary (INST02)
RUNTIME_INFO_NAME = "ascend_docker_runtime_install.info"


def _applies(entry: Dict[str, Any], roles: List[str]) -> bool:
    return entry.get("where", "all") in ["all", *roles]


def _key_values(path: str) -> Optional[Dict[str, str]]:
    try:
        return key_values(path)
    except ResumableError:
        return None


def _owner(path: str) -> str:
    st = os.stat(path)
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return "%s:%s %04o" % (user, group, stat.S_IMODE(st.st_mode))


def user_checks(users: List[Dict[str, Any]]) -> List[Check]:
    checks = []
    for user in users:
        wanted = "uid %s gid %s%s" % (
            user["uid"],
            user["gid"],
            " in " + ",".join(user["groups"]) if user.get("groups") else "",
        )
        try:
            entry = pwd.getpwnam(user["name"])
        except KeyError:
            checks.append(Check("user " + user["name"], FAIL, wanted, "missing", "Run site.yml (mindcluster_node)."))
            continue
        missing = []
        for group in user.get("groups", []):
            try:
                if user["name"] not in grp.getgrnam(group).gr_mem:
                    missing.append(group)
            except KeyError:
                missing.append(group)
        good = entry.pw_uid == user["uid"] and entry.pw_gid == user["gid"] and not missing
        found = "uid %d gid %d%s" % (entry.pw_uid, entry.pw_gid, " not in " + ",".join(missing) if missing else "")
        fix = "" if good else "Hosts and images must share these ids (FAQ 337); fix the account, never renumber files."
        checks.append(Check("user " + user["name"], OK if good else FAIL, wanted, found, fix))
    return checks


def path_checks(entries: List[Dict[str, Any]], kind: str) -> List[Check]:
    """Directories (kind "dir", with owner/group/mode) or regular files (kind "file")."""
    checks = []
    for entry in entries:
        path = entry["path"]
        if kind == "file":
            good = os.path.isfile(path) and not os.path.islink(path)
            found = "a regular file" if good else ("missing" if not os.path.lexists(path) else "not a regular file")
            checks.append(Check(path, OK if good else FAIL, "a regular file", found, "" if good else "Run site.yml."))
            continue
        wanted = "%s:%s %s" % (entry["owner"], entry["group"], entry["mode"])
        if not os.path.isdir(path):
            checks.append(Check(path, FAIL, wanted, "missing", "Run site.yml."))
            continue
        found = _owner(path)
        good = found == "%s:%s %04o" % (entry["owner"], entry["group"], int(str(entry["mode"]), 8))
        checks.append(Check(path, OK if good else FAIL, wanted, found, "" if good else "Run site.yml."))
    return checks


def reserved_ports_check(ports: List[int], sysctl: str = RESERVED_PORTS) -> Check:
    wanted = ",".join(str(p) for p in ports)
    try:
        text = read_text_lenient(sysctl, "sysctl", 65536).strip()
    except ResumableError as exc:
        return Check("reserved ports", FAIL, wanted, "unreadable (%s)" % exc.what, "")
    reserved: Set[int] = set()
    for part in text.replace(" ", "").split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (high.isdigit() or not high):
            reserved.update(range(int(low), int(high or low) + 1))
    missing = [p for p in ports if p not in reserved]
    fix = "" if not missing else "Host-network TaskD needs them reserved: run site.yml (mindcluster_node)."
    return Check("reserved ports", FAIL if missing else OK, wanted, text or "none", fix)


def mount_checks(mounts: List[Dict[str, Any]], mountinfo: str) -> List[Check]:
    checks = []
    for mount in mounts:
        wanted = "%s (%s) mounted at %s" % (mount["source"], mount["fstype"], mount["path"])
        fs = filesystem_of(mount["path"], mountinfo) if os.path.isdir(mount["path"]) else None
        if fs and fs[0] == mount["path"].rstrip("/") and (fs[1] in SHARED_FS or fs[1].startswith("fuse.")):
            checks.append(Check("mount " + mount["path"], OK, wanted, "%s at %s" % (fs[1], fs[0])))
        else:
            found = "missing" if fs is None else "not mounted (the directory is on %s at %s)" % (fs[1], fs[0])
            fix = "Mount it (site.yml, shared_storage; /etc/fstab has the entry)."
            checks.append(Check("mount " + mount["path"], FAIL, wanted, found, fix))
    return checks


def runtime_check(runtime: Dict[str, str]) -> Check:
    wanted = "Ascend Docker Runtime %s at %s" % (runtime["version"], runtime["binary"])
    if not os.access(runtime["binary"], os.X_OK):
        return Check("ascend-docker-runtime", FAIL, wanted, "missing", "Run site.yml (ascend_docker_runtime).")
    info = _key_values(os.path.join(os.path.dirname(runtime["binary"]), RUNTIME_INFO_NAME)) or {}
    found = info.get("version", "no install.info").lstrip("v")
    good = found == runtime["version"]
    return Check("ascend-docker-runtime", OK if good else FAIL, wanted, found, "" if good else "Run site.yml.")


def driver_check(hdk: str, version_info: str = DRIVER_VERSION_INFO) -> Check:
    info = _key_values(version_info)
    found = (info or {}).get("Version")
    good = found is not None and found.lower() == hdk.lower()
    fix = "" if good else "Install the NPU driver of cluster.hdk (site.yml, ascend_driver)."
    return Check("NPU driver", OK if good else FAIL, hdk, found or "not installed", fix)


def run_node_checks(nodes: NodePlan, roles: List[str], mountinfo: str = "/proc/self/mountinfo") -> List[Check]:
    """Every check the plan implies for a host with ``roles`` (compute and/or management)."""
    checks = [python_check()]
    checks += user_checks([u for u in nodes.users if _applies(u, roles)])
    checks += path_checks([d for d in nodes.log_dirs if _applies(d, roles)], "dir")
    checks += path_checks([f for f in nodes.host_files if _applies(f, roles)], "file")
    if "compute" in roles and nodes.reserved_ports:
        checks.append(reserved_ports_check(nodes.reserved_ports))
    checks += mount_checks([m for m in nodes.shared_mounts if _applies(m, roles)], mountinfo)
    if "compute" in roles:
        checks.append(runtime_check(nodes.docker_runtime))
        if nodes.hdk:
            checks.append(driver_check(nodes.hdk))
    return checks
