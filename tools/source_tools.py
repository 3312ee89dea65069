"""Recipes for the programs built from upstream source trees: the Ascend Operator at each MindCluster
release, Volcano's scheduler and controller manager at each Volcano version, and the Pulumi Python
language host.

These components have no Go module the proxy serves (``volcano.sh/volcano`` is refused there; the
Ascend Operator's module is ``ascend-operator`` with ``replace ascend-common => ../ascend-common``; the
language host's module replaces pkg/v3 and sdk/v3 with paths of the pulumi repository), so each is
built from a sources directory laid out as ``shared/upstream/src`` (beside the checkout) is (its README names each
tree's repository, tag and commit):

    mind-cluster/v<release>/component/{ascend-operator,ascend-common}
    volcano/v<version>/{cmd,pkg,go.mod,go.sum}
    pulumi-language-python/v<version>/sdk/python/cmd/pulumi-language-python/main.go

A user outside this workplace makes the same trees from public clones: ``git clone
https://gitcode.com/Ascend/mind-cluster`` (or its GitHub mirror Ascend/mind-cluster) at each tag,
``volcano-sh/volcano`` at ``v1.9.0`` / ``v1.12.0``, and ``pulumi/pulumi`` at ``v3.259.0``
(docs/local-cluster.md). The sources directory is ``$ASCEND_RESUMABLE_UPSTREAM_SRC``, else
``$ASCEND_RESUMABLE_UPSTREAM/src``, else ``shared/upstream/src`` beside the checkout.

Every build happens in a copy (the sources directory may be read-only) and lands in the cache of
``go_tools.py`` under a key of what decides it: the content of every source file copied, the recipe
and the Go version. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: Volcano's version stamp (volcano-sh/volcano v1.9.0 Makefile LD_FLAGS: pkg/version.Version)
VOLCANO_VERSION_VAR = "volcano.sh/volcano/pkg/version.Version"
#: the Ascend Operator's version stamp (MC:@v7.3.0 component/ascend-operator/build/build.sh:35-36)
OPERATOR_VERSION_VAR = "main.BuildVersion"
#: the Pulumi SDK's version stamp, which the language host reports of itself
PULUMI_VERSION_VAR = "github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"


class SourcesMissing(Exception):
    """A tree a recipe needs is not in the sources directory: the message names it."""


def sources_root() -> Path:
    """The upstream sources directory (module docstring)."""
    explicit = os.environ.get("ASCEND_RESUMABLE_UPSTREAM_SRC")
    if explicit:
        return Path(explicit)
    upstream = os.environ.get("ASCEND_RESUMABLE_UPSTREAM")
    if upstream:
        return Path(upstream) / "src"
    return REPO.parent / "shared" / "upstream" / "src"


@dataclass(frozen=True)
class Program:
    """One `go build` of a source tool: the package (relative to the build directory) and the file."""

    package: str
    output: str
    cgo: bool = False
    #: `-buildmode` (``plugin`` for a Go plugin); empty for the default
    buildmode: str = ""
    #: `-X` stamps of this program alone, after the tool's own
    stamps: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Edit:
    """A change a release build script makes to its copy of the sources before building, made here to
    ours: ``pattern`` (a regular expression, each match within one line as sed's) replaced by
    ``replacement`` in every file matching ``files`` (a glob in the work directory), unless a file
    already holds ``unless``. An edit that changes nothing anywhere fails the build: the sources moved
    and the recipe must follow (the build script is the authority, cited in ``source``)."""

    files: str
    pattern: str
    replacement: str
    source: str
    unless: str = ""
    #: paths (relative to the work directory) left alone, as the script's ``find ! -path`` does
    skip: Tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceTool:
    """A program set built from source trees (copied into one work directory) by `go build`."""

    name: str
    family: str
    version: str
    #: (tree relative to the sources directory, where it goes in the work directory)
    trees: Tuple[Tuple[str, str], ...]
    #: the work directory's subdirectory `go build` runs in (the main module)
    build_in: str
    programs: Tuple[Program, ...]
    #: `-X` stamps: (variable, value)
    stamps: Tuple[Tuple[str, str], ...] = ()
    #: a wrapper module of tools/go copied to the work directory's root first (its go.mod and go.sum)
    wrapper: str = ""
    #: files copied from a module into bin/ after the build: (module, path in module, name in bin)
    module_files: Tuple[Tuple[str, str, str], ...] = field(default=())
    #: changes to the copied sources, in order, before the build
    edits: Tuple[Edit, ...] = ()
    #: module versions required in the main module's go.mod before the build (`go mod edit
    #: -require`): where the release's dependency set does not build with the machine's Go
    requires: Tuple[Tuple[str, str], ...] = ()

    def tree_paths(self, root: Optional[Path] = None) -> List[Path]:
        base = root or sources_root()
        return [base / tree for tree, _ in self.trees]

    def check_sources(self, root: Optional[Path] = None) -> None:
        """SourcesMissing naming the first tree that is not there."""
        base = root or sources_root()
        for path in self.tree_paths(base):
            if not path.exists():
                raise SourcesMissing(
                    f"{self.name} is built from {path}, which is missing: the upstream sources directory "
                    f"{base} (ASCEND_RESUMABLE_UPSTREAM_SRC, default shared/upstream/src beside the checkout) "
                    "must hold the trees its README lists; docs/local-cluster.md says how to make them from "
                    "public clones"
                )

    def ldflags(self, program: Optional[Program] = None) -> str:
        stamps = [*self.stamps, *(program.stamps if program else ())]
        return " ".join(["-s", "-w", *(f"-X {var}={value}" for var, value in stamps)])

    def build_args(self, program: Program, output: Path) -> List[str]:
        """The `go build` arguments of ``program`` writing ``output``."""
        mode = [f"-buildmode={program.buildmode}"] if program.buildmode else []
        return ["build", *mode, "-ldflags", self.ldflags(program), "-o", str(output), program.package]

    def recipe(self) -> Dict[str, object]:
        """What decides the build (part of its cache key). The fields added for the NPU plugin
        (a program's build mode and stamps, edits, requires) appear only when set, so the keys of
        the recipes that have none stay what they were."""
        recipe: Dict[str, object] = {
            "family": self.family,
            "version": self.version,
            "trees": self.trees,
            "build_in": self.build_in,
            "programs": [program_recipe(p) for p in self.programs],
            "ldflags": self.ldflags(),
            "wrapper": self.wrapper,
            "module_files": self.module_files,
        }
        if self.edits:
            recipe["edits"] = [(e.files, e.pattern, e.replacement, e.unless, e.skip) for e in self.edits]
        if self.requires:
            recipe["requires"] = self.requires
        return recipe

    def digest_sources(self, digest: hashlib._Hash, root: Optional[Path] = None) -> None:
        """Feed every source file's relative path and content (sorted) into ``digest``."""
        for path, (_, dest) in zip(self.tree_paths(root), self.trees):
            for name, data in _files(path):
                digest.update(f"{dest}/{name}".encode() + b"\0" + data + b"\0")
        if self.wrapper:
            for item in sorted((HERE / "go" / self.wrapper).iterdir()):
                if item.is_file():
                    digest.update(f"wrapper/{item.name}".encode() + b"\0" + item.read_bytes() + b"\0")

    def prepare(self, work: Path, root: Optional[Path] = None) -> Path:
        """Copy the wrapper and the trees into ``work``; the directory `go build` runs in."""
        self.check_sources(root)
        work.mkdir(parents=True, exist_ok=True)
        if self.wrapper:
            for item in (HERE / "go" / self.wrapper).iterdir():
                if item.is_file():
                    shutil.copyfile(item, work / item.name)
        for path, (_, dest) in zip(self.tree_paths(root), self.trees):
            target = work / dest
            if path.is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        for item in work.rglob("*"):  # the sources directory may be read-only: the copy must not be
            if not item.is_symlink():
                item.chmod(item.stat().st_mode | 0o200)
        for edit in self.edits:
            apply_edit(work, edit)
        return work / self.build_in


def apply_edit(work: Path, edit: Edit) -> None:
    """Make ``edit`` in the copy ``work``; SourcesMissing when it changes no file."""
    changed = 0
    for path in sorted(work.glob(edit.files)):
        relative = path.relative_to(work).as_posix()
        if not path.is_file() or any(relative.startswith(prefix) for prefix in edit.skip):
            continue
        text = path.read_text(encoding="utf-8")
        if edit.unless and edit.unless in text:
            changed += 1
            continue
        new = re.sub(edit.pattern, edit.replacement, text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    if not changed:
        raise SourcesMissing(
            f"the edit {edit.pattern!r} -> {edit.replacement!r} of {edit.files} ({edit.source}) changed nothing "
            f"in {work}: the sources are not the ones the recipe was written for (tools/source_tools.py)"
        )


def program_recipe(program: Program) -> Tuple[object, ...]:
    plain = (program.package, program.output, program.cgo)
    return (*plain, program.buildmode, program.stamps) if program.buildmode or program.stamps else plain


def _files(path: Path) -> Iterable[Tuple[str, bytes]]:
    if path.is_file():
        yield path.name, path.read_bytes()
        return
    for item in sorted(path.rglob("*")):
        if item.is_file() and not item.is_symlink():
            yield item.relative_to(path).as_posix(), item.read_bytes()


def ascend_operator(release: str) -> SourceTool:
    """The Ascend Operator at ``release`` (``7.3.0``, ``6.0.0.SPC1``): MC:@v<release>
    component/ascend-operator, whose go.mod replaces ascend-common with ../ascend-common."""
    base = f"mind-cluster/v{release}/component"
    return SourceTool(
        name=f"ascend-operator-{release}",
        family="ascend-operator",
        version=release,
        trees=((f"{base}/ascend-operator", "ascend-operator"), (f"{base}/ascend-common", "ascend-common")),
        build_in="ascend-operator",
        programs=(Program(".", "ascend-operator"),),
        stamps=((OPERATOR_VERSION_VAR, f"v{release}"),),
    )


#: the golang.org/x/tools ClusterD 7.3.0's dependencies resolve (v0.21.1-0.20240508182429-e35e4ccd0d2d,
#: for go/packages, which k8s.io/code-generator/pkg/util imports, which github.com/kubeflow/common
#: pkg/util imports) does not compile with this machine's Go 1.26 (internal/tokeninternal: "invalid
#: array length -delta * delta"; v0.24.0 and v0.26.0 neither); v0.40.0 does (it raises the go.mod's
#: go line to 1.24.0): a dependency version raised, no source changed
GO_126_X_TOOLS = ("golang.org/x/tools", "v0.40.0")


def clusterd(release: str) -> SourceTool:
    """ClusterD at ``release``: MC:@v<release> component/clusterd, whose go.mod replaces ascend-common
    and ascend-faultdiag-online with their sibling directories (go.mod:68-70 at v7.3.0); stamped as
    build/build.sh:47-49 does (without -buildmode=pie and -linkmode=external, CGO_ENABLED=0 as there)."""
    base = f"mind-cluster/v{release}/component"
    return SourceTool(
        name=f"clusterd-{release}",
        family="clusterd",
        version=release,
        trees=tuple((f"{base}/{part}", part) for part in ("clusterd", "ascend-common", "ascend-faultdiag-online")),
        build_in="clusterd",
        programs=(Program(".", "clusterd"),),
        stamps=((OPERATOR_VERSION_VAR, f"v{release}"), ("main.BuildName", "clusterd")),
        requires=(GO_126_X_TOOLS,),
    )


def volcano(version: str) -> SourceTool:
    """Volcano's vc-scheduler and vc-controller-manager at ``version`` (volcano-sh/volcano v<version>)."""
    base = f"volcano/v{version}"
    return SourceTool(
        name=f"volcano-{version}",
        family="volcano",
        version=version,
        trees=tuple((f"{base}/{part}", part) for part in ("cmd", "pkg", "go.mod", "go.sum")),
        build_in=".",
        programs=(
            Program("./cmd/scheduler", "vc-scheduler"),
            Program("./cmd/controller-manager", "vc-controller-manager"),
        ),
        stamps=((VOLCANO_VERSION_VAR, f"v{version}"),),
    )


#: where build.sh puts the plugin in Volcano's tree (MC:@v7.3.0 component/ascend-for-volcano/build/build.sh:31)
NPU_PLUGIN_DIR = "pkg/scheduler/plugins/ascend-volcano-plugin"
#: the plugin's name variable (build.sh:101, ``-X ...ascend-volcano-plugin.PluginName``; type.go:30). The
#: plugin is package main, which the compiler names ``main``: both spellings are stamped (``-X`` of a
#: symbol that does not exist is ignored)
NPU_PLUGIN_NAME_VARS = ("volcano.sh/volcano/" + NPU_PLUGIN_DIR + ".PluginName", "main.PluginName")
#: which Volcano each plugin release builds against in this project (build.sh's BASE_VER: v1.7.0 or
#: v1.9.0 at 7.3.0)
NPU_PLUGIN_VOLCANO: Dict[str, str] = {"7.3.0": "1.9.0"}


def npu_plugin_edits(release: str) -> Tuple[Edit, ...]:
    """What MC:@v<release> component/ascend-for-volcano/build/build.sh does to Volcano's tree and the
    plugin before building for Volcano v1.9.0 (line numbers at v7.3.0)."""
    script = f"MC:@v{release} component/ascend-for-volcano/build/build.sh"
    return (
        # replace_code (66-73): the job controller ignores the plugin's "Ignore" action instead of
        # restarting the whole Volcano job
        Edit(
            "pkg/controllers/job/state/running.go",
            r"switch action \{",
            'switch action { case "Ignore" : return nil',
            f"{script}:67-73 replace_code",
            unless="Ignore",
        ),
        # replace_node_predicate (118-127): klog v2 in the plugin, Volcano 1.9's predicate signature
        Edit(
            f"{NPU_PLUGIN_DIR}/**/*",
            r'k8s\.io/klog"',
            'k8s.io/klog/v2"',
            f"{script}:123 replace_node_predicate",
            skip=(f"{NPU_PLUGIN_DIR}/doc/", f"{NPU_PLUGIN_DIR}/.git"),
        ),
        Edit(
            f"{NPU_PLUGIN_DIR}/npu.go",
            r"api\.NodeInfo\) error \{",
            "api.NodeInfo) ([]*api.Status, error) {",
            f"{script}:125 replace_node_predicate",
        ),
        Edit(
            f"{NPU_PLUGIN_DIR}/npu.go",
            r"return predicateErr",
            "return []*api.Status{}, predicateErr",
            f"{script}:126 replace_node_predicate",
        ),
        # replace_node_score (129-150): v1.9.0's allocate scores nodes even when one is left
        Edit(
            "pkg/scheduler/actions/allocate/allocate.go",
            r"case len\(nodes\) == 1:.*\n.*\n.*",
            "default:",
            f"{script}:140-146 replace_node_score",
        ),
    )


def volcano_npu(release: str, plugin_name: str) -> SourceTool:
    """Volcano with Huawei's NPU plugin as MindCluster <release> builds it (MC:@v<release>
    component/ascend-for-volcano/build/build.sh): the plugin copied into Volcano's tree at
    :data:`NPU_PLUGIN_DIR`, the script's edits made, then in that one module vc-controller-manager
    (no cgo), vc-scheduler with cgo (a Go plugin loads only into a cgo program) and the plugin with
    ``-buildmode=plugin`` and its name stamped. A Go plugin loads only into a program built from the
    same sources with the same dependencies and flags, which is why the scheduler is built here again
    rather than taken from :func:`volcano`. Unlike the script: no ``-linkmode=external``, no musl, no
    PIE (the machine's gcc links the cgo parts), and ``-mod=mod`` instead of ``go mod tidy``.

    ``plugin_name`` is the name the scheduler config gives the plugin
    (resumable.plan.scheduler.volcano_plugin_name); the ``.so`` is written as ``<plugin_name>.so``,
    the name Volcano registers it by (volcano v1.9.0 pkg/scheduler/framework/plugins.go:63-80)."""
    version = NPU_PLUGIN_VOLCANO[release]
    base = f"volcano/v{version}"
    return SourceTool(
        name=f"volcano-{version}+{plugin_name}",
        family="volcano-npu",
        version=release,
        trees=(
            *((f"{base}/{part}", part) for part in ("cmd", "pkg", "go.mod", "go.sum")),
            (f"mind-cluster/v{release}/component/ascend-for-volcano", NPU_PLUGIN_DIR),
        ),
        build_in=".",
        programs=(
            Program("./cmd/controller-manager", "vc-controller-manager"),
            Program("./cmd/scheduler", "vc-scheduler", cgo=True),
            Program(
                f"./{NPU_PLUGIN_DIR}",
                f"{plugin_name}.so",
                cgo=True,
                buildmode="plugin",
                stamps=tuple((var, plugin_name) for var in NPU_PLUGIN_NAME_VARS),
            ),
        ),
        stamps=((VOLCANO_VERSION_VAR, f"v{version}"),),
        edits=npu_plugin_edits(release),
    )


def language_host(version: str) -> SourceTool:
    """The Pulumi Python language host (pulumi/pulumi v<version>
    sdk/python/cmd/pulumi-language-python/main.go), built inside a copy of the Pulumi CLI's wrapper
    module (tools/go/pulumi: pkg/v3 and sdk/v3 at the CLI's release), with the exec shim the host
    runs programs through (sdk/v3 python/cmd/pulumi-language-python-exec) beside it."""
    return SourceTool(
        name=f"pulumi-language-python-{version}",
        family="pulumi-language-python",
        version=version,
        trees=(
            (
                f"pulumi-language-python/v{version}/sdk/python/cmd/pulumi-language-python/main.go",
                "cmd/pulumi-language-python/main.go",
            ),
        ),
        build_in=".",
        programs=(Program("./cmd/pulumi-language-python", "pulumi-language-python"),),
        stamps=((PULUMI_VERSION_VAR, version),),
        wrapper="pulumi",
        module_files=(
            (
                "github.com/pulumi/pulumi/sdk/v3",
                "python/cmd/pulumi-language-python-exec",
                "pulumi-language-python-exec",
            ),
        ),
    )


#: MindCluster releases whose Ascend Operator the tests and the sandbox run: every release a shipped
#: example or stack deploys, and both ends of the upgrade test (tests/gotools/test_go_tools.py checks the list
#: against the plans).
OPERATOR_RELEASES: Tuple[str, ...] = ("6.0.0", "6.0.0.SPC1", "7.3.0", "26.0.0", "26.1.0")
#: MindCluster releases whose ClusterD runs here (the NPU plugin's source of device information with
#: ``useClusterInfoManager``: the releases in NPU_PLUGIN_VOLCANO)
CLUSTERD_RELEASES: Tuple[str, ...] = ("7.3.0",)
#: Volcano versions those releases deploy (resumable.releases.STACK_RELEASES defaults)
VOLCANO_VERSIONS: Tuple[str, ...] = ("1.9.0", "1.12.0")
LANGUAGE_HOST_VERSION = "3.259.0"
#: the architectures the NPU plugin is named for up to 7.3.0 (build.sh parse_arch: `arch`); the
#: shipped examples name aarch64, this machine may be x86_64
PLUGIN_ARCHES: Tuple[str, ...] = ("aarch64", "x86_64")


def npu_plugin_name(release: str, arch: str) -> str:
    """The plugin's name as MC:@v<release> build.sh makes it (REL_NPU_PLUGIN, line 54:
    ``volcano-npu_v<release>_linux-<arch>``; the same rule as resumable.plan.scheduler.volcano_plugin_name
    for the releases in :data:`NPU_PLUGIN_VOLCANO`)."""
    return f"volcano-npu_v{release}_linux-{arch}"


SOURCE_TOOLS: Dict[str, SourceTool] = {
    tool.name: tool
    for tool in (
        *(ascend_operator(release) for release in OPERATOR_RELEASES),
        *(clusterd(release) for release in CLUSTERD_RELEASES),
        *(volcano(version) for version in VOLCANO_VERSIONS),
        language_host(LANGUAGE_HOST_VERSION),
        *(
            volcano_npu(release, npu_plugin_name(release, arch))
            for release in NPU_PLUGIN_VOLCANO
            for arch in PLUGIN_ARCHES
        ),
    )
}


def describe(tool: SourceTool) -> str:
    return json.dumps(tool.recipe(), sort_keys=True)
