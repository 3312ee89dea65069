# -*- coding: utf-8 -*-
"""Where and how the Ascend runtime goes into containerd's or Docker's configuration.

Pure functions (no I/O), used by the ascend_runtime_config module and unit-tested on the
controller. Facts behind them:

- MindCluster INST02: Docker needs ``runtimes.ascend.path`` and
  ``"default-runtime": "ascend"`` in daemon.json; containerd a ``runtimes.ascend`` block
  (``runtime_type io.containerd.runc.v2``, ``options.BinaryName``) and
  ``default_runtime_name = "ascend"`` under the CRI plugin.
- The CRI plugin's name depends on the config version: 1 ``cri``, 2
  ``io.containerd.grpc.v1.cri``, 3 ``io.containerd.cri.v1.runtime`` (MindCluster
  component/ascend-docker-runtime/install/process/constant.go; containerd docs). containerd
  reads a file without ``version`` as version 1 (containerd-config.toml(5)); the vendor
  installer assumes 2 there, we follow containerd.
- The vendor installer copies the ``runc`` runtime table (options such as SystemdCgroup
  included) to ``ascend`` and sets BinaryName (containerd_process.go addRuntime); so do we,
  so that the cgroup driver of both runtimes agrees.
- Drop-ins: containerd merges ``imports`` into the main file. Up to 1.7 a plugin section in an
  import replaces the whole section of the main file (CTRD: containerd issues #5837, #7982), so a
  drop-in would drop every other CRI setting; from 2.0 sections merge key by key (containerd
  PR #9982, CTRD), and 2.2 adds ``imports = ['/etc/containerd/conf.d/*.toml']`` to the default file
  (PR #12323). A drop-in is therefore used only for containerd >= 2 with a version 3 file whose
  ``imports`` cover it; otherwise the main file is edited in place, keeping every other key.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import fnmatch
import os
import re

PLUGIN_BY_VERSION = {1: "cri", 2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}
RUNC = "runc"
RUNC_TYPE = "io.containerd.runc.v2"


class RuntimeConfigError(ValueError):
    """A configuration the role must not edit (the message says what to fix)."""


def containerd_major(version_output):
    """Major version from ``containerd --version`` ("containerd github.com/containerd/containerd
    v1.7.27 <sha>", "containerd containerd.io 1.7.27 <sha>", ".../containerd/v2 v2.1.4 <sha>")."""
    fields = version_output.split()
    for field in fields[1:]:
        match = re.match(r"v?(\d+)\.(\d+)(\.\d+)?", field)
        if match and "/" not in field:
            return int(match.group(1))
    raise RuntimeConfigError("cannot read a version from 'containerd --version': %r" % version_output.strip())


def config_version(cfg):
    version = cfg.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version not in PLUGIN_BY_VERSION:
        raise RuntimeConfigError("unsupported containerd config version %r (known: 1, 2, 3)" % (version,))
    return version


def _get(tree, path):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _set(tree, path, value):
    for key in path[:-1]:
        child = tree.get(key)
        if child is None:
            child = tree[key] = {}
        if not isinstance(child, dict):
            raise RuntimeConfigError("%s is not a table in the containerd config" % ".".join(path))
        tree = child
    tree[path[-1]] = value


def containerd_section(version):
    return ["plugins", PLUGIN_BY_VERSION[version], "containerd"]


def imports_cover(cfg, config_path, dropin_path):
    """True when one of the config's ``imports`` (globs, relative to the config's directory)
    names the drop-in file."""
    imports = cfg.get("imports", [])
    if not isinstance(imports, list):
        return False
    base = os.path.dirname(config_path)
    for pattern in imports:
        if not isinstance(pattern, str):
            continue
        if not os.path.isabs(pattern):
            pattern = os.path.join(base, pattern)
        if fnmatch.fnmatchcase(dropin_path, pattern):
            return True
    return False


def ascend_entry(runc_entry, binary):
    """The ascend runtime table: a copy of runc's (cgroup driver and all), BinaryName = binary."""
    entry = copy.deepcopy(runc_entry) if isinstance(runc_entry, dict) else {"runtime_type": RUNC_TYPE}
    entry.setdefault("runtime_type", RUNC_TYPE)
    options = entry.get("options")
    if not isinstance(options, dict):
        options = entry["options"] = {}
    options["BinaryName"] = binary
    return entry


def plan_containerd(main_cfg, main_path, major, name, binary, dropin_path, dropin_cfg, dropin_allowed):
    """Decide the target file and its wanted content.

    Returns a dict: mode (in-place | drop-in), target, version, plugin, current (target's parsed
    content), desired, previous_default (the main file's default runtime before the change)."""
    version = config_version(main_cfg)
    section = containerd_section(version)
    runc = _get(main_cfg, [*section, "runtimes", RUNC])
    entry = ascend_entry(runc, binary)
    previous = _get(main_cfg, [*section, "default_runtime_name"])
    use_dropin = dropin_allowed and major >= 2 and version == 3 and imports_cover(main_cfg, main_path, dropin_path)
    if use_dropin:
        desired = {"version": 3}
        mode, target, current = "drop-in", dropin_path, dropin_cfg
    else:
        desired = copy.deepcopy(main_cfg)
        mode, target, current = "in-place", main_path, main_cfg
    _set(desired, [*section, "default_runtime_name"], name)
    _set(desired, [*section, "runtimes", name], entry)
    return {
        "mode": mode,
        "target": target,
        "version": version,
        "plugin": PLUGIN_BY_VERSION[version],
        "current": current,
        "desired": desired,
        "previous_default": previous,
    }


def merge_docker(daemon, name, binary):
    """daemon.json with the ascend runtime as default; every other key and runtime kept
    (docker_process.go addDockerDaemon: runtimeArgs kept when present)."""
    if not isinstance(daemon, dict):
        raise RuntimeConfigError("daemon.json must hold a JSON object")
    desired = copy.deepcopy(daemon)
    runtimes = desired.setdefault("runtimes", {})
    if not isinstance(runtimes, dict):
        raise RuntimeConfigError('"runtimes" in daemon.json is not an object')
    entry = runtimes.get(name)
    if not isinstance(entry, dict):
        entry = runtimes[name] = {}
    entry["path"] = binary
    entry.setdefault("runtimeArgs", [])
    previous = daemon.get("default-runtime")
    desired["default-runtime"] = name
    return desired, previous
