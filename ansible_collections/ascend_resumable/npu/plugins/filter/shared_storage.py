# -*- coding: utf-8 -*-
"""What the shared_storage role makes of a node, as ascend_node_check compares it (one read on a re-run)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def fstab_line(mount):
    """The /etc/fstab line of a plan mount ({source, path, fstype, opts})."""
    return "%s %s %s %s 0 0" % (mount["source"], mount["path"], mount["fstype"], mount["opts"])


def expected(mounts, mount_now, ranktable_paths, access, job_dirs=None):
    """{fstab, mounts, paths} for ascend_node_check: each mount's fstab line, its source mounted there (or,
    with ``mount_now`` false, nothing mounted is accepted too), the mount points with their owner, group and
    mode (the whole export has none: the server's are kept), ``ranktable_paths`` with the plan's ranktable
    ``access`` (owner, group, mode), and the ``job_dirs`` (plan nodes.job_dirs) with their own."""
    paths = [dict(m, state="directory") for m in mounts or []]
    paths += [dict(access or {}, path=p, state="directory") for p in ranktable_paths or []]
    paths += [
        {"path": d["path"], "state": "directory", "owner": d["owner"], "group": d["group"], "mode": d["mode"]}
        for d in job_dirs or []
    ]
    return {
        "fstab": [{"path": m["path"], "line": fstab_line(m)} for m in mounts or []],
        "mounts": [{"path": m["path"], "source": m["source"], "required": bool(mount_now)} for m in mounts or []],
        "paths": paths,
    }


class FilterModule(object):
    def filters(self):
        return {"shared_storage_expected": expected, "shared_storage_fstab_line": fstab_line}
