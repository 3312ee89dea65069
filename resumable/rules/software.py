"""Launchers, ranktable, torch_npu versions, and the vendor wheels of the image."""

from __future__ import annotations

from typing import Iterable, List

from .. import releases as R
from .. import wheelfiles
from ..facts import WHEELS, JobFacts, needed_wheels, version_or_none
from ..profile import Profile
from .base import WARNING, Finding, job_rule


@job_rule(
    "launcher-framework",
    "torchrun / torch_npu_run start PyTorch, msrun starts MindSpore",
    "RT04; RT05 Table 2",
)
def launcher_framework(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The TaskD agent wraps torch's elastic agent for PyTorch and MindSpore's msrun for MindSpore."""
    launcher = f.job.launcher
    if (launcher == "msrun") == f.is_pytorch:
        yield Finding(
            ["%s.launcher" % f.path, "%s.image.framework" % f.path],
            "launcher %s does not start %s jobs" % (launcher, f.framework),
            "Use torchrun or torch_npu_run for PyTorch, msrun for MindSpore.",
        )


@job_rule(
    "msrun-options",
    "max_restarts, monitor_interval, start_timeout and warm_workers are for torchrun; msrun has none",
    "MS-MSRUN; RTO 表2; PLR 适配训练脚本",
)
def msrun_options(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """torchrun's --max_restarts and --monitor_interval bound and pace the in-container restarts of
    the torch elastic agent that TaskD (or mindx_elastic) wraps (RTO 表2; PLR sets them for
    PyTorch only). msrun has no equivalent option (its parameters are worker counts, addresses,
    logs, cluster_time_out, bind_core, simulation and rank table); on MindSpore TaskD's msrun
    plugin and MindIO restart processes. start_timeout and warm_workers work through torch's
    process-group and worker-start code (the start-up hook), which msrun's workers do not run.
    Accepting them would drop them without a word."""
    if f.job.launcher != "msrun":
        return
    r = f.job.recovery
    for name, value in (
        ("max_restarts", r.max_restarts),
        ("monitor_interval", r.monitor_interval),
        ("start_timeout", r.start_timeout),
        ("warm_workers", r.warm_workers or None),
    ):
        if value is not None:
            yield Finding(
                ["%s.recovery.%s" % (f.path, name), "%s.launcher" % f.path],
                "recovery.%s is for torchrun; msrun has no equivalent, so it would have no effect" % name,
                "Remove recovery.%s from this MindSpore job (process restarts on MindSpore are TaskD's and "
                "MindIO's, enabled by the recovery strategies)." % name,
            )


@job_rule(
    "monitor-interval",
    "recovery.monitor_interval never makes detection slower than torchrun's own default without saying so",
    "%s; RTO 表2; MC:@v7.3.0 component/taskd/taskd/python/framework/agent/pt_agent/pt_agent.py:68-73"
    % R.TORCH_FAST_MONITOR.source,
    severity=WARNING,
)
def monitor_interval(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A failed training process waits for the agent's next look, so the monitor interval is the
    detection time of every in-container recovery. torchrun's own default is 0.1 s from torch 2.4 (5 s
    before); RTO 表2's 5 s and the vendor samples' 10 s are older torch's figures, and a value above the
    default only delays detection (benchmarks/recovery_cpu.py measured 1.47x the recovery time of the
    default at 1 s). Where TaskD's patch of torch elastic runs the agent loop (PyTorch Pod- or
    process-level recovery from 7.3.0) the option is not read at all: TaskD looks every 1 s, so the
    setting would be dropped without a word."""
    interval = f.job.recovery.monitor_interval
    if interval is None or f.job.launcher == "msrun":  # msrun-options refuses it there
        return
    where = f.where("recovery.monitor_interval")
    tick = f.monitor
    if not tick.reads_option:
        yield Finding(
            [where],
            "recovery.monitor_interval %g s is not read: %s, every %g s" % (interval, tick.what, tick.seconds),
            "Remove recovery.monitor_interval (nothing in this job reads it), or acknowledge monitor-interval.",
        )
        return
    default = tick.torch_default
    if default is not None and interval > default:
        yield Finding(
            [where, "%s.image.torch" % f.path],
            "recovery.monitor_interval %g s makes torchrun look at the training processes every %g s instead of "
            "its own default %g s (%s): a failed process waits up to %g s longer before its recovery starts"
            % (interval, interval, default, tick.torch_basis, interval - default),
            "Remove recovery.monitor_interval (torchrun's default is the fastest), or acknowledge "
            "monitor-interval where a slower look is wanted (for example to spare a loaded host).",
        )


@job_rule(
    "taskd-torch-patch",
    "TaskD's patch of torch elastic runs only on a torch whose launcher it was written for",
    "MC:@v7.3.0 component/taskd/taskd/python/adaptor/patch/torch_patch.py:275-279; "
    "MC:@v26.1.0 same file :271-275; %s" % R.TORCH_HEALTH_CHECK_SERVER.source,
)
def taskd_torch_patch(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """From 7.3.0 the image imports TaskD's patch of torch elastic (TASKD_RUNPY_PATCH), which replaces
    ``launch_agent`` with ``patch_launch_agent(config, entrypoint, args)``. torch 2.13 calls
    ``launch_agent(..., health_check_server=...)``, so every torchrun of the job ends at start with
    ``TypeError: patch_launch_agent() got an unexpected keyword argument 'health_check_server'``
    (run with the TaskD wheel built from the 7.3.0 and 26.1.0 sources: tools/taskd_build.py; torch
    2.1.2 to 2.12.1 start). An undeclared torch is not judged."""
    if not f.taskd_agent_loop or f.torch is None or not R.at_least(f.torch, R.TORCH_HEALTH_CHECK_SERVER):
        return
    yield Finding(
        ["%s.image.torch" % f.path, "cluster.mindcluster"],
        "torch %s passes health_check_server to launch_agent, which TaskD's patch of torch elastic (MindCluster %s) "
        "does not take: every torchrun of the job would fail at start" % (f.torch, f.release),
        "Use torch 2.12 or older in the image (image.torch and the torch_npu built for it), or a MindCluster "
        "release whose TaskD patch takes it.",
    )


def _adapter_gate(f: JobFacts, gate: R.Gate, what: str, path: str) -> Iterable[Finding]:
    paths = [path, "%s.image.torch_npu" % f.path, "%s.image.framework_pt_adapter" % f.path]
    above = gate.since
    newer = f.adapter_info.above(gate)
    if newer is None:
        yield Finding(
            paths,
            "%s needs torch_npu newer than %s and the FrameworkPTAdapter release is unknown (%s%s)"
            % (what, above, f.adapter_info.how, "" if f.adapter is None else ": at least %s" % f.adapter),
            "Declare image.framework_pt_adapter.",
            severity=WARNING,
        )
    elif not newer:
        yield Finding(
            paths,
            "%s needs torch_npu newer than %s, the image has %s (%s)" % (what, above, f.adapter, f.adapter_info.how),
            "Upgrade torch_npu.",
        )


@job_rule(
    "torch-npu-run-version",
    "torch_npu_run (Parallel Store) with torch 2.1+ needs torch_npu newer than 6.0.RC3",
    "RT05 Table 2",
    warns=True,
)
def torch_npu_run_version(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """torch_npu_run replaces torchrun's TCPStore with a multi-threaded one to cut communication init
    time; it exists in torch_npu newer than 6.0.RC3 for torch 2.1 and later."""
    if f.job.launcher == "torch_npu_run" and f.is_pytorch:
        yield from _adapter_gate(f, R.PARALLEL_STORE_ADAPTER_ABOVE, "torch_npu_run", "%s.launcher" % f.path)


@job_rule("ranktable-adapter", "RankTable mode needs torch_npu newer than 6.0.RC3", "RT05 Table 4", warns=True)
def ranktable_adapter(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """PyTorch reads RANK_TABLE_FILE for communication init only from torch_npu newer than 6.0.RC3."""
    if f.job.ranktable and f.is_pytorch:
        yield from _adapter_gate(f, R.RANKTABLE_ADAPTER_ABOVE, "ranktable mode", "%s.ranktable" % f.path)


@job_rule(
    "torch-npu-version",
    "torch_npu, framework_pt_adapter and torch agree with the published version table",
    R.TORCH_NPU_SOURCE,
)
def torch_npu_version(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Each torch_npu pip version belongs to one FrameworkPTAdapter release and is built for one
    torch version (PTA: branch v<torch>-<release>, e.g. 2.1.0.post8 is 6.0.RC3 for torch 2.1.0).
    A declared adapter release that contradicts the table would open or close the watchdog,
    Parallel Store and RankTable gates wrongly; a torch_npu built for another torch does not load."""
    if not f.is_pytorch:
        return
    img = f.job.image
    npu = version_or_none(img.torch_npu)
    declared = version_or_none(img.framework_pt_adapter)
    paths = ["%s.image.torch_npu" % f.path, "%s.image.framework_pt_adapter" % f.path]
    if npu is None:
        return
    if R.is_adapter_style(npu):
        if declared is not None and declared != npu:
            yield Finding(
                paths,
                "torch_npu is given as FrameworkPTAdapter %s and framework_pt_adapter says %s" % (npu, declared),
                "Keep one of the two.",
            )
        return
    table = R.torch_npu_release(npu)
    if table is not None and declared is not None:
        if table.exact and declared != table.release:
            yield Finding(
                paths,
                "torch_npu %s is FrameworkPTAdapter %s (branch v%s-%s), but framework_pt_adapter says %s"
                % (npu, table.release, table.build.torch, table.release.text.lower(), declared),
                "Remove image.framework_pt_adapter (the plan reads it from the table) or correct torch_npu.",
            )
        elif not table.exact and declared < table.release:
            yield Finding(
                paths,
                "torch_npu %s is newer than %s, which is already FrameworkPTAdapter %s, but framework_pt_adapter "
                "says %s" % (npu, table.build.package, table.release, declared),
                "Correct image.framework_pt_adapter or image.torch_npu.",
            )
    torch = version_or_none(img.torch)
    if torch is not None and torch.release[:3] != npu.release[:3]:
        yield Finding(
            ["%s.image.torch" % f.path, "%s.image.torch_npu" % f.path],
            "torch_npu %s is built for torch %s, the image declares torch %s"
            % (npu, ".".join(str(n) for n in npu.release[:3]), torch),
            "Use the torch_npu package for torch %s (PTA lists them) or correct image.torch." % torch,
        )


@job_rule(
    "wheel-release-match",
    "TaskD and MindIO wheels match the cluster release",
    "RN Version Compatibility; RT04 prerequisites",
    severity=WARNING,
)
def wheel_release_match(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """TaskD and MindIO talk to ClusterD over gRPC; all MindCluster pieces must be the same release."""
    for name in WHEELS:
        value = f.wheel_versions.get(name)
        v = version_or_none(value)
        if v is not None and v.release != f.release.release:
            where = "image.%s" % name if getattr(f.job.image, name) is not None else "image.wheels.%s" % name
            yield Finding(
                ["%s.%s" % (f.path, where), "cluster.mindcluster"],
                "%s wheel %s does not match MindCluster %s" % (name, value, f.release),
                "Use the %s wheel from the %s release package." % (name, f.release),
            )


def _wheel_where(f: JobFacts, name: str) -> List[str]:
    return ["%s.image.wheels.%s" % (f.path, name)]


@job_rule(
    "wheel-declaration",
    "A vendor wheel comes from one file or https URL whose name matches it; sha256 is 64 hex digits",
    "PLR 构建镜像 (TASKD_WHL为TaskD whl安装包的路径); PEP427",
    warns=True,
)
def wheel_declaration(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The image installs TaskD, MindIO and mindx_elastic from the wheel files of the MindCluster
    release, never by name from a package index (public projects with these names exist, and
    `pip install taskd==7.3.0` finds no such release there). A wheel's file name carries its
    distribution and version; one that contradicts the declared version, or names another
    wheel, would install something else than the profile says. A URL without a checksum cannot be
    told apart from a tampered download. Whether the file exists is checked when the image is
    built (`resumable image context`), not here."""
    img = f.job.image
    for name, spec in sorted(img.wheels.items()):
        where = _wheel_where(f, name)
        if spec.file is None and spec.url is None:
            yield Finding(
                where, "image.wheels.%s gives neither file nor url" % name, "Give the wheel's file or https url."
            )
            continue
        if spec.file is not None and spec.url is not None:
            yield Finding(where, "image.wheels.%s gives both file and url" % name, "Keep one of them.")
        if spec.url is not None and not wheelfiles.is_https(spec.url):
            yield Finding(
                [where[0] + ".url"],
                "image.wheels.%s.url %r is not an https URL" % (name, spec.url),
                "Use an https URL (or a local file), so the download is authenticated.",
            )
        if spec.sha256 is not None and not wheelfiles.SHA256.fullmatch(spec.sha256):
            yield Finding(
                [where[0] + ".sha256"],
                "image.wheels.%s.sha256 is not 64 hexadecimal digits" % name,
                "Give the file's sha256 as printed by `sha256sum <file>`.",
            )
        if spec.url is not None and spec.sha256 is None:
            # the image build refuses such a download (resumable.image.context); say it here first
            yield Finding(
                [where[0] + ".sha256"],
                "image.wheels.%s is downloaded from a URL without a sha256 to check it against, which the "
                "image build refuses" % name,
                "Add image.wheels.%s.sha256 (a file may go without one; a download may not)." % name,
            )
        location = spec.file if spec.file is not None else spec.url
        assert location is not None
        parsed = wheelfiles.parse(location)
        field = where[0] + (".file" if spec.file is not None else ".url")
        if parsed is None:
            yield Finding(
                [field],
                "%r is not a wheel file name (<distribution>-<version>-<python>-<abi>-<platform>.whl)"
                % wheelfiles.base_name(location),
                "Point image.wheels.%s at the .whl file from the MindCluster release package." % name,
            )
            continue
        expected = wheelfiles.DISTRIBUTIONS[name]
        if parsed.distribution != expected:
            yield Finding(
                [field],
                "%s is a wheel of %s, not of %s" % (wheelfiles.base_name(location), parsed.distribution, expected),
                "Point image.wheels.%s at the %s wheel." % (name, expected),
            )
            continue
        declared = version_or_none(getattr(img, name))
        in_name = wheelfiles.version_of(location)
        if declared is not None and in_name is not None and in_name != declared:
            yield Finding(
                [field, "%s.image.%s" % (f.path, name)],
                "%s is version %s, image.%s says %s" % (wheelfiles.base_name(location), in_name, name, declared),
                "Use the wheel file of version %s, or correct image.%s." % (declared, name),
            )


@job_rule(
    "wheel-file",
    "Every vendor wheel the recovery settings need has a file or URL",
    "PLR 构建镜像; RTO 表2 Dockerfile",
    severity=WARNING,
)
def wheel_file(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The image recipe installs wheel files only; a wheel the recovery settings need without a
    file or URL cannot be built into the image by `resumable image context`. When the image is
    built elsewhere (image.name names it), acknowledge the warning."""
    for name, reason in needed_wheels(f):
        if name not in f.job.image.wheels:
            yield Finding(
                _wheel_where(f, name),
                "the image needs the %s wheel (%s) but image.wheels.%s gives no file or URL" % (name, reason, name),
                "Add image.wheels.%s.file (the .whl from the MindCluster release package) with its sha256, or "
                "acknowledge wheel-file when the image is built elsewhere." % name,
            )


@job_rule(
    "mindio-ttp-agent",
    "PyTorch graceful fault tolerance, Pod- and process-level rescheduling install MindIO TTP",
    "RTO 表2 Dockerfile; PLR 构建镜像",
    severity=WARNING,
)
def mindio_ttp_agent(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The documented image recipe for PyTorch with graceful fault tolerance, Pod- or process-level
    rescheduling installs the in-container agent (TaskD from 7.3.0, mindx_elastic before) and
    MindIO TTP, then patches torch's run.py. Process-level jobs without MindIO TTP are an error
    (process-level-wheels); for the others it is this warning."""
    if not f.is_pytorch or not f.in_container_agent or f.process_level or f.hot_switch:
        return
    if f.wheel_versions.get("mindio_ttp") is None:
        yield Finding(
            ["%s.image.mindio_ttp" % f.path],
            "the image recipe for %s installs MindIO TTP next to the agent, the image declares none"
            % ("Pod-level rescheduling" if f.pod_level else "graceful fault tolerance"),
            "Declare image.mindio_ttp and image.wheels.mindio_ttp (the wheel of the cluster release).",
        )


@job_rule(
    "mindio-acp",
    "MindIO ACP needs MindCluster 6.0.RC2+, its wheel, and MindSpore 2.7.0+ for MindSpore",
    R.MINDIO_ACP.source + "; ACP 02",
    warns=True,
)
def mindio_acp(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Asynchronous checkpoint persistence (MindIO ACP) shortens the save stall and so allows a
    shorter checkpoint interval; it has release and framework floors."""
    if not f.job.checkpoint.mindio_acp:
        return
    where = "%s.checkpoint.mindio_acp" % f.path
    if not f.at_least(R.MINDIO_ACP):
        yield Finding(
            [where, "cluster.mindcluster"],
            "MindIO ACP needs MindCluster %s or later" % R.MINDIO_ACP.since,
            "Upgrade MindCluster or turn checkpoint.mindio_acp off.",
        )
    if f.wheel_versions.get("mindio_acp") is None:
        yield Finding(
            [where, "%s.image.mindio_acp" % f.path],
            "checkpoint.mindio_acp is on but the image has no mindio_acp wheel",
            "Declare image.mindio_acp (and image.wheels.mindio_acp).",
        )
    if not f.is_pytorch and (f.mindspore is None or not R.at_least(f.mindspore, R.ACP_MINDSPORE)):
        yield Finding(
            [where, "%s.image.mindspore" % f.path],
            "MindIO ACP with MindSpore needs MindSpore %s or later (image: %s)" % (R.ACP_MINDSPORE.since, f.mindspore),
            "Upgrade MindSpore or turn checkpoint.mindio_acp off.",
        )
    if f.job.image.mindspeed_llm is not None and (f.process_level or f.hot_switch):
        yield Finding(
            [where, "%s.recovery.strategies" % f.path],
            "in MindSpeed-LLM MindIO ACP and MindIO TFT (process-level recovery) cannot be used together",
            "Choose ACP or the process-level strategies for this MindSpeed-LLM job.",
            severity=WARNING,
        )
