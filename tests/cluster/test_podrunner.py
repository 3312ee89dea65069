"""tools/podrunner.py without a cluster: which images it runs, how it reads a container's command
line, and how it moves paths and listen addresses; and tools/source_tools.py: which builds the
shipped profiles need. The runner against a real API server is exercised by every cluster test that
deploys the scheduling stack (tests/manifests/test_render_apiserver.py, tests/cluster/test_pulumi_*)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import EXAMPLE_FILES, ROOT

from resumable.api import load_plan
from resumable.manifests import build_stack

from .fixtures import podrunner, source_tools


@pytest.mark.parametrize(
    "image,expected",
    [
        ("ascend-operator:v7.3.0", ("ascend-operator", "ascend-operator", "7.3.0")),
        ("ascend-operator:v6.0.0.SPC1", ("ascend-operator", "ascend-operator", "6.0.0.SPC1")),
        (
            "registry.example.com/mindx/ascend-operator:v26.1.0-openeuler24.03",
            ("ascend-operator", "ascend-operator", "26.1.0"),
        ),
        ("volcanosh/vc-scheduler:v1.9.0", ("volcano", "vc-scheduler", "1.9.0")),
        (
            "swr.example/ascend/vc-controller-manager:v1.12.0-v26.1.0-alpinelatest",
            ("volcano", "vc-controller-manager", "1.12.0"),
        ),
        ("localhost:5000/vc-scheduler:v1.9.0", ("volcano", "vc-scheduler", "1.9.0")),
        ("clusterd:v7.3.0", ("clusterd", "clusterd", "7.3.0")),
        ("clusterd:v26.1.0", None),  # a release whose ClusterD is not built here stays a KWOK pod
        ("ascend-k8sdeviceplugin:v7.3.0", ("device-plugin-double", "device-plugin", "7.3.0")),
        ("ascend-k8sdeviceplugin:v26.1.0", None),
        ("ascend-operator:latest", None),
        ("ascend-operator", None),
    ],
)
def test_the_images_it_runs(image: str, expected: Any) -> None:
    assert podrunner.component_of(image, mindcluster=True) == expected
    if expected is not None and expected[0] in podrunner.BUILT_RELEASES:
        assert podrunner.component_of(image) is None  # only with --mindcluster


def test_every_component_image_the_render_writes_is_one_it_runs() -> None:
    """The scheduling stack of every shipped example: its operator and Volcano Deployments are run,
    and with --mindcluster, for a release whose NPU plugin is built (7.3.0), ClusterD and the device
    plugin's double too (a renamed image or a new tag form would leave the cluster without them,
    silently)."""
    for path in EXAMPLE_FILES:
        plan = load_plan(str(path))
        images = {
            c["image"]
            for o in build_stack(plan.scheduler)
            if o["kind"] in ("Deployment", "DaemonSet")
            for c in o["spec"]["template"]["spec"]["containers"]
        }
        run = {podrunner.component_of(i, mindcluster=True) for i in images} - {None}
        expected = {"ascend-operator", "vc-scheduler", "vc-controller-manager"}
        if plan.scheduler.release in source_tools.CLUSTERD_RELEASES:
            expected |= {"clusterd", "device-plugin"}
        assert {c[1] for c in run if c} == expected, images


def test_the_shell_wrappers_of_the_images_are_taken_off() -> None:
    volcano = {
        "command": ["/bin/ash"],
        "args": ["-c", "umask 027; /vc-scheduler --scheduler-conf=/volcano.scheduler/x.conf -v=2 2>&1"],
    }
    assert podrunner.command_line(volcano) == ["/vc-scheduler", "--scheduler-conf=/volcano.scheduler/x.conf", "-v=2"]
    operator = {"command": ["/bin/bash", "-c", "--"], "args": ["ascend-operator --kubeApiQps=800 --logLevel=0"]}
    assert podrunner.command_line(operator) == ["ascend-operator", "--kubeApiQps=800", "--logLevel=0"]
    plain = {"command": ["/vc-controller-manager"], "args": ["--worker-threads=6"]}
    assert podrunner.command_line(plain) == ["/vc-controller-manager", "--worker-threads=6"]


@pytest.mark.parametrize(
    "script",
    ["ascend-operator && rm -rf /", "ascend-operator | tee x", "ascend-operator $(id)", "a; b"],
)
def test_what_only_a_shell_would_do_is_refused(script: str) -> None:
    with pytest.raises(podrunner.RunnerError, match="shell syntax"):
        podrunner.command_line({"command": ["/bin/sh", "-c", script]})


def test_paths_move_into_the_pods_directories_and_listen_addresses_onto_loopback(tmp_path: Path) -> None:
    mounts = podrunner.Mounts(
        table=[("/var/log/mindx-dl/volcano-scheduler", tmp_path / "log"), ("/volcano.scheduler", tmp_path / "conf")],
        root=tmp_path / "rootfs",
    )
    args = podrunner.rewrite(
        [
            "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
            "--log_dir=/var/log/mindx-dl/volcano-scheduler",
            "--plugins-dir=plugins",
            "--cache-dump-dir=/tmp",
            "--listen-address=:8080",
            "--healthz-address=0.0.0.0:11251",
            "-v=2",
            "--healthz-address=11252",
        ],
        mounts,
    )
    assert args[0] == f"--scheduler-conf={tmp_path}/conf/volcano-scheduler.conf"
    assert args[1] == f"--log_dir={tmp_path}/log"
    assert args[2] == "--plugins-dir=plugins"  # relative: the process runs in the pod's root
    assert args[3] == f"--cache-dump-dir={tmp_path}/rootfs/tmp"
    assert args[4].startswith("--listen-address=127.0.0.1:") and not args[4].endswith(":8080")
    assert args[5].startswith("--healthz-address=127.0.0.1:")
    assert args[6] == "-v=2"
    # a port alone (the Ascend Operator's health check from 26.0 listens on ":"+port): a free port
    assert (
        args[7].startswith("--healthz-address=")
        and args[7].split("=")[1].isdigit()
        and args[7] != "--healthz-address=11252"
    )


def test_a_listen_address_left_to_its_default_is_named_on_loopback() -> None:
    """Volcano 1.12's deployments enable the health check and the metrics without naming their
    addresses: the scheduler and the controller manager would both bind :11251, and the controller
    manager's metrics :8081 (a flag Volcano 1.9's controller manager does not have)."""
    extra = podrunner.default_listen("vc-scheduler", "1.12.0", ["--enable-healthz=true", "--listen-address=:8080"])
    assert [a.split("=")[0] for a in extra] == ["--healthz-address"]
    assert extra[0].startswith("--healthz-address=127.0.0.1:") and not extra[0].endswith(":11251")
    new = podrunner.default_listen("vc-controller-manager", "1.12.0", ["--enable-metrics=true"])
    assert [a.split("=")[0] for a in new] == ["--healthz-address", "--listen-address"]
    old = podrunner.default_listen("vc-controller-manager", "1.9.0", [])
    assert [a.split("=")[0] for a in old] == ["--healthz-address"]
    assert podrunner.default_listen("ascend-operator", "26.1.0", ["--enableGangScheduling=true"]) == []


def test_downward_api_values_come_from_the_pod() -> None:
    pod: Dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"nodeName": "master-0"},
        "status": {"podIP": "10.0.0.7"},
    }
    container = {
        "env": [
            {"name": "A", "value": "1"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ]
    }
    env = podrunner.container_env(pod, container)
    assert (env["A"], env["POD_NAME"], env["IP"]) == ("1", "p", "10.0.0.7")


def test_the_default_builds_cover_every_release_and_volcano_the_shipped_profiles_deploy() -> None:
    """`make tools` builds what `make test` and `make sandbox` run: every shipped example's release
    and Volcano, and both ends of the upgrade test (tests/cluster/test_pulumi_upgrade.py)."""
    releases = {"26.0.0", "26.1.0"}
    volcanos = {"1.12.0"}
    for path in EXAMPLE_FILES:
        plan = load_plan(str(path))
        releases.add(plan.scheduler.release)
        volcanos.add(plan.scheduler.volcano_version)
    assert releases <= set(source_tools.OPERATOR_RELEASES)
    assert volcanos <= set(source_tools.VOLCANO_VERSIONS)


def test_a_source_build_is_keyed_by_the_content_of_its_sources(tmp_path: Path) -> None:
    tree = tmp_path / "src" / "volcano" / "v1.9.0"
    for part in ("cmd", "pkg"):
        (tree / part).mkdir(parents=True)
        (tree / part / "main.go").write_text("package main\n")
    for name in ("go.mod", "go.sum"):
        (tree / name).write_text("module volcano.sh/volcano\n")
    tool = source_tools.volcano("1.9.0")

    def key() -> str:
        digest = hashlib.sha256()
        tool.digest_sources(digest, tmp_path / "src")
        return digest.hexdigest()

    first = key()
    assert key() == first
    (tree / "pkg" / "main.go").write_text("package main // changed\n")
    assert key() != first


def test_missing_sources_are_named(tmp_path: Path) -> None:
    with pytest.raises(source_tools.SourcesMissing, match=str(tmp_path / "mind-cluster" / "v9.9.9")):
        source_tools.ascend_operator("9.9.9").check_sources(tmp_path)


def test_the_sources_directory_is_a_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ASCEND_RESUMABLE_UPSTREAM_SRC", raising=False)
    monkeypatch.delenv("ASCEND_RESUMABLE_UPSTREAM", raising=False)
    assert source_tools.sources_root() == ROOT.parent / "shared" / "upstream" / "src"
    monkeypatch.setenv("ASCEND_RESUMABLE_UPSTREAM", str(tmp_path))
    assert source_tools.sources_root() == tmp_path / "src"
    monkeypatch.setenv("ASCEND_RESUMABLE_UPSTREAM_SRC", str(tmp_path / "elsewhere"))
    assert source_tools.sources_root() == tmp_path / "elsewhere"


def rendered_scheduler(example: str, tmp_path: Path) -> podrunner.Mounts:
    """The scheduler config of ``example``'s render written where the scheduler pod mounts it."""
    plan = load_plan(str(EXAMPLE_FILES[0].parent / f"{example}.yaml"))
    (conf,) = [
        o for o in build_stack(plan.scheduler) if o["kind"] == "ConfigMap" and "scheduler" in o["metadata"]["name"]
    ]
    (tmp_path / "conf").mkdir()
    for key, value in conf["data"].items():
        (tmp_path / "conf" / key).write_text(value)
    return podrunner.Mounts(table=[("/volcano.scheduler", tmp_path / "conf")], root=tmp_path / "rootfs")


def test_the_scheduler_of_a_release_with_a_built_plugin_runs_with_it(tmp_path: Path) -> None:
    """The plugin the rendered config names (volcano-npu_v7.3.0_linux-aarch64 for the 7.3.0 example)
    is a build of this project: the scheduler of that build runs, and the ``.so`` goes where
    ``--plugins-dir=plugins`` finds it from the pod's root (the image's /plugins)."""
    mounts = rendered_scheduler("pytorch-pod-rescheduling", tmp_path)
    args = ["--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf", "--plugins-dir=plugins"]
    found = podrunner.npu_plugin_tool("1.9.0", podrunner.rewrite(args, mounts), mounts.root)
    assert found is not None
    tool, plugin = found
    assert plugin == "volcano-npu_v7.3.0_linux-aarch64"
    assert tool.name == f"volcano-1.9.0+{plugin}"
    assert [p.output for p in tool.programs if p.buildmode == "plugin"] == [f"{plugin}.so"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / f"{plugin}.so").write_text("")
    directory = podrunner.place_plugin(bin_dir, plugin, args, mounts.root)
    assert directory == mounts.root / "plugins"
    assert (directory / f"{plugin}.so").resolve() == (bin_dir / f"{plugin}.so").resolve()


def test_a_scheduler_whose_plugin_is_not_built_here_runs_plain(tmp_path: Path) -> None:
    """26.1.0's plugin (Volcano 1.12) has no build yet: the plain scheduler runs, as before."""
    mounts = rendered_scheduler("pytorch-process-recovery", tmp_path)
    args = ["--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf", "--plugins-dir=plugins"]
    plan = load_plan(str(EXAMPLE_FILES[0].parent / "pytorch-process-recovery.yaml"))
    expected = f"volcano-{plan.scheduler.volcano_version}+{plan.scheduler.volcano_plugin_name}"
    found = podrunner.npu_plugin_tool(plan.scheduler.volcano_version, podrunner.rewrite(args, mounts), mounts.root)
    assert (found is None) == (expected not in source_tools.SOURCE_TOOLS)


def test_the_plugin_build_makes_the_release_scripts_edits() -> None:
    """MC:@v7.3.0 build.sh's edits of Volcano's tree and the plugin, each naming its line."""
    tool = source_tools.volcano_npu("7.3.0", "volcano-npu_v7.3.0_linux-x86_64")
    files = [e.files for e in tool.edits]
    assert "pkg/controllers/job/state/running.go" in files
    assert "pkg/scheduler/actions/allocate/allocate.go" in files
    assert all("build.sh:" in e.source for e in tool.edits)
    assert [p.cgo for p in tool.programs] == [False, True, True]


def test_an_edit_that_finds_nothing_fails_the_build(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text("package a\n")
    edit = source_tools.Edit("a.go", "switch action \\{", "x", "test")
    with pytest.raises(source_tools.SourcesMissing, match="changed nothing"):
        source_tools.apply_edit(tmp_path, edit)
