# -*- coding: utf-8 -*-
"""The engine configuration of Ascend Docker Runtime (containerd's config.toml or a drop-in, Docker's daemon.json):
read, planned and, unless in check mode, written. Shared by the module ascend_runtime_config (which applies it) and
ascend_npu_facts (whose read of a compute node includes the dry run: dry_run below), so a converged node is read
once for the NPUs and the engine."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

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
            result.update(write_text(module, plan["target"], new_text, p["backup"]))
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


#: the options of ascend_runtime_config with their defaults (the dry run of ascend_npu_facts takes the same)
OPTIONS = {
    "engine": None,
    "runtime_name": "ascend",
    "runtime_path": None,
    "config_path": None,
    "containerd": "containerd",
    "dropin": "auto",
    "dropin_path": "/etc/containerd/conf.d/99-ascend-docker-runtime.toml",
    "backup": True,
    "info_file": None,
}


class DryRunFailed(Exception):
    """What ascend_runtime_config would have failed with."""


class _DryRun(object):
    """The module as the engine functions see it, in check mode, failing by exception instead of exiting."""

    check_mode = True

    def __init__(self, module):
        self._module = module

    def fail_json(self, msg, **kwargs):
        raise DryRunFailed(msg)

    def get_bin_path(self, *args, **kwargs):
        return self._module.get_bin_path(*args, **kwargs)

    def run_command(self, *args, **kwargs):
        return self._module.run_command(*args, **kwargs)


def configure(module, p):
    """What ascend_runtime_config returns (and, unless in check mode, writes) for the options ``p``."""
    result = containerd(module, p) if p["engine"] == "containerd" else docker(module, p)
    if p["info_file"]:
        result["installed"] = installed_runtime(p["runtime_path"], p["info_file"])
    return result


def dry_run(module, options):
    """ascend_runtime_config's result in check mode for ``options`` (its options), without the diff; on what would
    fail it, {"failed": true, "msg": ...}, so the caller can run the module itself and fail where it always did."""
    p = dict(OPTIONS)
    p.update(dict((k, v) for k, v in options.items() if v is not None))
    if p["engine"] not in ("containerd", "docker") or not p["runtime_path"]:
        return {"failed": True, "msg": "engine (containerd or docker) and runtime_path are required"}
    try:
        result = configure(_DryRun(module), p)
    except DryRunFailed as exc:
        return {"failed": True, "msg": str(exc)}
    result.pop("diff", None)
    result["changed"] = False
    return result
