"""What ``resumable launch`` runs on this pod, decided from the plan and the pod's environment.

This replaces the hand-written ``train_start.sh`` + ``manager.py`` of PLR 适配训练脚本:

- the environment the plan sets for the training container (recovery switches, compile cache, HCCL);
- ``LD_PRELOAD`` = the installed taskd's ``libtaskd.so`` (PLR 适配训练脚本: ``pip show taskd`` Location +
  taskd/python/cython_api/libs/libtaskd.so, prepended to any LD_PRELOAD) when TaskD is used;
- the TaskD Manager (``init_taskd_manager({"job_id", "node_nums", "proc_per_node"})`` then
  ``start_taskd_manager()``, TASKDAPI 04) only where the plan puts it: PyTorch on ``RANK == 0``
  after ``MASTER_ADDR=$POD_IP``, MindSpore where ``MS_SCHED_HOST == POD_IP``;
- the launcher command with the plan's options, ``$VAR`` read from what the Ascend Operator injects
  (MASTER_ADDR, MASTER_PORT, RANK, ...; MS_SCHED_HOST, MS_SCHED_PORT, MS_NODE_RANK, ...);
- the start-up hook on PYTHONPATH (worker reports for the recovery timeline, the compile mode).

:func:`build_spec` only decides; :mod:`.supervisor` runs the result and ``--dry-run`` prints it.
Everything that would make a real launch fail is collected in ``problems`` (so the dry run shows
all of them at once, and the launch refuses exactly what the dry run marks): every pod value it uses,
parsed once by :mod:`.podvars`; the files it reads (through the bounded reader); what the launch
writes before anything starts (the log directory, the timeline, TaskD's directory, the event socket
under TMPDIR), checked without writing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import socket
import stat
import sys
import tempfile
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import constants as C
from .. import fileio
from ..errors import ResumableError, escape_controls, shown, text_problem
from ..plan.model import EnvVar, JobPlan, PodValue, TorchrunOptions, env_reference
from . import installed, podenv, podvars
from .torchrun_patch import count_line, read_run_py

#: directory holding the start-up hook (``sitecustomize``) the training processes load
STARTUP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup")
#: the TaskD Manager runs as ``python -m`` this module
MANAGER_MODULE = "resumable.runtime.taskd_manager"
#: Kubernetes ``$(NAME)`` and shell ``${NAME}`` / ``$NAME`` references
_REF = re.compile(r"\$\((\w+)\)|\$\{(\w+)\}|\$(\w+)")


class MissingVariable(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def expand(value: str, env: Mapping[str, str]) -> str:
    """Replace variable references by their values; :class:`MissingVariable` for an unset one."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in env:
            raise MissingVariable(name)
        return env[name]

    return _REF.sub(one, value)


def kube_expand(value: str, env: Mapping[str, str]) -> Tuple[str, List[str]]:
    """``value`` as Kubernetes sets a container variable from it (KAPI third_party/forked/golang/
    expansion/expand.go:38 Expand at k8s.io/kubernetes v1.28.15): ``$(NAME)`` is the value of NAME
    where it is set and stays as written where it is not, ``$$`` is one ``$``, any other ``$`` is
    itself (``$HOME`` and ``${HOME}`` are not references). The launch exports the plan's variables
    so, to agree with the container's own environment; also the names left unresolved."""
    out: List[str] = []
    missing: List[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        if char != "$" or i + 1 == len(value):
            out.append(char)
            i += 1
            continue
        following = value[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(" and ")" in value[i + 2 :]:
            close = value.index(")", i + 2)
            name = value[i + 2 : close]
            if name in env:
                out.append(env[name])
            else:
                out.append(value[i : close + 1])
                missing.append(name)
            i = close + 1
        else:
            out.append("$" + following)
            i += 2
    return "".join(out), missing


@dataclasses.dataclass
class Export:
    name: str
    value: str
    reason: str


@dataclasses.dataclass
class LaunchSpec:
    job: str
    framework: str
    #: the complete environment of the launcher and the manager
    env: Dict[str, str]
    #: what resumable sets or changes, in order, with the reason (printed by --dry-run)
    exports: List[Export]
    #: the pod facts it read (Ascend Operator / downward API), None = unset
    inputs: List[Tuple[str, Optional[str]]]
    command: List[str]
    manager: Optional[List[str]]
    manager_reason: str
    log_dir: str
    grace_seconds: float
    #: the recovery ladder and its budget lines, for the timeline header
    levels: List[str]
    budget: List[Dict[str, object]]
    #: anything that stops a real launch (a dry run prints them and exits 2)
    problems: List[str]
    warnings: List[str]
    #: directories the launch creates with mode 0750 before anything starts (TaskD's log directory)
    private_dirs: List[str] = dataclasses.field(default_factory=list)
    #: seconds without a heartbeat before a training process is taken for hung (plan.launcher.hang_timeout)
    hang_timeout: float = float(C.HANG_FLOOR_SECONDS)
    #: where the launch makes its private runtime directory (the event socket): TMPDIR's directory
    runtime_parent: str = dataclasses.field(default_factory=tempfile.gettempdir)
    #: seconds from a training process's start through its process group's initialisation, and from a
    #: fault to the new processes (plan.launcher.start_timeout)
    start_timeout: float = float(C.START_FLOOR_SECONDS)
    #: torchrun's --max_restarts as the plan passes it (None: torchrun's own default, 0); the drill's limit
    max_restarts: Optional[int] = None
    #: the launcher that runs (torchrun, torch_npu_run, msrun)
    launcher: str = "torchrun"

    @property
    def timeline_path(self) -> str:
        return timeline_path(self.log_dir)

    @property
    def manager_log(self) -> str:
        return manager_log_path(self.log_dir)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "localhost"


def timeline_path(log_dir: str) -> str:
    return os.path.join(log_dir, C.TIMELINE_FILE % _host())


def manager_log_path(log_dir: str) -> str:
    return os.path.join(log_dir, "taskd-manager-%s.log" % _host())


#: the launch's private runtime directory is ``<TMPDIR>/<RUNTIME_PREFIX>XXXXXXXX`` (tempfile.mkdtemp)
RUNTIME_PREFIX = "resumable-launch-"
#: the workers' event socket in it
SOCKET_NAME = "events.sock"
#: the longest AF_UNIX socket path Linux takes: sun_path is 108 bytes with the closing NUL (unix(7))
SOCKET_PATH_MAX = 107


#: the longest socket name in the runtime directory: a training process's command socket, w<pid>.sock
#: with the largest pid Linux gives (pid_max at most 2^22, proc(5))
LONGEST_SOCKET_NAME = "w%d.sock" % (1 << 22)


def socket_path_problem(runtime_parent: str) -> Optional[str]:
    """Why the event socket (and the training processes' command sockets beside it) cannot be made
    under ``runtime_parent`` (TMPDIR), or None."""
    name = max(SOCKET_NAME, LONGEST_SOCKET_NAME, key=len)
    longest = os.path.join(runtime_parent, RUNTIME_PREFIX + "x" * 8, name)
    size = len(os.fsencode(longest))
    if size <= SOCKET_PATH_MAX:
        return None
    return (
        "TMPDIR=%s is too long for the launcher's event socket: its path (%s) would be %d bytes, and an AF_UNIX "
        "socket path has at most %d bytes (unix(7)): set TMPDIR to a directory of at most %d characters"
        % (
            shown(runtime_parent),
            os.path.join("$TMPDIR", RUNTIME_PREFIX + "XXXXXXXX", name),
            size,
            SOCKET_PATH_MAX,
            SOCKET_PATH_MAX - (size - len(os.fsencode(runtime_parent))),
        )
    )


def grace_seconds(job: JobPlan) -> float:
    """How long children get after SIGTERM before they are killed: the pod's grace period (Kubernetes'
    30 s when the plan leaves it unset) less a margin (10 %, at most 10 s), so the launcher is done
    before the kubelet kills it."""
    set_period = job.replicas[0].termination_grace_period_seconds if job.replicas else None
    period = float(C.K8S_DEFAULT_GRACE_SECONDS if set_period is None else set_period)
    return max(1.0, period - min(10.0, period * 0.1))


def plan_env(job: JobPlan) -> List[EnvVar]:
    """The variables the plan gives the training container, then the launcher's own."""
    seen: Dict[str, EnvVar] = {}
    container = job.replicas[0].env if job.replicas else []
    for var in list(container) + list(job.launcher.env):
        seen[var.name] = var
    return list(seen.values())


#: what the launcher reads from an AscendJob pod, per framework (the Ascend Operator injects them)
INPUTS = podenv.RENDEZVOUS_NAMES


#: what a Volcano Job's launcher reads: the RankTable and the pod's addresses (runtime.podenv)
VCJOB_INPUTS = (C.ENV_RANK_TABLE_FILE, C.ENV_XDL_IP)


def _budget(job: JobPlan) -> List[Dict[str, object]]:
    out: List[Dict[str, object]] = []
    for line in job.budget.ladder:
        out.append(
            {
                "level": line.level,
                "total_seconds": line.total_seconds,
                "terms": {t.name: t.seconds for t in line.terms},
            }
        )
    return out


def _pod_value(env: Mapping[str, str], problems: List[str]) -> PodValue:
    """A launcher option's value from the pod's environment; an unset variable is a problem (and the
    option keeps its ``$NAME``, so a dry run shows what is missing)."""

    def value(flag: str, name: str) -> str:
        if name in env:
            return env[name]
        problems.append(
            "%s is not set, and the launcher option %s=%s needs it (the Ascend Operator injects it)"
            % (name, flag, env_reference(flag, name))
        )
        return env_reference(flag, name)

    return value


def pod_names(job: JobPlan) -> List[str]:
    """Every variable of the pod this job's launch uses (podvars parses them): the rendezvous the
    operator injects or the RankTable gives, what the plan's values reference and the plan does not
    set itself, the MindIO controller's, the ones the launch extends (LD_PRELOAD, PYTHONPATH)."""
    launcher = job.launcher
    names: List[str] = [C.ENV_POD_IP, *INPUTS["mindspore" if job.framework == "mindspore" else "pytorch"]]
    if job.kind == C.VCJOB_KIND:
        names += [C.ENV_XDL_IP, C.ENV_RANK_TABLE_FILE]
    if launcher.launcher == "msrun":
        names += [C.ENV_MS_ROLE, C.ENV_NPU_POD]
    if launcher.taskd_manager.enabled:
        names.append(launcher.taskd_manager.job_id_env)
    if launcher.ttp_port is not None:
        names += [C.ENV_TTP_ADDR, C.ENV_MS_TFT_IP, C.ENV_MS_TFT_PORT]
    literal = {v.name for v in plan_env(job) if v.value is not None and not _REF.search(v.value)}
    for value in [launcher.log_dir, *(v.value for v in plan_env(job) if v.value)]:
        for match in _REF.finditer(value):
            name = match.group(1) or match.group(2) or match.group(3)
            if name not in literal:
                names.append(name)
    return [*names, C.ENV_LD_PRELOAD, "PYTHONPATH", C.ENV_TASKD_LOG_PATH]


def _size_warnings(job: JobPlan, pod: podvars.PodEnv) -> List[str]:
    """The operator's view of the job's size against the plan's (a job YAML that drifted from the profile)."""
    if job.kind != C.ASCENDJOB_KIND:
        return []
    nodes, per_node = job.launcher.taskd_manager.node_nums, job.launcher.taskd_manager.proc_per_node
    sizes = {
        "pytorch": ((C.ENV_WORLD_SIZE, nodes * per_node), (C.ENV_LOCAL_WORLD_SIZE, per_node)),
        "mindspore": ((C.ENV_MS_WORKER_NUM, nodes * per_node), (C.ENV_MS_LOCAL_WORKER, per_node)),
    }
    out = []
    for name, wanted in sizes.get(job.framework, ()):
        seen = pod.number(name)
        if seen is not None and seen != wanted:
            out.append(
                "%s=%d from the Ascend Operator, but the plan has %d nodes x %d processes (%s=%d expected): the "
                "job YAML and the profile disagree" % (name, seen, nodes, per_node, name, wanted)
            )
    return out


def _run_py_problem(job: JobPlan) -> Optional[str]:
    """run.py must carry the plan's import line once, or TaskD / the Elastic Agent silently stays out."""
    if not job.image.runpy_patch or job.launcher.launcher == "msrun":
        return None
    run_py = installed.torch_run_py()
    if run_py is None:
        return "torch is not installed in %s" % sys.executable
    try:
        copies = count_line(read_run_py(run_py), job.image.runpy_patch)
    except ResumableError as exc:
        return str(exc)
    if copies == 1:
        return None
    return "%s has `%s` %d times, not once: run `resumable image patch-torchrun` (the image recipe does)" % (
        run_py,
        job.image.runpy_patch,
        copies,
    )


def _launcher_program(name: str) -> Tuple[str, List[str], List[str]]:
    """The launcher to run (first on PATH, else next to this Python), the problems and the warnings."""
    exe = installed.find_command(name)
    if exe is None:
        why = "%s is not installed next to %s nor on PATH (the framework in the base image provides it)"
        return name, [why % (name, sys.executable)], []
    try:
        mode = os.stat(exe).st_mode
    except OSError:
        mode = stat.S_IFREG  # gone since it was found: starting it will say so
    if not stat.S_ISREG(mode):
        why = "%s on PATH is %s, not a program: remove it or put the framework's %s first on PATH"
        return exe, [why % (exe, fileio.kind_of(mode), name)], []
    owner = installed.script_python(exe)
    if owner is not None and os.path.realpath(owner) != os.path.realpath(sys.executable):
        return (
            exe,
            [],
            [
                "%s runs %s, not %s (resumable's Python): the start-up hook (timeline, compile mode) needs "
                "resumable installed there" % (exe, owner, sys.executable)
            ],
        )
    return exe, [], []


def _argument_problems(script_argv: Sequence[str]) -> List[str]:
    """The training command after ``--`` is checked as jobs[].script and script_args are (rule: no
    control characters), so the printed script and the profile agree on what is a mistake."""
    out = []
    for arg in script_argv:
        why = text_problem(arg)
        if why is not None:
            out.append(
                "the training command's argument %s %s: the profile refuses the same in jobs[].script_args"
                % (shown(arg), why)
            )
    return out


def _output_problems(log_dir: str, manager: bool, runtime_parent: str) -> List[str]:
    """What would stop the launch when it makes its log directory, appends to the timeline (and the
    Manager's log) and binds the event socket: checked without writing, so the dry run says it too."""
    out: List[str] = []
    why = text_problem(log_dir)
    if why is not None or not log_dir:
        out.append("the job log directory %s %s" % (shown(log_dir), why or "is empty"))
        return out
    existing = log_dir
    while not os.path.lexists(existing) and os.path.dirname(existing) not in ("", existing):
        existing = os.path.dirname(existing)
    if os.path.lexists(existing) and not os.path.isdir(existing):
        out.append(
            "the job log directory %s cannot be made: %s is not a directory (pass --log-dir DIR)" % (log_dir, existing)
        )
    for path in [timeline_path(log_dir)] + ([manager_log_path(log_dir)] if manager else []):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else fileio.kind_of(mode)
            out.append("%s is %s; the launch appends to it only as a regular file: remove it" % (path, kind))
    socket_problem = socket_path_problem(runtime_parent)
    if socket_problem:
        out.append(socket_problem)
    return out


def _word_problems(exports: Sequence[Export], command: Sequence[str], manager: Optional[Sequence[str]]) -> List[str]:
    """Every exported value and every word of the commands must be text a shell word can hold (the dry
    run prints them quoted; a value it cannot quote is refused). The pod's values are checked where
    they are read; this catches what was derived from them."""
    out = []
    for e in exports:
        why = text_problem(e.value)
        if why is not None:
            out.append("the launch would export %s=%s, which %s" % (e.name, shown(e.value), why))
    for word in [*command, *(manager or [])]:
        why = text_problem(word)
        if why is not None:
            out.append("the launch would run a command with the word %s, which %s" % (shown(word), why))
    return out


@dataclasses.dataclass
class _Draft:
    """A launch being decided: what the steps of :func:`build_spec` read (the plan, the pod's environment,
    the arguments) and what each adds (exports, the commands, problems, warnings)."""

    job: JobPlan
    environ: Mapping[str, str]
    script_argv: Sequence[str]
    log_dir: Optional[str]
    env: Dict[str, str]
    exports: List[Export] = dataclasses.field(default_factory=list)
    problems: List[str] = dataclasses.field(default_factory=list)
    warnings: List[str] = dataclasses.field(default_factory=list)
    #: every value the launcher uses, parsed once (step ``pod values``)
    parsed: Optional[podvars.PodEnv] = None
    manager: Optional[List[str]] = None
    manager_reason: str = "the plan runs no TaskD Manager"
    exe: str = ""
    options: List[str] = dataclasses.field(default_factory=list)
    script: List[str] = dataclasses.field(default_factory=list)
    private: List[str] = dataclasses.field(default_factory=list)
    runtime_parent: str = ""

    @property
    def pod(self) -> podvars.PodEnv:
        assert self.parsed is not None, "the pod's values are read before any step uses them"
        return self.parsed

    def export(self, name: str, value: str, reason: str, warn: bool = False) -> None:
        old = self.env.get(name)
        if warn and old is not None and old != value:
            self.warnings.append(
                "%s=%s in the environment differs from the plan; using %s=%s (%s)" % (name, old, name, value, reason)
            )
        self.env[name] = value
        self.exports.append(Export(name, value, reason))

    def need(self, name: str, why: str) -> Optional[str]:
        value = self.env.get(name)
        if name in self.pod.refused:
            return None  # named already
        if value is None or value == "":
            self.problems.append("%s is not set: %s" % (name, why))
            return None
        return value

    def inputs(self) -> List[Tuple[str, Optional[str]]]:
        """The pod facts the launch reads (what the job controller and the downward API inject)."""
        job = self.job
        names = INPUTS.get(job.framework, ()) if job.kind == C.ASCENDJOB_KIND else VCJOB_INPUTS
        out = [(name, self.environ.get(name)) for name in names]
        for name in (C.ENV_POD_IP, C.ENV_MINDX_TASK_ID):
            if (name, self.environ.get(name)) not in out:
                out.append((name, self.environ.get(name)))
        return out

    def spec(self) -> LaunchSpec:
        job, launcher = self.job, self.job.launcher
        return LaunchSpec(
            job=job.name,
            framework=job.framework,
            env=self.env,
            exports=self.exports,
            inputs=self.inputs(),
            command=[self.exe, *self.options, *self.script],
            manager=self.manager,
            manager_reason=self.manager_reason,
            log_dir=self.log_dir or "",
            grace_seconds=grace_seconds(job),
            levels=list(job.levels),
            budget=_budget(job),
            problems=self.problems,
            warnings=self.warnings,
            private_dirs=self.private,
            hang_timeout=float(launcher.hang_timeout),
            runtime_parent=self.runtime_parent,
            start_timeout=float(launcher.start_timeout),
            max_restarts=launcher.config.max_restarts if isinstance(launcher.config, TorchrunOptions) else None,
            launcher=launcher.launcher,
        )


def _plan_environment(d: _Draft) -> None:
    """The container environment of the plan (the job template sets the same; outside one this does)."""
    for var in plan_env(d.job):
        if var.value is None:
            if var.name not in d.env:
                d.warnings.append(
                    "%s is not set (the job template sets it from %s; %s)" % (var.name, var.field_path, var.reason)
                )
            continue
        value, missing = kube_expand(var.value, d.env)
        d.export(var.name, value, var.reason, warn=True)
        for name in missing:
            d.warnings.append(
                "%s=%s refers to $(%s), which is not set: it stays as written, as Kubernetes leaves it in the "
                "container's environment" % (var.name, var.value, name)
            )


def _volcano_rendezvous(d: _Draft) -> None:
    """What the job controller does not inject: a Volcano Job's rendezvous from its RankTable (podenv)."""
    derived, found = podenv.volcano_rendezvous(d.job, d.env)
    d.problems.extend(found)
    for name, value, reason in derived:
        d.export(name, value, reason)


def _pod_values(d: _Draft) -> None:
    """Every value the launcher uses, parsed once into its type and bounds (podvars): what the operator
    injects, what the RankTable gave, what the plan's $(VAR) references name; msrun node ranks that
    cannot collide (podenv)."""
    d.parsed = podvars.read_pod_env(d.env, pod_names(d.job), d.job.launcher.nodes)
    d.problems.extend(d.pod.problems)
    d.warnings.extend(_size_warnings(d.job, d.pod))
    d.problems.extend(podenv.msrun_topology(d.job, d.env, d.pod.number(C.ENV_MS_NODE_RANK)))


def _taskd_preload(d: _Draft) -> None:
    """TaskD: libtaskd.so preloaded into every process, found from the installed package."""
    if not d.job.launcher.ld_preload:
        return
    lib = installed.libtaskd_path()
    if lib is None:
        d.problems.append(
            "taskd is not installed in %s, so LD_PRELOAD cannot name %s (the image recipe installs it from "
            "image.wheels.taskd)" % (sys.executable, C.LIBTASKD_RELATIVE)
        )
    elif not os.path.isfile(lib):
        d.problems.append("the installed taskd has no %s (a broken TaskD wheel?)" % lib)
    else:
        present = [p for p in d.env.get(C.ENV_LD_PRELOAD, "").split(":") if p]
        value = ":".join([lib] + [p for p in present if p != lib])
        d.export(C.ENV_LD_PRELOAD, value, "libtaskd.so of the installed taskd (PLR 适配训练脚本)")


def _run_py(d: _Draft) -> None:
    """run.py must carry the plan's import line, or TaskD / the Elastic Agent silently stays out."""
    d.problems.extend(filter(None, [_run_py_problem(d.job)]))


def _manager_runs_here(d: _Draft) -> bool:
    """Whether the plan puts the TaskD Manager on this pod (rank 0, or the MindSpore scheduler's host)."""
    tm = d.job.launcher.taskd_manager
    if tm.where == "rank0":
        rank = d.need(C.ENV_RANK, "the Ascend Operator injects the pod rank")
        d.manager_reason = "RANK=%s: the TaskD Manager runs only on rank 0 (PLR 适配训练脚本)" % (
            rank if rank is not None else "(unset)"
        )
        return d.pod.number(C.ENV_RANK) == 0
    if tm.where == "scheduler":
        host, pod_ip = d.pod.text(C.ENV_MS_SCHED_HOST), d.pod.text(C.ENV_POD_IP)
        d.need(C.ENV_MS_SCHED_HOST, "the Ascend Operator injects it")
        d.need(C.ENV_POD_IP, "the job template sets it from status.podIP")
        d.manager_reason = (
            "MS_SCHED_HOST=%s, POD_IP=%s: the TaskD Manager runs only where they are equal (PLR 适配训练脚本)"
            % (host, pod_ip)
        )
        return host is not None and pod_ip is not None and podvars.same_address(host, pod_ip)
    return False


def _taskd_manager(d: _Draft) -> None:
    """The TaskD Manager, only where the plan puts it."""
    tm = d.job.launcher.taskd_manager
    if not tm.enabled or not _manager_runs_here(d):
        return
    if tm.where == "rank0":
        pod_ip = d.need(C.ENV_POD_IP, "rank 0 points MASTER_ADDR at it for the TaskD Manager")
        if pod_ip:
            d.export(
                C.ENV_MASTER_ADDR, pod_ip, "rank 0 hosts the TaskD Manager: MASTER_ADDR=$POD_IP (PLR 适配训练脚本)"
            )
    job_id = d.need(tm.job_id_env, "the Ascend Operator injects the job id the TaskD Manager registers")
    config = {"job_id": job_id or "", "node_nums": tm.node_nums, "proc_per_node": tm.proc_per_node}
    d.manager = [sys.executable, "-m", MANAGER_MODULE, json.dumps(config, sort_keys=True)]
    if installed.package_dir("taskd") is None and not any("taskd is not installed" in p for p in d.problems):
        d.problems.append("taskd is not installed in %s: the TaskD Manager cannot start" % sys.executable)


def _ttp_address(d: _Draft) -> None:
    """MindIO TTP: every rank's processor connects to the controller on the rank-0 pod (podenv)."""
    derived, found = podenv.ttp_address(d.job, d.env, d.pod.number(C.ENV_RANK))
    d.problems.extend(found)
    for name, value, reason in derived:
        d.export(name, value, reason)


def _startup_hook(d: _Draft) -> None:
    """The start-up hook: worker reports for the timeline and the heartbeat, compile mode without editing
    user code, the per-attempt store prefix, warm workers."""
    job, launcher = d.job, d.job.launcher
    python_path = [p for p in d.env.get("PYTHONPATH", "").split(os.pathsep) if p and p != STARTUP_DIR]
    d.export("PYTHONPATH", os.pathsep.join([STARTUP_DIR, *python_path]), "start-up hook of resumable launch")
    if launcher.jit_compile is not None:
        after = "torch_npu" if job.framework == "pytorch" else "mindspore"
        source = "RTO 表9/表10" if job.framework == "pytorch" else "MS-OPCOMPILE"
        d.export(
            C.ENV_RESUMABLE_JIT_COMPILE,
            "1" if launcher.jit_compile else "0",
            "%s (%s)" % (launcher.compile_call, source),
        )
        d.export(C.ENV_RESUMABLE_COMPILE_AFTER, after, "made right after the training script imports %s" % after)
    d.export(
        C.ENV_RESUMABLE_HEARTBEAT,
        "%g" % launcher.heartbeat_seconds,
        "each training process sends a heartbeat; silent for %d s = hung (plan hang_timeout)" % launcher.hang_timeout,
    )
    if launcher.attempt_store_prefix:
        d.export(
            C.ENV_RESUMABLE_ATTEMPT_STORE,
            "1",
            "workers of restart n use PrefixStore('%s<n>') on the agent's store where the torch that runs "
            "reuses it (>= 2.6; HA72-075)" % C.ATTEMPT_STORE_PREFIX,
        )
    if launcher.warm_workers:
        d.export(
            C.ENV_RESUMABLE_WARM,
            "1",
            "the agent forks the workers of a restart from a process that imported the framework (warm workers)",
        )


def _launcher_command(d: _Draft) -> None:
    """The launcher command: the program, the plan's options, the training script."""
    launcher = d.job.launcher
    d.exe, found, warned = _launcher_program(launcher.launcher)
    d.problems.extend(found)
    d.warnings.extend(warned)
    d.options = launcher.config.argv(_pod_value(d.env, d.problems))
    d.script = list(d.script_argv) or ([launcher.script, *launcher.script_args] if launcher.script else [])
    if not d.script:
        d.problems.append("no training script: give it after `--` or set jobs[].script in the profile")
    d.problems.extend(_argument_problems(d.script_argv))


def _log_dirs(d: _Draft) -> None:
    """The job-scoped log directory; TaskD's own, which must have mode 0750 (podenv.private_dir)."""
    launcher = d.job.launcher
    if d.log_dir is not None and any(v.name == C.ENV_TASKD_LOG_PATH for v in launcher.env):
        d.export(C.ENV_TASKD_LOG_PATH, os.path.join(d.log_dir, "taskd"), "TaskD's logs under --log-dir")
    if (launcher.ld_preload or d.manager is not None) and d.env.get(C.ENV_TASKD_LOG_PATH):
        d.private.append(d.env[C.ENV_TASKD_LOG_PATH])
    if d.log_dir is None:
        try:
            d.log_dir = expand(launcher.log_dir, d.env)
        except MissingVariable as exc:
            d.problems.append(
                "%s is not set, so the job log directory %s has no name; outside an AscendJob pass --log-dir"
                % (exc.name, launcher.log_dir)
            )
            d.log_dir = launcher.log_dir


def _what_it_writes(d: _Draft) -> None:
    """What the launch writes before anything starts (the log directory, its timeline and the Manager's
    log, the event socket under TMPDIR), checked without writing; what it exports and runs must print as
    shell words."""
    d.runtime_parent = tempfile.gettempdir()
    d.problems.extend(_output_problems(d.log_dir or "", d.manager is not None, d.runtime_parent))
    d.problems.extend(filter(None, map(podenv.private_dir_problem, d.private)))
    if not d.pod.refused:  # a value derived from a refused one is not named twice
        checked = [*d.options, *([] if d.script_argv else d.script)]  # the arguments after -- are named above
        d.problems.extend(_word_problems(d.exports, [d.exe, *checked], d.manager))


#: the steps of a launch's decision, in order (each reads what the earlier ones settled)
STEPS: Tuple[Tuple[str, Callable[[_Draft], None]], ...] = (
    ("plan environment", _plan_environment),
    ("volcano rendezvous", _volcano_rendezvous),
    ("pod values", _pod_values),
    ("taskd preload", _taskd_preload),
    ("run.py patch", _run_py),
    ("taskd manager", _taskd_manager),
    ("ttp address", _ttp_address),
    ("start-up hook", _startup_hook),
    ("launcher command", _launcher_command),
    ("log directories", _log_dirs),
    ("what it writes", _what_it_writes),
)


def build_spec(
    job: JobPlan,
    environ: Mapping[str, str],
    script_argv: Sequence[str] = (),
    log_dir: Optional[str] = None,
) -> LaunchSpec:
    """The launch of ``job`` on this pod: :data:`STEPS` in order over one draft; everything that would make
    it fail is in ``problems``."""
    d = _Draft(job, environ, script_argv, log_dir, env=dict(environ))
    for _, step in STEPS:
        step(d)
    return d.spec()


def _word(value: str) -> str:
    """``value`` as one shell word; a value a shell word cannot hold (build_spec names it as a
    problem) is shown with its control characters escaped, so the script stays a script."""
    return shlex.quote(value if text_problem(value) is None else escape_controls(value))


def render_dry_run(spec: LaunchSpec, profile: str) -> str:
    """The exact environment and commands, as a shell reader would run them. Comments show values
    with their control characters escaped (a newline in a value never starts a line of its own)."""
    out: List[str] = []

    def comment(text: str) -> None:
        out.append("# " + escape_controls(text))

    comment("resumable launch --dry-run: job %s (profile %s)" % (spec.job, profile))
    comment("read from the pod:")
    for name, value in spec.inputs:
        comment("  %s=%s" % (name, "(unset)" if value is None else value))
    comment("environment set for the launcher, the TaskD Manager and every training process:")
    for e in spec.exports:
        out.append("export %s=%s  # %s" % (e.name, _word(e.value), escape_controls(e.reason)))
    comment(
        "set at the start: %s=<runtime dir>/%s (workers report to the launcher)" % (C.ENV_RESUMABLE_EVENTS, SOCKET_NAME)
    )
    comment("set at the start: %s=<launcher pid>" % C.ENV_RESUMABLE_LAUNCHER_PID)
    for path in spec.private_dirs:
        comment("created with mode 0750 before the start (TaskD's logger needs exactly that): %s" % path)
    comment(spec.manager_reason)
    if spec.manager is not None:
        comment("TaskD Manager, supervised, log %s:" % spec.manager_log)
        out.append(" ".join(_word(a) for a in spec.manager) + " &")
    comment("training (supervised; SIGTERM/SIGINT forwarded, killed after %.0f s):" % spec.grace_seconds)
    out.append(" ".join(_word(a) for a in spec.command))
    comment("recovery timeline: %s" % spec.timeline_path)
    for w in spec.warnings:
        comment("warning: %s" % w)
    for p in spec.problems:
        comment("problem: %s" % p)
    return "\n".join(out) + "\n"
