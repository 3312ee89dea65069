#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Read-only: does the node already hold what a role would make of it? One call instead of one per task."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_node_check
short_description: Compare a node with the state a role wants, in one read-only call
description:
  - Reads accounts (keyed NSS lookups), paths (type, owner, group, mode), file checksums, installed OS packages,
    running services, C(/etc/fstab) lines, what is mounted where and the reserved local ports, and returns every
    difference from what I(expect) describes, one sentence each. An empty C(differences) means the role has
    nothing to change on this node, so a converged re-run needs this one call instead of one module per task.
  - The roles run their change tasks only when C(differences) is not empty; those tasks decide the details again
    themselves (so this module errs towards reporting a difference, never the other way).
  - With I(write_tests), creates and removes a file as each user in each directory (C(runuser)), and as the
    uid and gid of each of its I(ids) directories with no supplementary groups (C(setpriv)), unless in check
    mode; a refusal is a difference.
  - Never changes anything else; supports check mode.
options:
  users:
    description: Users as {name, uid, gid, groups} (groups are supplementary group names that must list the user).
    type: list
    elements: dict
    default: []
  groups:
    description: Groups as {name, gid}.
    type: list
    elements: dict
    default: []
  paths:
    description:
      - Paths as {path, state (directory, file or absent), owner, group, mode}; owner, group, mode optional.
      - An owner or group given as a number is compared with the uid or gid, a name with the name.
    type: list
    elements: dict
    default: []
  checksums:
    description: Files as {path, sha256} that must have exactly that content (sha256 null = must not exist).
    type: list
    elements: dict
    default: []
  packages:
    description:
      - OS packages that must be installed (dpkg-query or rpm); a list, or a dict OS family -> list (the node's
        family is used).
    type: raw
    default: []
  services_any:
    description: Services of which at least one must be active (systemctl is-active); empty = not checked.
    type: list
    elements: str
    default: []
  fstab:
    description: Mounts as {path, line}; the line must be the only /etc/fstab entry for the path.
    type: list
    elements: dict
    default: []
  mounts:
    description:
      - Mount points as {path, source, required}; what is mounted there (C(/proc/self/mountinfo)) must be
        I(source), or nothing when I(required) is false.
    type: list
    elements: dict
    default: []
  reserved_ports:
    description:
      - "{ports, file}: the ports must be reserved in net.ipv4.ip_local_reserved_ports, live and in the file,
        merged with every other reservation as ascend_reserved_ports merges them."
    type: dict
  write_tests:
    description:
      - "{users, dirs, ids}: each user must be able to create and remove a file in each directory, and each of
        I(ids) ({path, owner, group}: a uid and a gid, such as the uid an NFS export squashes root to) in its path."
    type: dict
  parts:
    description:
      - "Several roles' checks in one call: a dict name -> {users, groups, paths, checksums, packages, services_any,
        fstab, mounts, reserved_ports, write_tests} (the options above, each optional); every part is compared like
        the options and its differences returned under its name in C(parts) (and in C(differences) with the others)."
      - playbooks/nodes.yml reads a node once for mindcluster_node, shared_storage and resumable_install this way.
    type: dict
    default: {}
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Is the node what mindcluster_node makes of it
  ascend_resumable.npu.ascend_node_check:
    users: [{name: HwHiAiUser, uid: 1000, gid: 1000}]
    paths: [{path: /var/log/mindx-dl, state: directory, owner: root, group: root, mode: "0755"}]
    packages: [chrony]
  register: state
"""

RETURN = r"""
differences:
  description: What differs from I(expect), one sentence each; empty when the node is converged.
  returned: always
  type: list
  elements: str
parts:
  description: For each of I(parts), {differences, os_family} (the differences of that part alone).
  returned: always
  type: dict
os_family:
  description: Debian, RedHat or Suse (from /etc/os-release), null when unknown.
  returned: always
  type: str
"""

import grp
import hashlib
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_node import (
    installed_packages,
    lookup_accounts,
    os_family,
    read_text,
)
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_ports import desired


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except (KeyError, OverflowError):
        return str(ident)


def account_differences(users, groups):
    found = lookup_accounts(
        {
            "users": [u["name"] for u in users] + [u["uid"] for u in users],
            "groups": [g["name"] for g in groups] + [g["gid"] for g in groups],
        }
    )
    out = []
    for group in groups:
        entry = found["groups"].get(str(group["name"]))
        if not entry:
            out.append("group %s is missing" % group["name"])
        elif str(entry["gid"]) != str(group["gid"]):
            out.append("group %s has gid %s, not %s" % (group["name"], entry["gid"], group["gid"]))
    for user in users:
        entry = found["users"].get(str(user["name"]))
        if (
            not entry
            or str(entry["uid"]) != str(user["uid"])
            or str(entry["gid"]) != str(user.get("gid", entry["gid"]))
        ):
            out.append("user %s is not %s:%s" % (user["name"], user["uid"], user.get("gid")))
            continue
        for name in user.get("groups") or []:
            try:
                members = grp.getgrnam(name).gr_mem
            except KeyError:
                members = []
            if user["name"] not in members:
                out.append("user %s is not a member of %s" % (user["name"], name))
    return out


def _is_set(value):
    return value is not None and value != ""


def _id_differs(lookup, number, want):
    """A wanted owner/group given as a number is the id itself (plan storage.nfs: 65534), a name is the name."""
    if str(want).isdigit():
        return number != int(str(want))
    return _name(lookup, number) != str(want)


def path_differences(paths):
    out = []
    for want in paths:
        path, state = want["path"], want.get("state", "directory")
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if state == "absent":
            if st is not None:
                out.append("%s exists" % path)
            continue
        kind = st and ("directory" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other")
        if kind != state:
            out.append("%s is %s, not a %s" % (path, kind or "missing", state))
            continue
        if _is_set(want.get("owner")) and _id_differs(pwd.getpwuid, st.st_uid, want["owner"]):
            out.append("%s is owned by %s, not %s" % (path, _name(pwd.getpwuid, st.st_uid), want["owner"]))
        if _is_set(want.get("group")) and _id_differs(grp.getgrgid, st.st_gid, want["group"]):
            out.append("%s has group %s, not %s" % (path, _name(grp.getgrgid, st.st_gid), want["group"]))
        if want.get("mode") and stat.S_IMODE(st.st_mode) != int(str(want["mode"]), 8):
            out.append("%s has mode %04o, not %s" % (path, stat.S_IMODE(st.st_mode), want["mode"]))
    return out


def sha256_of(path):
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def checksum_differences(checksums):
    out = []
    for want in checksums:
        found = sha256_of(want["path"]) if os.path.isfile(want["path"]) else None
        if found != want.get("sha256"):
            out.append("%s is %s" % (want["path"], "missing" if found is None else "different (sha256 %s)" % found))
    return out


def unescape(field):
    """/proc/self/mountinfo escapes space, tab, newline and backslash as octal."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mounted():
    """mount point -> source of the last mount there (proc(5) mountinfo: field 5, and the source after ' - ')."""
    out = {}
    for line in (read_text("/proc/self/mountinfo") or "").splitlines():
        fields, _, rest = line.partition(" - ")
        parts, tail = fields.split(), rest.split()
        if len(parts) >= 5 and len(tail) >= 2:
            out[unescape(parts[4])] = unescape(tail[1])
    return out


def mount_differences(fstab, mounts):
    out = []
    lines = [line.strip() for line in (read_text("/etc/fstab") or "").splitlines()]
    for want in fstab:
        entries = [line for line in lines if not line.startswith("#") and line.split()[1:2] == [want["path"]]]
        if entries != [want["line"]]:
            out.append("/etc/fstab has %s for %s" % (entries or "no entry", want["path"]))
    now = mounted()
    for want in mounts:
        source = now.get(want["path"])
        if source != want.get("source") and (source is not None or want.get("required", True)):
            out.append("%s has %s mounted, wanted %s" % (want["path"], source or "nothing", want.get("source")))
    return out


def service_differences(module, services):
    if not services:
        return []
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return ["systemctl is missing: none of %s can be seen running" % ", ".join(services)]
    _, out, _ = module.run_command([systemctl, "is-active", *services])
    if "active" in out.split():
        return []
    return ["none of %s is active" % ", ".join(services)]


def port_differences(spec):
    if not spec or not spec.get("ports"):
        return []
    try:
        want = desired(spec["ports"], spec.get("file") or "/etc/sysctl.d/90-ascend-resumable.conf")
    except ValueError as exc:
        return ["reserved ports: %s" % exc]
    if want["file_changed"] or want["live_changed"]:
        return ["net.ipv4.ip_local_reserved_ports must become %s" % want["value"]]
    return []


def write_differences(module, spec):
    if not spec or module.check_mode:
        return []
    runuser = module.get_bin_path("runuser") or "runuser"
    script = 'f=$(mktemp -p "$1" .ascend-write-test.XXXXXX) && rm -f "$f"'
    out = []
    for user in spec.get("users") or []:
        for directory in spec.get("dirs") or []:
            rc, stdout, stderr = module.run_command([runuser, "-u", user, "--", "sh", "-c", script, "sh", directory])
            if rc != 0:
                out.append("%s cannot write to %s: %s" % (user, directory, (stderr or stdout).strip()))
    setpriv = module.get_bin_path("setpriv") or "setpriv"
    probe = 'f=$(mktemp -p "$1" .resumable-write-test.XXXXXX) && rm -f "$f"'
    for want in spec.get("ids") or []:
        ids = ["--reuid=%s" % want["owner"], "--regid=%s" % want["group"], "--clear-groups"]
        rc, stdout, stderr = module.run_command([setpriv, *ids, "--", "sh", "-c", probe, "sh", want["path"]])
        if rc != 0:
            out.append("uid %s cannot write to %s: %s" % (want["owner"], want["path"], (stderr or stdout).strip()))
    return out


#: the options a part may give (the module's own, but parts)
CHECKS = ("users", "groups", "paths", "checksums", "packages", "services_any", "fstab", "mounts")
CHECKS += ("reserved_ports", "write_tests")


def differences_of(module, p, family):
    """Every difference of one set of checks (the module's options, or one of its parts)."""
    packages = installed_packages(module, p.get("packages") or [], family)
    return (
        account_differences(p.get("users") or [], p.get("groups") or [])
        + path_differences(p.get("paths") or [])
        + checksum_differences(p.get("checksums") or [])
        + ["package %s is not installed" % name for name, version in sorted(packages.items()) if version is None]
        + service_differences(module, p.get("services_any") or [])
        + mount_differences(p.get("fstab") or [], p.get("mounts") or [])
        + port_differences(p.get("reserved_ports"))
        + write_differences(module, p.get("write_tests"))
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            users=dict(type="list", elements="dict", default=[]),
            groups=dict(type="list", elements="dict", default=[]),
            paths=dict(type="list", elements="dict", default=[]),
            checksums=dict(type="list", elements="dict", default=[]),
            packages=dict(type="raw", default=[]),
            services_any=dict(type="list", elements="str", default=[]),
            fstab=dict(type="list", elements="dict", default=[]),
            mounts=dict(type="list", elements="dict", default=[]),
            reserved_ports=dict(type="dict"),
            write_tests=dict(type="dict"),
            parts=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    family = os_family()
    for name, part in sorted(p["parts"].items()):
        unknown = sorted(set(part or {}) - set(CHECKS)) if isinstance(part, dict) or part is None else ["(not a dict)"]
        if unknown:
            known = ", ".join(CHECKS)
            module.fail_json(msg="parts.%s: unknown checks %s (known: %s)" % (name, ", ".join(unknown), known))
    parts = {
        name: {"differences": differences_of(module, part or {}, family), "os_family": family}
        for name, part in sorted(p["parts"].items())
    }
    differences = differences_of(module, p, family) + [d for part in parts.values() for d in part["differences"]]
    module.exit_json(changed=False, differences=differences, parts=parts, os_family=family)


if __name__ == "__main__":
    main()
