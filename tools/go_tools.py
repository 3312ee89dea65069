#!/usr/bin/env python3
"""Build the real Pulumi engine, its Kubernetes provider and language host, a Kubernetes control
plane, the Ascend Operator and Volcano from Go modules and upstream sources.

The programs the cluster tests and ``make sandbox`` run (``pulumi``, ``pulumi-resource-kubernetes``,
``kube-apiserver``, ``kube-controller-manager``, ``kube-scheduler``, ``kubectl``, ``etcd``, ``kwok``)
are built from published Go modules through the Go module proxy, never from a clone and never
downloaded as binaries. Each comes from a wrapper module under ``tools/go/<tool>/`` whose committed
``go.mod`` and ``go.sum`` pin every module (``GOFLAGS=-mod=readonly``: a build never resolves
anything new). The programs no module of the proxy holds (the Ascend Operator per MindCluster
release, Volcano's vc-scheduler and vc-controller-manager, the Pulumi Python language host) are
built in a copy of upstream source trees (``tools/source_tools.py``: recipes, the sources directory);
without the sources they are left out of ``build`` with a line naming the folder.

Builds land in a cache outside the checkout, one directory per tool keyed by what decides the build
(the wrapper's files, the recipe below, the Go version and platform), so a clean clone reuses what
an earlier one built and a version change builds anew. Go's own module and build caches are left in
place (``go env GOMODCACHE GOCACHE``): a rebuild after a small change takes seconds to minutes.

    python3 tools/go_tools.py build [TOOL ...]   build what is missing (all tools by default)
    python3 tools/go_tools.py path               the bin directories (PATH form); exit 1 if missing
    python3 tools/go_tools.py env                the same as a shell ``export PATH=...`` line
    python3 tools/go_tools.py versions           the versions each tool is built at

Cache: ``$ASCEND_RESUMABLE_TOOLS_CACHE``, else ``$XDG_CACHE_HOME/ascend-resumable/go-tools``, else
``~/.cache/ascend-resumable/go-tools``. Standard library only (it runs before any virtualenv).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_tools import SOURCE_TOOLS, SourcesMissing, SourceTool

HERE = Path(__file__).resolve().parent
WRAPPERS = HERE / "go"
BUILT_MARK = "BUILT.json"
#: the Go the builds use: the machine's own (a go.mod asking for more fails instead of fetching one)
GO_ENV = {"CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -trimpath", "GOTOOLCHAIN": "local"}
#: the builds from upstream source trees: their go.sum files are not always complete for the packages
#: built (the Ascend Operator's lists what its own release build added with `go build -mod=mod`), so
#: missing checksums are fetched from the proxy and checked against the checksum database as usual
SOURCE_GO_ENV = {"CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -trimpath", "GOTOOLCHAIN": "local"}

#: pulumi-kubernetes' provider module is published only as pseudo-versions (its one tag is
#: provider/v2.0.0); the release each pinned pseudo-version is the tagged commit of. Checked against
#: pulumi/pulumi-kubernetes: `git rev-list -n1 v4.25.0` is f47bc2d6f1996444d11c12b4ef083b82585f7c07.
PROVIDER_RELEASES = {"v4.0.0-20260115033456-f47bc2d6f199": "4.25.0"}


class ToolError(Exception):
    """A build that cannot go on: the message says what and what to do."""


@dataclass(frozen=True)
class Tool:
    """One wrapper module and how its programs are built."""

    name: str
    #: (package, output file name) pairs built by one `go build`
    programs: Tuple[Tuple[str, str], ...]
    tags: Tuple[str, ...] = ()
    #: the module whose required version is this tool's version
    version_module: str = ""
    #: files copied from a module into share/ after the build: (module, path in module, name in share)
    shared_files: Tuple[Tuple[str, str, str], ...] = field(default=())

    @property
    def source(self) -> Path:
        return WRAPPERS / self.name


KWOK_STAGES = tuple(
    ("sigs.k8s.io/kwok", f"kustomize/stage/{path}", Path(path).name)
    for path in (
        "node/fast/node-initialize.yaml",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "pod/fast/pod-ready.yaml",
        "pod/fast/pod-complete.yaml",
        "pod/fast/pod-delete.yaml",
    )
)

TOOLS: Dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "kubernetes",
            tuple(
                (f"k8s.io/kubernetes/cmd/{cmd}", cmd)
                for cmd in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
            ),
            version_module="k8s.io/kubernetes",
        ),
        Tool("etcd", (("go.etcd.io/etcd/server/v3", "etcd"),), version_module="go.etcd.io/etcd/server/v3"),
        Tool(
            "kwok",
            (("sigs.k8s.io/kwok/cmd/kwok", "kwok"),),
            version_module="sigs.k8s.io/kwok",
            shared_files=KWOK_STAGES,
        ),
        Tool(
            "pulumi",
            (("github.com/pulumi/pulumi/pkg/v3/cmd/pulumi", "pulumi"),),
            # the release build's tags (pulumi .goreleaser.yml)
            tags=("osusergo", "grpcnotrace"),
            version_module="github.com/pulumi/pulumi/pkg/v3",
        ),
        Tool(
            "pulumi-kubernetes",
            ((".", "pulumi-resource-kubernetes"),),
            version_module="github.com/pulumi/pulumi-kubernetes/provider/v4",
        ),
    )
}


def say(message: str) -> None:
    print(f"[go-tools] {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    explicit = os.environ.get("ASCEND_RESUMABLE_TOOLS_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ascend-resumable" / "go-tools"


def go(args: Sequence[str], cwd: Path, capture: bool = True, env: Optional[Mapping[str, str]] = None) -> str:
    """Run the go command with the build environment (``env``, default :data:`GO_ENV`); its output,
    or ToolError with its stderr."""
    if shutil.which("go") is None:
        raise ToolError("the go command is not on PATH: install Go 1.26 (the machine's own) and run again")
    full_env = dict(os.environ, **(GO_ENV if env is None else env))
    full_env["GOFLAGS"] = " ".join([*build_parallelism(), full_env.get("GOFLAGS", "")]).strip()
    done = subprocess.run(
        ["go", *args],
        cwd=cwd,
        env=full_env,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        detail = (done.stderr or "").strip()[-4000:] if capture else "(output above)"
        raise ToolError(f"go {' '.join(args)} failed in {cwd} (exit {done.returncode}): {detail}")
    return done.stdout or ""


def build_parallelism() -> List[str]:
    """The caller's ``-p=N`` from its GOFLAGS (how many packages go builds at once: ``-p=1`` on a
    shared machine), kept when the build environment sets GOFLAGS of its own; it changes no output."""
    return [flag for flag in os.environ.get("GOFLAGS", "").split() if flag.startswith("-p=")]


def go_version() -> str:
    return go(["env", "GOVERSION", "GOOS", "GOARCH"], HERE).replace("\n", " ").strip()


def required_versions(tool: Tool) -> Dict[str, str]:
    """Every module the wrapper's go.mod requires, with its version."""
    mod = json.loads(go(["mod", "edit", "-json"], tool.source))
    return {item["Path"]: item["Version"] for item in mod.get("Require") or []}


def version_of(tool: Tool) -> str:
    """The release the tool is built at (`v1.34.4`, `v3.274.0`, `4.25.0`): read from the go.mod."""
    pinned = required_versions(tool).get(tool.version_module)
    if pinned is None:
        raise ToolError(f"tools/go/{tool.name}/go.mod does not require {tool.version_module}")
    if tool.name == "pulumi-kubernetes":
        release = PROVIDER_RELEASES.get(pinned)
        if release is None:
            raise ToolError(
                f"tools/go/{tool.name}/go.mod pins {tool.version_module} {pinned}, which is not in "
                "PROVIDER_RELEASES (tools/go_tools.py): add the release tag that commit is"
            )
        return release
    return pinned


def ldflags(tool: Tool, version: str) -> List[str]:
    """The version stamps each program reads of itself (the upstream release builds set the same)."""
    flags = ["-s", "-w"]
    if tool.name == "kubernetes":
        # Unstamped, /version reports v0.0.0-master and pulumi-kubernetes reads the cluster as 0.0
        # and refuses it (provider/pkg/cluster/version.go); the set hack/lib/version.sh stamps.
        major, minor = version.lstrip("v").split(".")[:2]
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [
                f"-X {pkg}.gitVersion={version}",
                f"-X {pkg}.gitMajor={major}",
                f"-X {pkg}.gitMinor={minor}",
                f"-X {pkg}.gitTreeState=clean",
                f"-X {pkg}.buildDate=1970-01-01T00:00:00Z",
            ]
    elif tool.name == "pulumi":
        flags.append(f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={version}")
    elif tool.name == "pulumi-kubernetes":
        flags.append(f"-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version={version}")
    elif tool.name == "etcd":
        pass  # etcd's version is a constant of its api module (go.etcd.io/etcd/api/v3/version)
    return flags


def wrapper_files(tool: Tool) -> List[Path]:
    return sorted(p for p in tool.source.iterdir() if p.is_file() and not p.name.endswith("-embed.json"))


def build_key(tool: Tool, goversion: str) -> str:
    """What decides the build: the wrapper's files, the recipe and the Go version."""
    digest = hashlib.sha256()
    recipe = {
        "programs": tool.programs,
        "tags": tool.tags,
        "shared": tool.shared_files,
        "ldflags": ldflags(tool, version_of(tool)),
        "env": GO_ENV,
        "go": goversion,
    }
    digest.update(json.dumps(recipe, sort_keys=True).encode())
    for path in wrapper_files(tool):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def tool_dir(tool: Tool, goversion: str) -> Path:
    return cache_root() / tool.name / build_key(tool, goversion)


def source_build_key(tool: SourceTool, goversion: str) -> str:
    """What decides a source build: every source file copied, the recipe, the environment and Go."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"recipe": tool.recipe(), "env": SOURCE_GO_ENV, "go": goversion}, sort_keys=True).encode())
    tool.digest_sources(digest)
    return digest.hexdigest()[:16]


def source_tool_dir(tool: SourceTool, goversion: str) -> Path:
    """The cache directory of ``tool``; ToolError naming the sources when they are missing."""
    try:
        tool.check_sources()
    except SourcesMissing as exc:
        raise ToolError(str(exc)) from None
    return cache_root() / tool.name / source_build_key(tool, goversion)


def is_built(directory: Path) -> bool:
    return (directory / BUILT_MARK).is_file()


def module_dir(module: str, cwd: Path, env: Optional[Mapping[str, str]] = None) -> Path:
    """The module's directory in Go's module cache, downloaded first: on a cold cache ``go list -m``
    prints an empty Dir for a module no build has fetched yet (the provider's embeds are read before
    its build)."""
    info = json.loads(go(["mod", "download", "-json", module], cwd, env=env))
    directory = info.get("Dir") or ""
    if not directory or not Path(directory).is_dir():
        raise ToolError(f"go mod download {module} in {cwd} gave no module directory: {info.get('Error', info)}")
    return Path(directory)


def write_provider_embeds(work: Path, version: str) -> None:
    """schema-embed.json and terraform-mapping-embed.json, as the module's generate.go writes them."""
    cmd = module_dir("github.com/pulumi/pulumi-kubernetes/provider/v4", work) / "cmd" / "pulumi-resource-kubernetes"
    schema = json.loads((cmd / "schema.json").read_text(encoding="utf-8"))
    schema["version"] = version
    (work / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")), encoding="utf-8")
    mapping = json.loads((cmd / "terraform-mapping.json").read_text(encoding="utf-8"))
    (work / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")), encoding="utf-8")


@contextmanager
def cache_lock() -> Iterator[None]:
    """One build at a time per cache (a make run and a pytest session may both ask)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(tool: Tool, goversion: str) -> Path:
    """Build ``tool`` into its keyed cache directory unless it is there; the directory."""
    version = version_of(tool)

    def make(staging: Path) -> None:
        work = staging / "src"
        shutil.copytree(tool.source, work)
        if tool.name == "pulumi-kubernetes":
            write_provider_embeds(work, version)
        bin_dir = staging / "bin"
        for package, output in tool.programs:
            args = ["build", "-ldflags", " ".join(ldflags(tool, version)), "-o", str(bin_dir / output)]
            if tool.tags:
                args += ["-tags", ",".join(tool.tags)]
            go([*args, package], work, capture=False)
        if tool.shared_files:
            share = staging / "share"
            share.mkdir()
            for module, inner, name in tool.shared_files:
                shutil.copyfile(module_dir(module, work) / inner, share / name)
        shutil.rmtree(work)

    return cached_build(tool.name, tool_dir(tool, goversion), version, goversion, make)


def build_source(tool: SourceTool, goversion: str) -> Path:
    """Build a program set from upstream source trees (tools/source_tools.py) in a copy, into its
    keyed cache directory unless it is there; the directory."""
    target = source_tool_dir(tool, goversion)
    if is_built(target):
        return target
    try:
        tool.check_sources()
    except SourcesMissing as exc:
        raise ToolError(str(exc)) from None

    def make(staging: Path) -> None:
        work = staging / "src"
        build_dir = tool.prepare(work)
        for module, version in tool.requires:
            go(["mod", "edit", f"-require={module}@{version}"], build_dir, env=SOURCE_GO_ENV)
        bin_dir = staging / "bin"
        for program in tool.programs:
            env = dict(SOURCE_GO_ENV, CGO_ENABLED="1" if program.cgo else "0")
            go(tool.build_args(program, bin_dir / program.output), build_dir, capture=False, env=env)
        for module, inner, name in tool.module_files:
            shutil.copyfile(module_dir(module, build_dir, env=SOURCE_GO_ENV) / inner, bin_dir / name)
            (bin_dir / name).chmod(0o755)
        shutil.rmtree(work, ignore_errors=True)

    return cached_build(tool.name, target, tool.version, goversion, make)


def cached_build(name: str, target: Path, version: str, goversion: str, make: Callable[[Path], None]) -> Path:
    """Run ``make(staging)`` (it fills ``staging/bin``) unless ``target`` holds a finished build, then
    move the staging directory to ``target`` with its BUILT mark: a build that fails halfway leaves
    nothing the next run takes for finished."""
    if is_built(target):
        return target
    say(f"building {name} {version} into {target} (minutes on a cold Go cache)")
    started = time.monotonic()
    cpu_before = children_cpu()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        (staging / "bin").mkdir()
        make(staging)
        seconds = round(time.monotonic() - started, 1)
        cpu = round(children_cpu() - cpu_before, 1)
        record = {"tool": name, "version": version, "go": goversion, "seconds": seconds, "cpu_seconds": cpu}
        (staging / BUILT_MARK).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if target.exists():  # an unfinished directory of ours (no BUILT mark): replace it
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    say(f"built {name} {version} in {seconds} s ({cpu} s of CPU)")
    prune(target)
    return target


def prune(keep: Path) -> None:
    """Remove this tool's other builds: directories this script wrote (they carry its BUILT mark)."""
    for other in sorted(keep.parent.iterdir()):
        if other != keep and other.is_dir() and is_built(other):
            shutil.rmtree(other, ignore_errors=True)


def children_cpu() -> float:
    """CPU seconds of the go commands this process ran (a build's cost whatever else the machine does)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return float(usage.ru_utime + usage.ru_stime)


AnyTool = Union[Tool, SourceTool]


def all_tools() -> Dict[str, AnyTool]:
    """Every tool by name: the wrapper modules, then the source builds."""
    return {**TOOLS, **SOURCE_TOOLS}


def selected(names: Sequence[str]) -> List[AnyTool]:
    known = all_tools()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ToolError(f"unknown tool {', '.join(unknown)}: choose from {', '.join(known)}")
    return [known[name] for name in names] if names else list(known.values())


def built_dir(tool: AnyTool, goversion: str) -> Path:
    return source_tool_dir(tool, goversion) if isinstance(tool, SourceTool) else tool_dir(tool, goversion)


def build_any(tool: AnyTool, goversion: str) -> Path:
    return build_source(tool, goversion) if isinstance(tool, SourceTool) else build(tool, goversion)


def bin_dirs(tools: Sequence[AnyTool], goversion: Optional[str] = None) -> List[Path]:
    """The built bin directories of ``tools``; ToolError naming the first that is not built (or whose
    sources are missing)."""
    goversion = goversion or go_version()
    dirs = []
    for tool in tools:
        directory = built_dir(tool, goversion)
        if not is_built(directory):
            raise ToolError(f"{tool.name} is not built for this checkout: run `make tools` (or {__file__} build)")
        dirs.append(directory / "bin")
    return dirs


def source_bin_dir(name: str) -> Path:
    """The bin directory of the source build ``name`` (``ascend-operator-7.3.0``, ``volcano-1.9.0``)."""
    tool = SOURCE_TOOLS.get(name)
    if tool is None:
        raise ToolError(f"no source build {name}: the recipes are {', '.join(SOURCE_TOOLS)} (tools/source_tools.py)")
    return bin_dirs([tool])[0]


def share_dir(name: str) -> Path:
    """A built tool's share/ directory (KWOK's stage configs)."""
    return bin_dirs([TOOLS[name]])[0].parent / "share"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "path", "env", "versions"))
    parser.add_argument("tools", nargs="*", help=f"some of: {' '.join(all_tools())} (default: all)")
    args = parser.parse_args(argv)
    try:
        tools = selected(args.tools)
        if args.command == "versions":
            for tool in tools:
                version = tool.version if isinstance(tool, SourceTool) else version_of(tool)
                print(f"{tool.name}\t{version}")
            return 0
        goversion = go_version()
        if not args.tools:  # by default, the source builds whose sources are here
            tools = [t for t in tools if not isinstance(t, SourceTool) or sources_present(t)]
        if args.command == "build":
            with cache_lock():
                for tool in tools:
                    build_any(tool, goversion)
        path = os.pathsep.join(str(d) for d in bin_dirs(tools, goversion))
        if args.command == "env":
            print(f"export PATH={path}{os.pathsep}$PATH")
        else:
            print(path)
        return 0
    except ToolError as exc:
        print(f"go_tools: {exc}", file=sys.stderr)
        return 1


def sources_present(tool: SourceTool) -> bool:
    """Whether ``tool``'s trees are in the sources directory; says so when they are not."""
    try:
        tool.check_sources()
    except SourcesMissing as exc:
        say(f"not built: {exc}")
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
