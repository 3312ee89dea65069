"""Filters of ascend_resumable.npu: Ascend version ordering, package names, hardware vs profile.

Thin wrappers over the collection's module_utils, which the facts module uses on the nodes.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: version_compare
short_description: Ascend version ordering and hardware checks for the ascend-resumable roles
description:
  - C(version_compare(a, b)) -> -1, 0 or 1 in Ascend ordering (25.0.rc1 < 25.0.rc1.1 < 25.0.0).
  - C(version_in_ranges(v, ranges)) -> is v in a version.info compatible_version_* list (None = unknown).
  - C(package_info(path)) -> kind, chip, arch, version from a vendor package file name.
  - C(package_node_path(package, cache_dir)) -> where a {src}|{url}|{path} package lives on the node.
  - C(package_problems(facts, packages, kinds, versions)) -> naming, chip, arch and version problems of packages.
  - C(checksum_problems(stat_results, host)) -> missing packages and sha256 mismatches of a stat loop.
  - C(profile_mismatches(facts, plan_nodes)) / C(package_mismatches(facts, info, what)) -> list of problems.
"""

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
            "package_node_path": package_node_path,
            "profile_mismatches": ascend_hardware.profile_mismatches,
            "package_mismatches": ascend_hardware.package_mismatches,
        }
