#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Make the Ascend runtime the default of containerd or Docker by editing their config in place."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_runtime_config
short_description: Register Ascend Docker Runtime as default runtime of containerd or Docker, keeping the rest
description:
  - Reads C(/etc/containerd/config.toml) or C(/etc/docker/daemon.json), adds the C(ascend) runtime and makes it
    the default, and writes the file only when its content (not its layout) changes. Every other key and runtime
    (an nvidia runtime, registry settings, the cgroup driver) is kept.
  - containerd - the CRI plugin path follows the config version (1 C(cri), 2 C(io.containerd.grpc.v1.cri),
    3 C(io.containerd.cri.v1.runtime)); the C(ascend) entry copies the C(runc) entry and sets C(BinaryName).
    With containerd 2.x, a version 3 file and C(imports) covering I(dropin_path), a drop-in file is written
    instead and the main file is left alone (containerd 1.x replaces whole plugin sections from imports).
  - A missing containerd config starts from C(containerd config default), as the vendor installer does.
  - Refuses symlinked files and files it cannot parse (nothing is written then). Supports check mode and diff.
options:
  engine:
    description: Container engine whose configuration is edited.
    type: str
    required: true
    choices: [containerd, docker]
  runtime_name:
    description: Runtime name to register and make the default.
    type: str
    default: ascend
  runtime_path:
    description: Path of the ascend-docker-runtime binary.
    type: path
    required: true
  config_path:
    description: Main configuration file (default /etc/containerd/config.toml or /etc/docker/daemon.json).
    type: path
  containerd:
    description: containerd binary (its version decides whether a drop-in is possible).
    type: str
    default: containerd
  dropin:
    description: C(auto) uses a drop-in where containerd supports merging it, C(never) always edits the main file.
    type: str
    default: auto
    choices: [auto, never]
  dropin_path:
    description: Drop-in file for containerd >= 2.
    type: path
    default: /etc/containerd/conf.d/99-ascend-docker-runtime.toml
  backup:
    description: Keep a timestamped copy of a file before it is changed.
    type: bool
    default: true
  info_file:
    description:
      - The runtime installer's record (C(ascend_docker_runtime_install.info), C(version=v...)); when given, the
        installed runtime is returned as C(installed) in the same call, so deciding needs no other read.
    type: path
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Ascend runtime as containerd's default runtime
  ascend_resumable.npu.ascend_runtime_config:
    engine: containerd
    runtime_path: /usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime
"""

RETURN = r"""
target:
  description: File that holds the ascend runtime (the main file or the drop-in).
  returned: always
  type: str
mode:
  description: C(in-place), C(drop-in) (containerd) or C(daemon.json) (docker).
  returned: always
  type: str
plugin:
  description: CRI plugin section used (containerd).
  returned: when engine is containerd
  type: str
installed:
  description: "With I(info_file): C({binary: bool, version: str or null}) of the installed runtime."
  returned: when info_file is given
  type: dict
previous_default:
  description: Default runtime before the change (null when none was set).
  returned: always
  type: str
config_changes:
  description:
    - Whether the engine configuration differs from what the role wants (the same as C(changed), also when a
      caller overrides C(changed) of a dry run in check mode, as the role's decide step does).
  returned: always
  type: bool
backup_file:
  description: Copy of the file before it was changed.
  returned: when a file was changed and backup is true
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_runtime import (
    RuntimeConfigError,
    containerd_major,
    merge_docker,
    plan_containerd,
)
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_toml import TomlError, dumps, loads

MAX_SIZE = 10 * 1024 * 1024  # the vendor helper refuses config files above 10 MiB too


def read_text(module, path):
    """Text of a regular file, None when missing; fails on symlinks and oversized files."""
    if os.path.islink(path):
        module.fail_json(
            msg="%s is a symbolic link; the Ascend Docker Runtime installer refuses it and so does "
            "this role. Point the link's target here as a regular file." % path
        )
    if not os.path.exists(path):
        return None
    if not os.path.isfile(path):
        module.fail_json(msg="%s is not a regular file" % path)
    if os.path.getsize(path) > MAX_SIZE:
        module.fail_json(msg="%s is larger than %d bytes; refusing to parse it" % (path, MAX_SIZE))
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def write_text(module, path, text, backup):
    """Atomic replace, keeping the existing file's mode and owner (new files: 0600 root)."""
    result = {}
    existed = os.path.exists(path)
    if existed and backup:
        result["backup_file"] = module.backup_local(path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = "%s.ascend-tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as handle:
        handle.write(text.encode("utf-8"))
    if existed:
        st = os.stat(path)
        os.chmod(tmp, st.st_mode & 0o7777)
        os.chown(tmp, st.st_uid, st.st_gid)
    else:
        os.chmod(tmp, 0o600)
    module.atomic_move(tmp, path)
    return result


def containerd(module, p):
    main_path = p["config_path"] or "/etc/containerd/config.toml"
    binary = module.get_bin_path(p["containerd"]) if not os.path.isabs(p["containerd"]) else p["containerd"]
    if not binary or not os.path.exists(binary):
        module.fail_json(
            msg="containerd (%s) is not installed on this node, but the plan's container runtime is "
            "containerd. Install the Kubernetes container runtime first." % p["containerd"]
        )
    rc, out, err = module.run_command([binary, "--version"])
    if rc != 0:
        module.fail_json(msg="'%s --version' failed: %s" % (binary, err or out))
    try:
        major = containerd_major(out)
    except RuntimeConfigError as exc:
        module.fail_json(msg=str(exc))
    text = read_text(module, main_path)
    created = text is None
    if created:
        # the vendor installer starts from the default config when there is none (run_main.sh)
        rc, text, err = module.run_command([binary, "config", "default"])
        if rc != 0:
            module.fail_json(msg="'%s config default' failed: %s" % (binary, err))
    try:
        main_cfg = loads(text)
    except TomlError as exc:
        module.fail_json(msg="%s is not valid TOML (%s); nothing was changed. Fix the file first." % (main_path, exc))
    dropin_text = read_text(module, p["dropin_path"])
    try:
        dropin_cfg = loads(dropin_text) if dropin_text is not None else None
    except TomlError as exc:
        module.fail_json(msg="%s is not valid TOML (%s); nothing was changed." % (p["dropin_path"], exc))
    try:
        plan = plan_containerd(
            main_cfg,
            main_path,
            major,
            p["runtime_name"],
            p["runtime_path"],
            p["dropin_path"],
            dropin_cfg,
            p["dropin"] == "auto",
        )
    except RuntimeConfigError as exc:
        module.fail_json(msg="%s: %s; nothing was changed." % (main_path, exc))
    current_text = text if plan["mode"] == "in-place" else dropin_text
    changed = plan["current"] != plan["desired"] or (plan["mode"] == "in-place" and created)
    result = {
        "changed": changed,
        "config_changes": changed,
        "engine": "containerd",
        "containerd_major": major,
        "config_version": plan["version"],
        "plugin": plan["plugin"],
        "mode": plan["mode"],
        "target": plan["target"],
        "previous_default": plan["previous_default"],
    }
    new_text = dumps(plan["desired"])
    if changed:
        result["diff"] = {
            "before": current_text or "",
            "after": new_text,
            "before_header": plan["target"],
            "after_header": plan["target"],
        }
        if not module.check_mode:
            result.update(write_text(module, plan["target"], new_text, module.params["backup"]))
    return result


def docker(module, p):
    path = p["config_path"] or "/etc/docker/daemon.json"
    text = read_text(module, path)
    try:
        daemon = json.loads(text) if text is not None and text.strip() else {}
    except ValueError as exc:
        module.fail_json(msg="%s is not valid JSON (%s); nothing was changed. Fix the file first." % (path, exc))
    try:
        desired, previous = merge_docker(daemon, p["runtime_name"], p["runtime_path"])
    except RuntimeConfigError as exc:
        module.fail_json(msg="%s: %s; nothing was changed." % (path, exc))
    changed = desired != daemon or text is None
    result = {
        "changed": changed,
        "config_changes": changed,
        "engine": "docker",
        "mode": "daemon.json",
        "target": path,
        "previous_default": previous,
    }
    new_text = json.dumps(desired, indent=4) + "\n"
    if changed:
        result["diff"] = {"before": text or "", "after": new_text, "before_header": path, "after_header": path}
        if not module.check_mode:
            result.update(write_text(module, path, new_text, p["backup"]))
    return result


def installed_runtime(binary, info_file):
    """{binary: whether the runtime binary is there and executable, version: install.info's version= without
    its v, or None}."""
    version = None
    try:
        with open(info_file) as handle:
            for line in handle.read(65536).splitlines():
                key, sep, value = line.partition("=")
                if sep and key.strip() == "version":
                    version = value.strip()
                    version = version[1:] if version.startswith("v") else version
    except (OSError, UnicodeDecodeError):
        pass
    return {"binary": os.path.isfile(binary) and os.access(binary, os.X_OK), "version": version}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=["containerd", "docker"]),
            runtime_name=dict(type="str", default="ascend"),
            runtime_path=dict(type="path", required=True),
            config_path=dict(type="path"),
            containerd=dict(type="str", default="containerd"),
            dropin=dict(type="str", default="auto", choices=["auto", "never"]),
            dropin_path=dict(type="path", default="/etc/containerd/conf.d/99-ascend-docker-runtime.toml"),
            backup=dict(type="bool", default=True),
            info_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = containerd(module, p) if p["engine"] == "containerd" else docker(module, p)
    if p["info_file"]:
        result["installed"] = installed_runtime(p["runtime_path"], p["info_file"])
    previous = result.get("previous_default")
    if result["changed"] and previous not in (None, "", "runc", p["runtime_name"]):
        module.warn(
            "%s: the default runtime was %r and becomes %r (MindCluster needs Ascend Docker Runtime as the "
            "default); the %r runtime itself is kept." % (result["target"], previous, p["runtime_name"], previous)
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
