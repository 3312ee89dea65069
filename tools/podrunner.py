#!/usr/bin/env python3
"""Run the containers of the pods whose image is a component built here, as processes: the Ascend
Operator and Volcano's scheduler and controller manager of a local control plane.

KWOK plays every node's kubelet but starts nothing: it marks pods Running. For the components this
project can build from source (``tools/source_tools.py``), this program plays the container runtime
instead. It watches the API server; for every pod bound to a node whose container image is one of

    ascend-operator:v<release>...           the Ascend Operator of MindCluster <release>
    vc-scheduler:v<version>...              Volcano's scheduler
    vc-controller-manager:v<version>...     Volcano's controller manager

and with ``--mindcluster`` what pod-level rescheduling needs besides, where this project builds it:

    vc-scheduler:v1.9.0...                  the scheduler built with Huawei's NPU plugin the pod's
                                            scheduler config names (source_tools.volcano_npu)
    clusterd:v7.3.0...                      ClusterD (in-cluster credentials: :func:`in_cluster`)
    ascend-k8sdeviceplugin:v7.3.0...        the device plugin's double (tools/device_plugin_double.py:
                                            no NPU here), its reports written as the pod's identity

``--mindcluster`` is not the default because the NPU plugin rewrites a job's ``reset-config-<job>``
ConfigMap when it first schedules the job, its labels and data replaced (MC:@v7.3.0
component/ascend-for-volcano/plugin/job.go:435-467 updateResetCm): the rendered ConfigMap then
differs from the cluster's, which the render's printed ``kubectl diff`` shows (docs/local-cluster.md).

(any registry prefix; the version is the tag's first ``v<x.y.z[.SPCn]>``) it starts the program built
at that version with the pod's own command line, and stops it when the pod goes. So what runs is
what the deployment declared: the Deployment's flags as the API server stored them (a wrong flag
fails the program), and the pod's ServiceAccount as its identity: each program gets a kubeconfig
holding a token the API server issued for that ServiceAccount, bound to the pod (TokenRequest), so
RBAC judges every call as in a pod (a missing rule fails the component).

What a container would give and a process cannot, and how it is stood in for:

- the file system: each volume mount is a directory under ``--dir`` (``pods/<ns>_<pod>/``; a
  hostPath under ``nodes/<node>/``, a ConfigMap written out with its keys); absolute paths in the
  arguments are rewritten to those directories, relative ones resolve in the pod's own root;
- the network namespace: an address flag that listens on every interface (``:8080``, ``0.0.0.0:N``)
  is moved to a free loopback port, so two control planes on one machine do not collide;
- in-cluster credentials: ``KUBECONFIG`` in the environment and, for Volcano (whose client reads
  only its ``--kubeconfig`` flag), that flag appended;
- the container's shell: the Volcano images wrap the program in ``/bin/ash -c 'umask 027; <program>
  ... 2>&1'`` and the operator's in ``/bin/bash -c -- '<program> ...'``; the ``umask`` and the
  redirection are taken off and the rest is split as a shell would (anything else a shell would
  interpret is refused, with an event on the pod).

A program that exits is started again after a back-off (10 s doubling to 5 minutes, as the kubelet
does for ``restartPolicy: Always``). What the runner does is written to ``--dir/podrunner.log``
and, for what a user looks for, as events on the pod (``kubectl describe pod``). On SIGTERM it
stops its programs first (SIGTERM, then SIGKILL after their grace period, at most 10 s) and exits.

    python3 tools/podrunner.py --kubeconfig DIR/kubeconfig --dir DIR/runner

Standard library only; started by ``tools/controlplane.py`` beside the control plane.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_tools
from source_tools import CLUSTERD_RELEASES, SOURCE_TOOLS, SourcesMissing, SourceTool, ascend_operator, clusterd, volcano

Obj = Dict[str, Any]

#: image repository name -> (source tool family, program)
COMPONENTS: Dict[str, Tuple[str, str]] = {
    "ascend-operator": ("ascend-operator", "ascend-operator"),
    "vc-scheduler": ("volcano", "vc-scheduler"),
    "vc-controller-manager": ("volcano", "vc-controller-manager"),
    "clusterd": ("clusterd", "clusterd"),
    "ascend-k8sdeviceplugin": ("device-plugin-double", "device-plugin"),
}
#: families run only at the releases this project builds them for (others stay KWOK's fake pods); the
#: device plugin cannot run without NPUs: its double (tools/device_plugin_double.py) plays it at the
#: releases it is written for, the ones whose NPU plugin and ClusterD run here
BUILT_RELEASES: Dict[str, Tuple[str, ...]] = {
    "clusterd": CLUSTERD_RELEASES,
    "device-plugin-double": CLUSTERD_RELEASES,
}
DEVICE_PLUGIN_DOUBLE = Path(__file__).resolve().parent / "device_plugin_double.py"
#: families whose client reads only the in-cluster credentials (a ServiceAccount token file at a
#: fixed path and KUBERNETES_SERVICE_HOST/PORT): ClusterD builds its client with
#: clientcmd.BuildConfigFromFlags("", "") (MC:@v7.3.0 component/clusterd/pkg/interface/kube/kube_init.go:37-38),
#: which is rest.InClusterConfig: /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}
IN_CLUSTER = {"clusterd"}
SERVICE_ACCOUNT_DIR = "/run/secrets/kubernetes.io/serviceaccount"
#: families whose client reads only a --kubeconfig flag, not $KUBECONFIG (volcano-sh/volcano
#: v1.9.0 pkg/kube/config.go BuildConfig: clientcmd.BuildConfigFromFlags(master, kubeconfig))
KUBECONFIG_FLAG = {"volcano"}
TAG_VERSION = re.compile(r"^v(\d+\.\d+\.\d+(?:\.(?:SPC|RC)\d+)?)")
SHELLS = {"sh", "bash", "ash"}
UMASK = re.compile(r"^\s*umask\s+[0-7]+\s*;\s*")
REDIRECT = re.compile(r"\s*2>&1\s*$")
#: what a shell would interpret in a command line (refused: this runner is no shell)
SHELL_SYNTAX = re.compile(r"[;&|<>$`]")
LISTEN_FLAG = re.compile(r"^(--[\w-]*address)=(?:0\.0\.0\.0)?:(\d+)$")
#: a listen flag that takes a port alone and listens on every interface with it: the Ascend Operator's
#: health check from 26.0 (MC:@v26.1.0 component/ascend-common/common-utils/healthz/healthz.go:38,148-150,
#: 190: ``net.Listen("tcp", ":"+port)``, default 11251; the rendered Deployment says 11252). It cannot
#: be moved to loopback, only to a free port.
PORT_FLAG = re.compile(r"^(--[\w-]*address)=(\d+)$")
#: the listen addresses a program opens on every interface by default when its command line does
#: not name them, with the first version that has the flag: in a pod each has its own network
#: namespace, here they share the machine's, so they are named and moved to free loopback ports like
#: the named ones (the scheduler and the controller manager both default the health check to :11251,
#: which only one of them could bind). volcano-sh/volcano v1.9.0 and v1.12.0
#: cmd/scheduler/app/options/options.go defaultListenAddress ":8080", defaultHealthzAddress ":11251";
#: cmd/controller-manager/app/options/options.go defaultHealthzAddress ":11251", and from v1.12.0
#: defaultListenAddress ":8081" (the metrics server --enable-metrics starts; v1.9.0 has no such flag).
#: The Ascend Operator serves no metrics (main.go MetricsBindAddress "0" at v7.3.0, BindAddress "0"
#: at v26.1.0); its health check takes a port alone (PORT_FLAG).
DEFAULT_LISTEN: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "vc-scheduler": (("--listen-address", "1.9.0"), ("--healthz-address", "1.9.0")),
    "vc-controller-manager": (("--healthz-address", "1.9.0"), ("--listen-address", "1.12.0")),
}
POLL_SECONDS = 1.0
BACKOFF_FIRST = 10.0
BACKOFF_MAX = 300.0
STOP_GRACE_MAX = 10.0
TOKEN_SECONDS = 86400


class RunnerError(Exception):
    """What keeps one pod's program from starting: said in the log and as an event on the pod."""


def say(log: Path, message: str) -> None:
    """One line in the runner's log; never raises (the runner must go on stopping its children)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]
    with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as out:
        out.write(f"{stamp} {message}\n")


# -- the API server ---------------------------------------------------------------------------------


class Api:
    """The API server as the admin kubeconfig of tools/controlplane.py reaches it."""

    def __init__(self, kubeconfig: Path) -> None:
        doc = json.loads(kubeconfig.read_text(encoding="utf-8"))
        self.server: str = doc["clusters"][0]["cluster"]["server"]
        self.ca: str = doc["clusters"][0]["cluster"]["certificate-authority"]
        user = doc["users"][0]["user"]
        self.context = ssl.create_default_context(cafile=self.ca)
        self.context.load_cert_chain(user["client-certificate"], user["client-key"])

    def call(self, method: str, path: str, body: Optional[Obj] = None) -> Obj:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=20, context=self.context) as response:
            result: Obj = json.loads(response.read() or b"{}")
            return result

    def event(self, pod: Obj, reason: str, message: str, kind: str = "Warning") -> None:
        meta = pod["metadata"]
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": meta["name"] + ".", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message[:1000],
            "type": kind,
            "source": {"component": "podrunner", "host": pod["spec"].get("nodeName", "")},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        with contextlib.suppress(urllib.error.URLError, OSError, ValueError):
            self.call("POST", f"/api/v1/namespaces/{meta['namespace']}/events", event)

    def token(self, pod: Obj) -> str:
        """A token of the pod's ServiceAccount, bound to the pod (what the kubelet mounts)."""
        meta, spec = pod["metadata"], pod["spec"]
        account = spec.get("serviceAccountName") or "default"
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": TOKEN_SECONDS,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
            },
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token"
        try:
            answer = self.call("POST", path, request)
        except urllib.error.HTTPError as exc:
            raise RunnerError(f"no token for ServiceAccount {meta['namespace']}/{account}: HTTP {exc.code}") from None
        return str(answer["status"]["token"])


# -- a pod's container as a process -----------------------------------------------------------------


@dataclass
class Container:
    """What runs for one pod: the program's argv, environment and working directory."""

    argv: List[str]
    env: Dict[str, str]
    cwd: Path
    grace: float


def component_of(image: str, mindcluster: bool = False) -> Optional[Tuple[str, str, str]]:
    """(family, program, version) of a component image, or None. ClusterD and the device plugin's
    double only with ``mindcluster`` (``--mindcluster``: module docstring)."""
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    repository = name.rsplit("/", 1)[-1]
    if repository not in COMPONENTS:
        return None
    match = TAG_VERSION.match(tag)
    if match is None:
        return None
    family, program = COMPONENTS[repository]
    if family in BUILT_RELEASES and (not mindcluster or match.group(1) not in BUILT_RELEASES[family]):
        return None
    return family, program, match.group(1)


def command_line(container: Obj) -> List[str]:
    """The container's command and args as the argv of its program: the images' shell wrappers
    (``/bin/ash -c 'umask 027; /vc-scheduler ... 2>&1'``) taken off."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    if words and Path(words[0]).name in SHELLS:
        rest = words[1:]
        if not rest or rest[0] != "-c":
            raise RunnerError(f"a shell without -c: {shlex.join(words)}")
        rest = rest[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        if len(rest) != 1:
            raise RunnerError(f"a shell command line this runner cannot read: {shlex.join(words)}")
        script = REDIRECT.sub("", UMASK.sub("", rest[0]))
        if SHELL_SYNTAX.search(script):
            raise RunnerError(f"shell syntax this runner does not interpret: {script!r}")
        words = shlex.split(script)
    if not words:
        raise RunnerError("the container has no command")
    return words


@dataclass
class Mounts:
    """A pod's file system as directories: mount path -> host directory, longest first."""

    table: List[Tuple[str, Path]] = field(default_factory=list)
    root: Path = Path("/nonexistent")

    def resolve(self, path: str) -> Path:
        for mount, directory in self.table:
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                return directory / path[len(mount) :].lstrip("/")
        return self.root / path.lstrip("/")


def make_mounts(api: Api, pod: Obj, container: Obj, base: Path) -> Mounts:
    """The directories of ``container``'s volume mounts (created; ConfigMaps written out)."""
    meta, spec = pod["metadata"], pod["spec"]
    pod_dir = base / "pods" / f"{meta['namespace']}_{meta['name']}_{meta['uid'][:8]}"
    node_dir = base / "nodes" / spec["nodeName"]
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    mounts = Mounts(root=pod_dir / "rootfs")
    mounts.root.mkdir(parents=True, exist_ok=True)
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"], {})
        if "hostPath" in volume:
            directory = node_dir / volume["hostPath"]["path"].lstrip("/")
        elif "configMap" in volume:
            directory = pod_dir / "volumes" / mount["name"]
            write_config_map(api, meta["namespace"], volume["configMap"], directory)
        else:
            directory = pod_dir / "volumes" / mount["name"]
        if mount.get("subPath"):
            directory = directory / mount["subPath"]
        directory.mkdir(parents=True, exist_ok=True)
        mounts.table.append((mount["mountPath"], directory))
    mounts.table.sort(key=lambda item: len(item[0]), reverse=True)
    return mounts


def write_config_map(api: Api, namespace: str, source: Obj, directory: Path) -> None:
    try:
        data = api.call("GET", f"/api/v1/namespaces/{namespace}/configmaps/{source['name']}").get("data") or {}
    except urllib.error.HTTPError as exc:
        raise RunnerError(f"ConfigMap {namespace}/{source['name']} of a volume: HTTP {exc.code}") from None
    directory.mkdir(parents=True, exist_ok=True)
    items = source.get("items") or [{"key": key, "path": key} for key in data]
    for item in items:
        target = directory / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(data.get(item["key"], "")), encoding="utf-8")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rewrite(args: Sequence[str], mounts: Mounts) -> List[str]:
    """The program's arguments with paths moved into the pod's directories and wildcard listen
    addresses onto free loopback ports."""
    out = []
    for arg in args:
        listen = LISTEN_FLAG.match(arg)
        if listen:
            out.append(f"{listen.group(1)}=127.0.0.1:{free_port()}")
            continue
        port = PORT_FLAG.match(arg)
        if port:
            out.append(f"{port.group(1)}={free_port()}")
            continue
        flag, equals, value = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        if value.startswith("/") and (equals or not flag):
            value = str(mounts.resolve(value))
        out.append(f"{flag}{equals}{value}" if flag else value)
    return out


def default_listen(program: str, version: str, args: Sequence[str]) -> List[str]:
    """The loopback addresses for the listen flags ``program`` at ``version`` defaults to every
    interface and ``args`` does not name (DEFAULT_LISTEN)."""
    named = {arg.split("=", 1)[0] for arg in args}
    return [
        f"{flag}=127.0.0.1:{free_port()}"
        for flag, since in DEFAULT_LISTEN.get(program, ())
        if flag not in named and version_key(version) >= version_key(since)
    ]


def version_key(version: str) -> Tuple[int, ...]:
    """``1.12.0`` as (1, 12, 0): the numeric parts of a version, in order."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def field_value(pod: Obj, path: str) -> str:
    """The downward API's fieldRef values a component reads."""
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
    values = {
        "metadata.name": meta["name"],
        "metadata.namespace": meta["namespace"],
        "metadata.uid": meta["uid"],
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": status.get("podIP", "127.0.0.1"),
        "status.hostIP": status.get("hostIP", "127.0.0.1"),
    }
    return str(values.get(path, ""))


def container_env(pod: Obj, container: Obj) -> Dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "fieldRef" in (item.get("valueFrom") or {}):
            env[item["name"]] = field_value(pod, item["valueFrom"]["fieldRef"]["fieldPath"])
    return env


def write_kubeconfig(api: Api, token: str, path: Path) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": {"server": api.server, "certificate-authority": api.ca}}],
        "users": [{"name": "pod", "user": {"token": token}}],
        "contexts": [{"name": "pod", "context": {"cluster": "cluster", "user": "pod"}}],
        "current-context": "pod",
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    path.chmod(0o600)


def tool_bin(tool: SourceTool, log: Path) -> Path:
    """The bin directory of a source build; built here when its sources are present and it is not
    (minutes once)."""
    try:
        return go_tools.bin_dirs([tool])[0]
    except go_tools.ToolError:
        say(log, f"building {tool.name} (not in the tools cache yet)")
        try:
            with go_tools.cache_lock():
                return go_tools.build_source(tool, go_tools.go_version()) / "bin"
        except (go_tools.ToolError, SourcesMissing) as exc:
            raise RunnerError(f"{tool.name} cannot be built: {exc}") from None


def program_path(family: str, program: str, version: str, log: Path) -> Path:
    """The built program of a component image."""
    builds = {"ascend-operator": ascend_operator, "clusterd": clusterd, "volcano": volcano}
    return tool_bin(builds[family](version), log) / program


def in_cluster(api: Api, token: str, namespace: str, pod_dir: Path, argv: List[str], env: Dict[str, str]) -> List[str]:
    """``argv`` run as in a pod for a client of the in-cluster credentials: the ServiceAccount's token
    and the cluster's CA in a directory of the pod, mounted at /run/secrets/kubernetes.io/serviceaccount
    (/var/run is /run) in a mount namespace of the program's own over a tmpfs on /run, so the
    machine's /run is untouched; ``env`` gets KUBERNETES_SERVICE_HOST and _PORT of the API server.
    Needs root and util-linux ``unshare``, as a container runtime does."""
    secrets = pod_dir / "serviceaccount"
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "token").write_text(token, encoding="utf-8")
    (secrets / "ca.crt").write_bytes(Path(api.ca).read_bytes())
    (secrets / "namespace").write_text(namespace, encoding="utf-8")
    host, _, port = api.server.removeprefix("https://").rpartition(":")
    env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"] = host, port
    mount = (
        f"mount -t tmpfs tmpfs /run && mkdir -p {SERVICE_ACCOUNT_DIR} && "
        f'mount --bind {shlex.quote(str(secrets))} {SERVICE_ACCOUNT_DIR} && exec "$@"'
    )
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", mount, "sh", *argv]


#: a plugin of the scheduler config that this project builds (source_tools.volcano_npu): Huawei's NPU
#: plugin, named ``volcano-npu_v<release>...`` (resumable.plan.scheduler.volcano_plugin_name)
NPU_PLUGIN = re.compile(r"^volcano-npu_v[\w.-]+$")
#: the scheduler config flag and the plugins directory flag of vc-scheduler (volcano-sh/volcano v1.9.0
#: cmd/scheduler/app/options/options.go: --scheduler-conf, --plugins-dir)
SCHEDULER_CONF_FLAG = "--scheduler-conf"
PLUGINS_DIR_FLAG = "--plugins-dir"


def config_plugins(conf: Path) -> List[str]:
    """The plugin names of a Volcano scheduler config (``tiers[].plugins[].name``), read as text: the
    config is YAML and this runner has the standard library only, so the ``- name: X`` lines."""
    try:
        text = conf.read_text(encoding="utf-8")
    except OSError:
        return []
    return re.findall(r"^\s*-?\s*name:\s*['\"]?([^'\"\s#]+)", text, flags=re.MULTILINE)


def npu_plugin_tool(version: str, args: Sequence[str], root: Path) -> Optional[Tuple[SourceTool, str]]:
    """The build of Volcano ``version`` with the NPU plugin the scheduler config names, and that name;
    None when the config names none this project builds (the plain scheduler runs then, and Volcano
    leaves the unknown plugin out). ``args``: the command line with its paths moved (:func:`rewrite`)."""
    conf = next((a.split("=", 1)[1] for a in args if a.startswith(SCHEDULER_CONF_FLAG + "=")), "")
    if not conf:
        return None
    for plugin in config_plugins(root / conf):
        tool = SOURCE_TOOLS.get(f"volcano-{version}+{plugin}")
        if NPU_PLUGIN.match(plugin) and tool is not None:
            return tool, plugin
    return None


def place_plugin(bin_dir: Path, plugin: str, args: Sequence[str], root: Path) -> Path:
    """Link ``<plugin>.so`` into the directory ``--plugins-dir`` names, relative to the pod's root as
    in the image: MindCluster's scheduler image has the plugin in /plugins and runs from / (no
    WORKDIR; ``COPY volcano-npu_*.so plugins/``: MC:@v7.3.0
    component/ascend-for-volcano/output/Dockerfile-scheduler:3-4). Returns the directory."""
    named = next((a.split("=", 1)[1] for a in args if a.startswith(PLUGINS_DIR_FLAG + "=")), "")
    if not named:
        raise RunnerError(f"the scheduler config names {plugin} but the command line has no {PLUGINS_DIR_FLAG}")
    directory = Path(named) if Path(named).is_absolute() else root / named
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{plugin}.so"
    if target.is_symlink() or target.exists():
        target.unlink()
    target.symlink_to(bin_dir / f"{plugin}.so")
    return directory


def scheduler_path(version: str, args: Sequence[str], mounts: Mounts, log: Path) -> Path:
    """vc-scheduler at ``version``: built with the NPU plugin its config names, the plugin placed where
    ``--plugins-dir`` finds it, when this project builds that plugin; else the plain build."""
    found = npu_plugin_tool(version, args, mounts.root)
    if found is None:
        return program_path("volcano", "vc-scheduler", version, log)
    tool, plugin = found
    bin_dir = tool_bin(tool, log)
    directory = place_plugin(bin_dir, plugin, args, mounts.root)
    say(log, f"vc-scheduler {version} with {plugin}.so in {directory} ({tool.name})")
    return bin_dir / "vc-scheduler"


def prepare(api: Api, pod: Obj, container: Obj, base: Path, log: Path, mindcluster: bool = False) -> Container:
    component = component_of(container.get("image", ""), mindcluster)
    assert component is not None
    family, program, version = component
    words = command_line(container)
    if Path(words[0]).name != program:
        raise RunnerError(f"image {container['image']} runs {words[0]}, not {program}")
    mounts = make_mounts(api, pod, container, base)
    kubeconfig = mounts.root.parent / "kubeconfig"
    token = api.token(pod)
    write_kubeconfig(api, token, kubeconfig)
    args = rewrite(words[1:], mounts) + default_listen(program, version, words[1:])
    if family in KUBECONFIG_FLAG:
        args.append(f"--kubeconfig={kubeconfig}")
    env = container_env(pod, container)
    env["KUBECONFIG"] = str(kubeconfig)
    if family == "device-plugin-double":
        node = pod["spec"]["nodeName"]
        argv = [sys.executable, str(DEVICE_PLUGIN_DOUBLE), f"--node={node}", f"--kubeconfig={kubeconfig}"]
    else:
        with_plugin = mindcluster and program == "vc-scheduler"
        executable = scheduler_path(version, args, mounts, log) if with_plugin else None
        argv = [str(executable or program_path(family, program, version, log)), *args]
    if family in IN_CLUSTER:
        argv = in_cluster(api, token, pod["metadata"]["namespace"], mounts.root.parent, argv, env)
    grace = min(float(pod["spec"].get("terminationGracePeriodSeconds", 30)), STOP_GRACE_MAX)
    return Container(argv, env, mounts.root, grace)


# -- the loop ---------------------------------------------------------------------------------------


@dataclass
class Running:
    """One pod's program: its process, how often it was started, when to start it again."""

    pod: Obj
    spec: Container
    process: Optional[subprocess.Popen[bytes]] = None
    starts: int = 0
    next_start: float = 0.0
    backoff: float = BACKOFF_FIRST


class Runner:
    def __init__(self, api: Api, base: Path, mindcluster: bool = False) -> None:
        self.api = api
        self.mindcluster = mindcluster
        self.base = base
        self.log = base / "podrunner.log"
        self.running: Dict[str, Running] = {}
        self.refused: Dict[str, str] = {}
        self.stopping = False

    def wanted(self) -> Dict[str, Tuple[Obj, Obj]]:
        """Pods bound to a node, not being deleted, with a component container: uid -> (pod, container)."""
        pods = self.api.call("GET", "/api/v1/pods").get("items") or []
        out = {}
        for pod in pods:
            if not pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for container in pod["spec"].get("containers") or []:
                if component_of(container.get("image", ""), self.mindcluster):
                    out[pod["metadata"]["uid"]] = (pod, container)
                    break
        return out

    def step(self) -> None:
        wanted = self.wanted()
        for uid in [u for u in self.running if u not in wanted]:
            self.stop(uid)
        for uid, (pod, container) in wanted.items():
            if uid in self.refused:
                continue
            entry = self.running.get(uid)
            if entry is None:
                try:
                    spec = prepare(self.api, pod, container, self.base, self.log, self.mindcluster)
                    entry = Running(pod, spec)
                except RunnerError as exc:
                    self.refused[uid] = str(exc)
                    say(self.log, f"{name(pod)}: not started: {exc}")
                    self.api.event(pod, "FailedToStart", f"podrunner: {exc}")
                    continue
                self.running[uid] = entry
            self.keep_running(entry)

    def keep_running(self, entry: Running) -> None:
        if entry.process is not None and entry.process.poll() is None:
            return
        now = time.monotonic()
        if entry.process is not None:  # it ended: start again after the back-off
            code = entry.process.returncode
            entry.process = None
            entry.next_start = now + entry.backoff
            say(self.log, f"{name(entry.pod)}: exited {code}; again in {entry.backoff:.0f} s")
            self.api.event(entry.pod, "BackOff", f"podrunner: the program exited {code}; restarting")
            entry.backoff = min(entry.backoff * 2, BACKOFF_MAX)
            return
        if now < entry.next_start:
            return
        log_file = entry.spec.cwd.parent / "container.log"
        with open(log_file, "ab") as out:
            entry.process = subprocess.Popen(
                entry.spec.argv,
                cwd=entry.spec.cwd,
                env=entry.spec.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        entry.starts += 1
        say(self.log, f"{name(entry.pod)}: started pid {entry.process.pid}: {shlex.join(entry.spec.argv)}")
        if entry.starts == 1:
            self.api.event(entry.pod, "Started", f"podrunner: {Path(entry.spec.argv[0]).name} started", "Normal")

    def stop(self, uid: str) -> None:
        entry = self.running.pop(uid)
        stop_all([entry])
        say(self.log, f"{name(entry.pod)}: stopped (the pod is gone)")

    def shutdown(self) -> None:
        stop_all(list(self.running.values()))
        self.running.clear()


def stop_all(entries: Sequence[Running]) -> None:
    """SIGTERM every program, wait up to its grace period, then SIGKILL; each is reaped."""
    alive = [e for e in entries if e.process is not None and e.process.poll() is None]
    for entry in alive:
        assert entry.process is not None
        with contextlib.suppress(ProcessLookupError):
            entry.process.terminate()
    for entry in alive:
        assert entry.process is not None
        try:
            entry.process.wait(timeout=entry.spec.grace)
        except subprocess.TimeoutExpired:
            entry.process.kill()
            entry.process.wait(timeout=30)


def name(pod: Obj) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True, help="the control plane's admin kubeconfig")
    parser.add_argument("--dir", type=Path, required=True, help="where pods' files, logs and the runner's log go")
    parser.add_argument(
        "--mindcluster", action="store_true", help="run the NPU plugin, ClusterD, the device plugin's double"
    )
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    runner = Runner(Api(args.kubeconfig), args.dir.resolve(), args.mindcluster)

    def on_term(signum: int, frame: Any) -> None:
        runner.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    say(runner.log, f"watching {runner.api.server}")
    try:
        while not runner.stopping:
            try:
                runner.step()
            except (urllib.error.URLError, OSError, ValueError) as exc:
                say(runner.log, f"API server: {exc}")
            time.sleep(POLL_SECONDS)
    finally:
        runner.shutdown()
        say(runner.log, "stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
