"""``resumable init``: a new profile from a few answers, valid as written, with comments.

Like ``helm create`` or ``pulumi new``: the answers (chip and accelerator type, nodes and NPUs, the
MindCluster release, the framework, the recovery level, the storage) pick the settings; the software
versions come from the published torch_npu table of the release (releases.TORCH_NPU_BUILDS), the
vendor wheels are declared as files to place beside the profile. :func:`profile_text` writes it and
the CLI checks it through the one gate before it is written."""

from __future__ import annotations

from typing import List, NamedTuple, Optional

from . import hardware as H
from . import releases as R
from .versions import Version
from .wheelfiles import release_zip

LEVELS = ("job", "pod", "process")
FRAMEWORKS = ("pytorch", "mindspore")
#: MindSpore version written for a MindSpore job (MindIO ACP and the watchdog need 2.7.0/2.4.0, RT05)
MINDSPORE = "2.7.0"


class Answers(NamedTuple):
    name: str = "train"
    namespace: str = "training"
    release: str = max(R.STACK_RELEASES, key=Version)
    chip: str = "ascend-910b"
    accelerator_type: str = "module-910b-8"
    arch: str = "aarch64"
    nodes: int = 2
    npus_per_node: int = 8
    framework: str = "pytorch"
    level: str = "process"
    nfs: Optional[str] = None  # SERVER:/PATH
    storage_class: Optional[str] = None
    cluster: str = "ascend"


def torch_build(release: str) -> R.TorchNpuBuild:
    """The torch_npu build the release was published with: the newest row of the table whose release is
    at most ``release``, torch 2.7.1 where the release has it (the torch of the MindSpeed-LLM samples)."""
    same = R.builds_of_newest_release_up_to(Version(release))
    return next((b for b in same if b.torch == "2.7.1"), same[-1])


def wheels(a: Answers) -> List[str]:
    """The vendor wheels the recovery level needs: from 7.3.0 TaskD (the agent that patches torch run.py)
    and MindIO TTP beside it (RTO 表2 Dockerfile; PLR 构建镜像), before 7.3.0 on PyTorch the Elastic Agent
    (mindx_elastic, HA72-075); for process-level recovery MindIO TTP."""
    out: List[str] = []
    if a.level in ("pod", "process"):
        if R.at_least(Version(a.release), R.TASKD_RUNPY_PATCH):
            out.append("taskd")
        elif a.framework == "pytorch":
            out.append("mindx_elastic")
        out.append("mindio_ttp")
    return out


def _storage(a: Answers) -> List[str]:
    if a.storage_class:
        return [
            "storage:",
            "  storage_class: %s   # a ReadWriteMany class with reclaim policy Retain" % a.storage_class,
        ]
    server, _, path = (a.nfs or "192.0.2.10:/exports/ascend").partition(":")
    return [
        "storage:",
        "  nfs:   # every node mounts <path>/ranktable; each job gets <path>/<namespace>/<job>/{op-cache,checkpoints}",
        "    server: %s" % server,
        "    path: %s" % (path or "/exports/ascend"),
        "    # owner: 65534   # uid the training's root user becomes through root_squash (the default)",
    ]


def _recovery(a: Answers) -> List[str]:
    lines = ["    recovery:", "      fault_scheduling: grace   # job-level rescheduling on a fault (the last rung)"]
    if a.level in ("pod", "process"):
        lines.append("      pod_rescheduling: true   # reschedule only the faulty pod")
    if a.level == "process":
        lines.append("      fault_retry_times: 10   # service-plane faults are retried, not fatal")
        lines.append("      strategies: [recover, exit]   # process-level recovery first (PLR)")
    return lines


def profile_text(a: Answers) -> str:
    build = torch_build(a.release)
    needed = wheels(a)
    software: List[str] = ["      framework: %s" % a.framework]
    if a.framework == "pytorch":
        software += [
            '      torch: "%s"' % build.torch,
            '      torch_npu: "%s"   # FrameworkPTAdapter %s (PTA table)' % (build.package, build.release),
            '      cann: "%s"' % build.cann,
        ]
    else:
        software += ['      mindspore: "%s"' % MINDSPORE, '      cann: "%s"' % build.cann]
    for wheel in needed:
        software.append('      %s: "%s"' % (wheel, a.release))
    if needed:
        software.append("      wheels:   # place the files from the MindCluster release zips beside this profile")
        for wheel in needed:
            zip_name = release_zip(wheel, a.release, a.arch)
            software += [
                "        %s:   # from %s; add sha256: <sha256sum of the file>" % (wheel, zip_name),
                "          file: wheels/%s-%s-py3-none-linux_%s.whl" % (wheel, a.release, a.arch),
            ]
    launcher = "torchrun" if a.framework == "pytorch" else "msrun"
    script = "pretrain_gpt.py" if a.framework == "pytorch" else "run_mindformer.py"
    lines = [
        "# A resumable-training profile written by `resumable init` (ascend-resumable). Check it with",
        "# `resumable validate %s.yaml`, see what it implies with `resumable plan`, deploy it with" % a.name,
        "# `resumable render` (docs/deploy.md) or `pulumi up` (docs/pulumi.md). Every field: docs/profile.md.",
        "cluster:",
        "  name: %s" % a.cluster,
        '  mindcluster: "%s"   # the release of every MindCluster component on the cluster' % a.release,
        "  chip: %s   # %s" % (a.chip, H.CHIP_PRODUCTS.get(a.chip, "")),
        "  accelerator_type: %s" % a.accelerator_type,
        "  arch: %s" % a.arch,
        "",
        *_storage(a),
        "",
        "jobs:",
        "  - name: %s" % a.name,
        "    namespace: %s" % a.namespace,
        "    image:",
        "      # registry: registry.example.com/ai   # where `resumable image context` pushes <registry>/%s:%s"
        % (a.name, a.release),
        "      # base: registry.example.com/ascend/%s-cann:%s   # your base image with CANN and the framework"
        % (a.framework, build.cann),
        *software,
        "    nodes: %d" % a.nodes,
        "    npus_per_node: %d" % a.npus_per_node,
        "    launcher: %s" % launcher,
        "    script: %s   # your training script in the image" % script,
        *_recovery(a),
        "    checkpoint:",
        "      interval_minutes: 30",
    ]
    return "\n".join(lines) + "\n"
