#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Directories with owner/group/mode, and files created empty when missing, in one call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_node_paths
short_description: Ensure directories (owner, group, mode) and create missing files, in one module call
description:
  - Each entry of I(directories) is created when missing (parents too, root-owned 0755) and given its owner, group
    and mode. Each entry of I(files) is created empty with its owner, group and mode when missing; an existing file
    is left exactly as it is (content, owner and mode), like C(ansible.builtin.copy) with C(force=false).
  - One call for all of them keeps a converged node's run short. Supports check mode and diff.
options:
  directories:
    description: Directories as {path, owner, group, mode}.
    type: list
    elements: dict
    default: []
  files:
    description: Files as {path, owner, group, mode}, created empty when missing.
    type: list
    elements: dict
    default: []
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Log directories and /etc/vnpu.cfg
  ascend_resumable.npu.ascend_node_paths:
    directories: [{path: /var/log/mindx-dl, owner: root, group: root, mode: "0755"}]
    files: [{path: /etc/vnpu.cfg, owner: root, group: root, mode: "0600"}]
"""

RETURN = r"""
created:
  description: Paths that did not exist.
  returned: always
  type: list
updated:
  description: Existing directories whose owner, group or mode changed.
  returned: always
  type: list
"""

import os

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[]),
            files=dict(type="list", elements="dict", default=[]),
        ),
        supports_check_mode=True,
    )
    created = []
    updated = []
    diffs = []
    for kind in ("directories", "files"):
        for entry in module.params[kind]:
            missing = [k for k in ("path", "owner", "mode") if not entry.get(k)]
            if missing:
                module.fail_json(msg="%s entry %r lacks %s" % (kind, entry, ", ".join(missing)))
            path = entry["path"]
            attrs = module.load_file_common_arguments(
                {
                    "path": path,
                    "owner": entry["owner"],
                    "group": entry.get("group") or entry["owner"],
                    "mode": str(entry["mode"]),
                }
            )
            if not os.path.lexists(path):
                created.append(path)
                diffs.append(
                    {
                        "before": {"path": path, "state": "absent"},
                        "after": {"path": path, "state": "directory" if kind == "directories" else "file"},
                    }
                )
                if module.check_mode:
                    continue
                if kind == "directories":
                    parent = os.path.dirname(path)
                    if parent and not os.path.isdir(parent):
                        os.makedirs(parent, 0o755)
                    os.mkdir(path, 0o700)
                else:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    os.close(fd)
                module.set_fs_attributes_if_different(attrs, True)
                continue
            if kind == "files":
                continue  # never touch an existing file
            if not os.path.isdir(path) or os.path.islink(path):
                module.fail_json(msg="%s exists but is not a directory" % path)
            diff = {"before": {"path": path}, "after": {"path": path}}
            if module.set_fs_attributes_if_different(attrs, False, diff=diff):
                updated.append(path)
                diffs.append(diff)
    changed = bool(created or updated)
    module.exit_json(changed=changed, created=created, updated=updated, diff=diffs)


if __name__ == "__main__":
    main()
