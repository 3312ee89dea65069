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
all of them at once).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import socket
import sys
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .. import constants as C
from ..plan.model import EnvVar, JobPlan, PodValue, env_reference
from . import installed, podenv
from .torchrun_patch import count_line

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

    @property
    def timeline_path(self) -> str:
        return os.path.join(self.log_dir, C.TIMELINE_FILE % _host())

    @property
    def manager_log(self) -> str:
        return os.path.join(self.log_dir, "taskd-manager-%s.log" % _host())


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "localhost"


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


def build_spec(
    job: JobPlan,
    environ: Mapping[str, str],
    script_argv: Sequence[str] = (),
    log_dir: Optional[str] = None,
) -> LaunchSpec:
    env: Dict[str, str] = dict(environ)
    exports: List[Export] = []
    problems: List[str] = []
    warnings: List[str] = []
    launcher = job.launcher

    def export(name: str, value: str, reason: str, warn: bool = False) -> None:
        old = env.get(name)
        if warn and old is not None and old != value:
            warnings.append(
                "%s=%s in the environment differs from the plan; using %s=%s (%s)" % (name, old, name, value, reason)
            )
        env[name] = value
        exports.append(Export(name, value, reason))

    def need(name: str, why: str) -> Optional[str]:
        value = env.get(name)
        if value is None or value == "":
            problems.append("%s is not set: %s" % (name, why))
            return None
        return value

    names = INPUTS.get(job.framework, ()) if job.kind == C.ASCENDJOB_KIND else VCJOB_INPUTS
    inputs = [(name, environ.get(name)) for name in names]
    for name in (C.ENV_POD_IP, C.ENV_MINDX_TASK_ID):
        if (name, environ.get(name)) not in inputs:
            inputs.append((name, environ.get(name)))

    # 0. the operator's view of the job's size against the plan's (a job YAML that drifted from the profile)
    nodes, per_node = launcher.taskd_manager.node_nums, launcher.taskd_manager.proc_per_node
    sizes = {
        "pytorch": ((C.ENV_WORLD_SIZE, nodes * per_node), (C.ENV_LOCAL_WORLD_SIZE, per_node)),
        "mindspore": ((C.ENV_MS_WORKER_NUM, nodes * per_node), (C.ENV_MS_LOCAL_WORKER, per_node)),
    }
    for name, wanted in sizes.get(job.framework, ()) if job.kind == C.ASCENDJOB_KIND else ():
        seen = environ.get(name)
        if seen is not None and seen.strip() != str(wanted):
            warnings.append(
                "%s=%s from the Ascend Operator, but the plan has %d nodes x %d processes (%s=%d expected): the "
                "job YAML and the profile disagree" % (name, seen, nodes, per_node, name, wanted)
            )

    # 1. the container environment of the plan (the job template sets the same; outside one this does)
    for var in plan_env(job):
        if var.value is None:
            if var.name not in env:
                warnings.append(
                    "%s is not set (the job template sets it from %s; %s)" % (var.name, var.field_path, var.reason)
                )
            continue
        try:
            export(var.name, expand(var.value, env), var.reason, warn=True)
        except MissingVariable as exc:
            problems.append(
                "%s is not set, and the plan's %s=%s needs it (the Ascend Operator injects it into an AscendJob)"
                % (exc.name, var.name, var.value)
            )

    # 1b. what the job controller does not inject: a Volcano Job's rendezvous from its RankTable;
    #     msrun node ranks that cannot collide (podenv)
    derived, found = podenv.volcano_rendezvous(job, env)
    problems.extend(found)
    for name, value, reason in derived:
        export(name, value, reason)
    problems.extend(podenv.msrun_topology(job, env))

    # 2. TaskD: libtaskd.so preloaded into every process, found from the installed package
    if launcher.ld_preload:
        lib = installed.libtaskd_path()
        if lib is None:
            problems.append(
                "taskd is not installed in %s, so LD_PRELOAD cannot name %s (the image recipe installs it from "
                "image.wheels.taskd)" % (sys.executable, C.LIBTASKD_RELATIVE)
            )
        elif not os.path.isfile(lib):
            problems.append("the installed taskd has no %s (a broken TaskD wheel?)" % lib)
        else:
            present = [p for p in env.get(C.ENV_LD_PRELOAD, "").split(":") if p]
            value = ":".join([lib] + [p for p in present if p != lib])
            export(C.ENV_LD_PRELOAD, value, "libtaskd.so of the installed taskd (PLR 适配训练脚本)")

    # 3. run.py must carry the plan's import line, or TaskD / the Elastic Agent silently stays out
    if job.image.runpy_patch and job.launcher.launcher != "msrun":
        run_py = installed.torch_run_py()
        if run_py is None:
            problems.append("torch is not installed in %s" % sys.executable)
        else:
            try:
                with open(run_py, encoding="utf-8") as handle:
                    copies = count_line(handle.read(), job.image.runpy_patch)
            except OSError as exc:
                problems.append("cannot read %s (%s)" % (run_py, exc))
            else:
                if copies != 1:
                    problems.append(
                        "%s has `%s` %d times, not once: run `resumable image patch-torchrun` (the image recipe "
                        "does)" % (run_py, job.image.runpy_patch, copies)
                    )

    # 4. the TaskD Manager, only where the plan puts it
    manager: Optional[List[str]] = None
    tm = launcher.taskd_manager
    manager_reason = "the plan runs no TaskD Manager"
    if tm.enabled:
        here = False
        if tm.where == "rank0":
            rank = need(C.ENV_RANK, "the Ascend Operator injects the pod rank")
            here = rank == "0"
            manager_reason = "RANK=%s: the TaskD Manager runs only on rank 0 (PLR 适配训练脚本)" % (
                rank if rank is not None else "(unset)"
            )
        elif tm.where == "scheduler":
            host, pod_ip = env.get(C.ENV_MS_SCHED_HOST), env.get(C.ENV_POD_IP)
            need(C.ENV_MS_SCHED_HOST, "the Ascend Operator injects it")
            need(C.ENV_POD_IP, "the job template sets it from status.podIP")
            here = host is not None and host == pod_ip
            manager_reason = (
                "MS_SCHED_HOST=%s, POD_IP=%s: the TaskD Manager runs only where they are equal (PLR 适配训练脚本)"
                % (
                    host,
                    pod_ip,
                )
            )
        if here:
            if tm.where == "rank0":
                pod_ip = need(C.ENV_POD_IP, "rank 0 points MASTER_ADDR at it for the TaskD Manager")
                if pod_ip:
                    export(
                        C.ENV_MASTER_ADDR,
                        pod_ip,
                        "rank 0 hosts the TaskD Manager: MASTER_ADDR=$POD_IP (PLR 适配训练脚本)",
                    )
            job_id = need(tm.job_id_env, "the Ascend Operator injects the job id the TaskD Manager registers")
            config = {"job_id": job_id or "", "node_nums": tm.node_nums, "proc_per_node": tm.proc_per_node}
            manager = [sys.executable, "-m", MANAGER_MODULE, json.dumps(config, sort_keys=True)]
            if installed.package_dir("taskd") is None and not any("taskd is not installed" in p for p in problems):
                problems.append("taskd is not installed in %s: the TaskD Manager cannot start" % sys.executable)

    # 4b. MindIO TTP: every rank's processor connects to the controller on the rank-0 pod (podenv)
    derived, found = podenv.ttp_address(job, env)
    problems.extend(found)
    for name, value, reason in derived:
        export(name, value, reason)

    # 5. the start-up hook: worker reports for the timeline, compile mode without editing user code
    python_path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != STARTUP_DIR]
    export("PYTHONPATH", os.pathsep.join([STARTUP_DIR, *python_path]), "start-up hook of resumable launch")
    if launcher.jit_compile is not None:
        after = "torch_npu" if job.framework == "pytorch" else "mindspore"
        source = "RTO 表9/表10" if job.framework == "pytorch" else "MS-OPCOMPILE"
        export(
            C.ENV_RESUMABLE_JIT_COMPILE,
            "1" if launcher.jit_compile else "0",
            "%s (%s)" % (launcher.compile_call, source),
        )
        export(C.ENV_RESUMABLE_COMPILE_AFTER, after, "made right after the training script imports %s" % after)

    export(
        C.ENV_RESUMABLE_HEARTBEAT,
        "%g" % launcher.heartbeat_seconds,
        "each training process sends a heartbeat; silent for %d s = hung (plan hang_timeout)" % launcher.hang_timeout,
    )
    if launcher.attempt_store_prefix:
        export(
            C.ENV_RESUMABLE_ATTEMPT_STORE,
            "1",
            "workers of restart n use PrefixStore('%s<n>') on the agent's store (torch >= 2.6; HA72-075)"
            % C.ATTEMPT_STORE_PREFIX,
        )

    # 6. the launcher command
    exe = installed.find_command(launcher.launcher)
    if exe is None:
        problems.append(
            "%s is not installed next to %s nor on PATH (the framework in the base image provides it)"
            % (launcher.launcher, sys.executable)
        )
        exe = launcher.launcher
    else:
        owner = installed.script_python(exe)
        if owner is not None and os.path.realpath(owner) != os.path.realpath(sys.executable):
            warnings.append(
                "%s runs %s, not %s (resumable's Python): the start-up hook (timeline, compile mode) needs "
                "resumable installed there" % (exe, owner, sys.executable)
            )
    options = launcher.config.argv(_pod_value(env, problems))
    script = list(script_argv) or ([launcher.script, *launcher.script_args] if launcher.script else [])
    if not script:
        problems.append("no training script: give it after `--` or set jobs[].script in the profile")
    command = [exe, *options, *script]

    # 7. the job-scoped log directory; TaskD's own, which must have mode 0750 (podenv.private_dir)
    if log_dir is not None and any(v.name == C.ENV_TASKD_LOG_PATH for v in launcher.env):
        export(C.ENV_TASKD_LOG_PATH, os.path.join(log_dir, "taskd"), "TaskD's logs under --log-dir")
    private: List[str] = []
    if (launcher.ld_preload or manager is not None) and env.get(C.ENV_TASKD_LOG_PATH):
        private.append(env[C.ENV_TASKD_LOG_PATH])
    if log_dir is None:
        try:
            log_dir = expand(launcher.log_dir, env)
        except MissingVariable as exc:
            problems.append(
                "%s is not set, so the job log directory %s has no name; outside an AscendJob pass --log-dir"
                % (exc.name, launcher.log_dir)
            )
            log_dir = launcher.log_dir
    return LaunchSpec(
        job=job.name,
        framework=job.framework,
        env=env,
        exports=exports,
        inputs=inputs,
        command=command,
        manager=manager,
        manager_reason=manager_reason,
        log_dir=log_dir,
        grace_seconds=grace_seconds(job),
        levels=list(job.levels),
        budget=_budget(job),
        problems=problems,
        warnings=warnings,
        private_dirs=private,
        hang_timeout=float(launcher.hang_timeout),
    )


def render_dry_run(spec: LaunchSpec, profile: str) -> str:
    """The exact environment and commands, as a shell reader would run them."""
    q = shlex.quote
    out = ["# resumable launch --dry-run: job %s (profile %s)" % (spec.job, profile)]
    out.append("# read from the pod:")
    for name, value in spec.inputs:
        out.append("#   %s=%s" % (name, "(unset)" if value is None else value))
    out.append("# environment set for the launcher, the TaskD Manager and every training process:")
    for e in spec.exports:
        out.append("export %s=%s  # %s" % (e.name, q(e.value), e.reason))
    out.append("export %s=<runtime dir>/events.sock  # workers report starts for the timeline" % C.ENV_RESUMABLE_EVENTS)
    out.append("export %s=<launcher pid>" % C.ENV_RESUMABLE_LAUNCHER_PID)
    for path in spec.private_dirs:
        out.append("# created with mode 0750 before the start (TaskD's logger needs exactly that): %s" % path)
    out.append("# %s" % spec.manager_reason)
    if spec.manager is not None:
        out.append("# TaskD Manager, supervised, log %s:" % spec.manager_log)
        out.append(" ".join(q(a) for a in spec.manager) + " &")
    out.append("# training (supervised; SIGTERM/SIGINT forwarded, killed after %.0f s):" % spec.grace_seconds)
    out.append(" ".join(q(a) for a in spec.command))
    out.append("# recovery timeline: %s" % spec.timeline_path)
    for w in spec.warnings:
        out.append("# warning: %s" % w)
    for p in spec.problems:
        out.append("# problem: %s" % p)
    return "\n".join(out) + "\n"
