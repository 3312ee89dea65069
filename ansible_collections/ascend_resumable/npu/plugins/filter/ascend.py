"""Filters of ascend_resumable.npu: Ascend version ordering, package names, hardware vs profile
(each documented in plugins/filter/<name>.yml: ansible-doc -t filter ascend_resumable.npu.<name>).

Thin wrappers over the collection's module_utils, which the facts module uses on the nodes.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend_resumable.npu.plugins.module_utils import ascend_hardware, ascend_version


def version_compare(left, right):
    try:
        return ascend_version.compare(left, right)
    except ascend_version.VersionError as exc:
        raise AnsibleFilterError("version_compare(%r, %r): %s" % (left, right, exc)) from exc


def version_in_ranges(version, ranges):
    try:
        return ascend_version.in_ranges(version, ranges)
    except ascend_version.VersionError as exc:
        raise AnsibleFilterError("version_in_ranges(%r, %r): %s" % (version, ranges, exc)) from exc


_CHECKSUM = re.compile(r"^sha256:[0-9a-f]{64}$")


def inventory_problems(hostvars, hosts, inventory_hosts):
    """Shapes of the Ascend variables of every compute host, checked once on the controller.

    Returns "host: problem, problem" strings (reboot policy, real booleans, Ascend versions,
    sha256 checksums, a kubectl host that is in the inventory).
    """
    out = []
    for host in hosts:
        v = hostvars[host]
        problems = []
        policy = v.get("ascend_driver_reboot_policy", "if_needed")
        if policy not in ("never", "if_needed", "always"):
            problems.append("ascend_driver_reboot_policy %r is not never/if_needed/always" % policy)
        for name in (
            "ascend_driver_drain_enabled",
            "ascend_driver_force",
            "ascend_driver_allow_downgrade",
            "ascend_cann_allow_downgrade",
        ):
            if name in v and not isinstance(v[name], bool):
                problems.append("%s must be true or false, not %r" % (name, v[name]))
        for name in ("ascend_driver_driver_version", "ascend_driver_firmware_version", "ascend_cann_version"):
            value = v.get(name) or ""
            if value and not ascend_version.is_version(value):
                problems.append("%s %r is not a version like 25.2.0, 7.7.0.1.231 or 8.3.RC1" % (name, value))
        for name in (
            "ascend_driver_driver_package",
            "ascend_driver_firmware_package",
            "ascend_cann_toolkit_package",
            "ascend_cann_ops_package",
        ):
            checksum = (v.get(name) or {}).get("checksum")
            if checksum is not None and not _CHECKSUM.match(str(checksum)):
                problems.append("%s checksum %r is not sha256:<64 lowercase hex>" % (name, checksum))
        kubectl_host = v.get("ascend_driver_kubectl_host")
        known = [*inventory_hosts, "localhost"]
        if v.get("ascend_driver_drain_enabled", True) and kubectl_host is not None and kubectl_host not in known:
            problems.append("ascend_driver_kubectl_host %r is not an inventory host" % kubectl_host)
        if problems:
            out.append("%s: %s" % (host, ", ".join(problems)))
    return out


def checksum_problems(stat_results, host):
    """Problems in the registered results of a stat loop over {key, value: package} items."""
    problems = []
    for result in stat_results:
        item = result["ascend_package_item"]
        source = item["value"].get("src") or item["value"].get("path")
        where = "the controller" if item["value"].get("src") else host
        wanted = (item["value"].get("checksum") or "").replace("sha256:", "", 1)
        stat = result.get("stat") or {}
        if not stat.get("exists"):
            problems.append("package %s (%s on %s) is missing" % (item["key"], source, where))
        elif wanted and stat.get("checksum") != wanted:
            problems.append(
                "package %s (%s on %s) has sha256 %s, the inventory says %s"
                % (item["key"], source, where, stat.get("checksum"), wanted)
            )
    return problems


def allocatable_short(after, before):
    """Resources (``huawei.com/*``) the node reports fewer of than before the window, as "name: now/before".

    At least as many as before, not exactly as many: an upgrade may bring back an NPU that was
    faulty before it, and that node must not stay held for having more NPUs.
    """

    def count(value):
        try:
            return int(str(value))
        except ValueError:
            return 0

    after = after or {}
    return [
        "%s: %s/%s" % (key, after.get(key, 0), value)
        for key, value in sorted((before or {}).items())
        if count(after.get(key, 0)) < count(value)
    ]


def package_node_path(package, cache_dir):
    """Where a {src}|{url}|{path} package lives on the node: path itself, else cache_dir/<file name>."""
    if package.get("path"):
        return package["path"]
    source = package.get("src") or package.get("url") or ""
    return "%s/%s" % (str(cache_dir).rstrip("/"), source.rstrip("/").rsplit("/", 1)[-1])


class FilterModule:
    def filters(self):
        return {
            "version_compare": version_compare,
            "version_in_ranges": version_in_ranges,
            "package_info": ascend_hardware.package_info,
            "package_problems": ascend_hardware.package_problems,
            "checksum_problems": checksum_problems,
            "inventory_problems": inventory_problems,
            "package_node_path": package_node_path,
            "profile_mismatches": ascend_hardware.profile_mismatches,
            "package_mismatches": ascend_hardware.package_mismatches,
            "allocatable_short": allocatable_short,
        }
