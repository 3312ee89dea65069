"""The plan as text for people: what will be set where, and the recovery-time budget.

Values come from the profile, so the text is made safe to print: control characters are escaped
(a value cannot move the cursor, clear the terminal or start a line that looks like ours) and the
launcher command line is shell-quoted.
"""

from __future__ import annotations

import re
import shlex
from typing import List

from ..errors import escape_controls
from .model import BudgetLine, BudgetPlan, EnvVar, JobPlan, Plan

# Arguments the plan writes as ``--flag=$VARIABLE``: expanded in the container, so shown unquoted.
_ENV_REFERENCE = re.compile(r"--[A-Za-z0-9_-]+=\$[A-Za-z_][A-Za-z0-9_]*")


def command_line(program: str, args: List[str]) -> str:
    """``program args...`` as a shell would read it: every argument quoted where it needs to be,
    except the plan's own ``--flag=$VARIABLE`` references."""
    return " ".join([shlex.quote(program)] + [a if _ENV_REFERENCE.fullmatch(a) else shlex.quote(a) for a in args])


def _env(e: EnvVar) -> str:
    value = e.value if e.field_path is None else "<%s>" % e.field_path
    return "%s=%s" % (e.name, value) + ("   # %s" % e.reason if e.reason else "")


def _minutes(seconds: float) -> str:
    return "%.1f min" % (seconds / 60.0) if seconds >= 120 else "%.0f s" % seconds


def _budget_line(line: BudgetLine) -> List[str]:
    out = ["    %-6s total %s" % (line.level, _minutes(line.total_seconds))]
    for t in line.terms:
        out.append("      %-14s %9s  %s [%s]" % (t.name, _minutes(t.seconds), t.assumption, t.source))
    return out


def _expected(b: BudgetPlan) -> List[str]:
    """The expected time per fault: each level weighted by the share of faults it takes, with why."""
    if b.expected_seconds is None:
        return ["    expected per fault: none: no level of the ladder takes a fault, the job ends"]
    mix = " + ".join("%.1f%% %s (%s)" % (100 * s.share, s.level, _minutes(s.total_seconds)) for s in b.shares)
    head = "    expected per fault: %s = %s" % (_minutes(b.expected_seconds), mix)
    if b.expected_saving_seconds is not None:
        head += "; saving %s against the baseline" % _minutes(b.expected_saving_seconds)
    out = [head]
    for s in b.shares:
        out.append("      %-16s %6.1f%%  %s [%s]" % (s.level, 100 * s.share, s.why, s.source))
    if b.unrecovered_share > 0:
        out.append(
            "      %-16s %6.1f%%  no level takes them (no job-level rescheduling): the job ends"
            % ("unrecovered", 100 * b.unrecovered_share)
        )
    return out


def _job(job: JobPlan) -> List[str]:
    out = ["", "job %s/%s (%s, %s)" % (job.namespace, job.name, job.kind, job.framework)]
    out.append("  recovery ladder: %s" % " -> ".join(job.levels or ["none"]))
    out.append("  labels:")
    out.extend("    %s: %s" % kv for kv in sorted(job.labels.items()))
    if job.annotations:
        out.append("  annotations:")
        out.extend("    %s: %s" % kv for kv in sorted(job.annotations.items()))
    for r in job.replicas:
        out.append(
            "  replica %s x%d: %d NPU, restartPolicy %s, terminationGracePeriodSeconds %s, hostNetwork %s%s"
            % (
                r.type,
                r.replicas,
                r.npus,
                r.restart_policy,
                "default" if r.termination_grace_period_seconds is None else r.termination_grace_period_seconds,
                str(r.host_network).lower(),
                ", runs the TaskD Manager" if r.runs_taskd_manager else "",
            )
        )
    ports = job.replicas[0].ports if job.replicas else []
    out.append("  ports (every pod): %s" % ", ".join("%d/%s" % (p.container_port, p.name) for p in ports))
    out.append("  container env:")
    out.extend("    " + _env(e) for e in (job.replicas[0].env if job.replicas else []))
    if job.operator_env:
        out.append("  injected by the Ascend Operator (not in the pod template):")
        out.extend("    %s=%s" % (e.name, e.value) for e in job.operator_env)
    out.append("  volumes:")
    for v in job.volumes:
        src = v.claim_name or v.config_map or v.path or v.source
        out.append("    %s -> %s (%s)" % (v.name, v.mount_path, src))
    img = job.image
    if img.wheels or img.runpy_patch:
        out.append("  image recipe%s:" % (" for %s" % img.name if img.name else ""))
        for w in img.wheels:
            where = w.file or w.url or "NO FILE GIVEN (image.wheels.%s)" % w.name
            sha = " sha256 %s" % w.sha256 if w.sha256 else ""
            out.append("    wheel %s %s from %s%s" % (w.name, w.version or "", where, sha))
        if img.runpy_patch:
            out.append("    torch/distributed/run.py: %r before %r" % (img.runpy_patch, img.runpy_anchor))
    lau = job.launcher
    out.append("  launcher: %s" % command_line(lau.launcher, lau.args))
    if lau.ld_preload:
        out.append("    LD_PRELOAD=%s:$LD_PRELOAD" % ":".join(lau.ld_preload))
    m = lau.taskd_manager
    if m.enabled:
        out.append(
            "    TaskD Manager on %s (%s): job_id=$%s node_nums=%d proc_per_node=%d TASKD_PROCESS_ENABLE=%s"
            % (m.where, m.condition, m.job_id_env, m.node_nums, m.proc_per_node, m.process_enable)
        )
    out.append("    compile mode: %s%s" % (lau.compile_mode, " (%s)" % lau.compile_call if lau.compile_call else ""))
    notes = job.notes + img.notes + lau.notes
    if notes:
        out.append("  notes:")
        out.extend("    - %s [%s]" % (n.text, n.source) for n in notes)
    b = job.budget
    out.append("  recovery-time budget per fault (T0 rollback + T1 reschedule + T2 comm init + T3 load + T4 compile):")
    for line in b.ladder:
        out.extend(_budget_line(line))
    out.append("    baseline: job-level rescheduling without watchdog or compile help")
    out.extend(_budget_line(b.baseline))
    out.append(
        "    saving per fault: %s (best level) to %s (last level)"
        % (_minutes(b.best_saving_seconds), _minutes(b.worst_saving_seconds))
    )
    out.extend(_expected(b))
    out.extend("    note: %s [%s]" % (n.text, n.source) for n in b.notes)
    if b.hang_detection:
        out.append("  a hung training (processes alive, no progress) is detected by, fastest first:")
        out.extend("    %9s  %s [%s]" % (_minutes(t.seconds), t.assumption, t.source) for t in b.hang_detection)
    return out


def render_text(plan: Plan) -> str:
    s = plan.scheduler
    out = ["plan for %s (cluster %s)" % (plan.profile, plan.cluster_name)]
    out.append(
        "scheduler: MindCluster %s (stack %s), Volcano %s with %s, %s"
        % (s.release, s.stack_release or "not deployable", s.volcano_version, s.volcano_plugin_name, s.arch)
    )
    hot_reset = "" if s.hot_reset is None else "-hotReset=%d " % s.hot_reset
    out.append("  device plugin: %s-listWatchPeriod=%d" % (hot_reset, s.list_watch_period))
    out.append("  NodeD: -reportInterval=%d" % s.report_interval)
    out.append("  Volcano init-params: grace-over-time=%d" % s.grace_over_time)
    n = plan.nodes
    out.append("nodes: HDK %s, %s, %s" % (n.hdk or "not pinned", n.chip, n.accelerator_type))
    out.append("  compute labels: %s" % ", ".join("%s=%s" % kv for kv in n.labels.items()))
    out.append("  management labels: %s" % ", ".join("%s=%s" % kv for kv in n.master_labels.items()))
    out.append("  users: %s" % ", ".join("%s(%d)" % (u["name"], u["uid"]) for u in n.users))
    if n.reserved_ports:
        out.append("  reserved ports: %s" % ",".join(str(p) for p in n.reserved_ports))
    for m in n.shared_mounts:
        out.append("  shared mount: %s -> %s (%s)" % (m["source"], m["path"], m["opts"]))
    if plan.storage:
        out.append("shared volumes:")
        for vol in plan.storage:
            out.append("  %s: %s at %s (%s, %s)" % (vol.name, vol.purpose, vol.mount_path, vol.storage, vol.size))
    for job in plan.jobs:
        out.extend(_job(job))
    if plan.notes:
        out.append("")
        out.append("notes:")
        out.extend("  - %s [%s]" % (n.text, n.source) for n in plan.notes)
    if plan.violations:
        out.append("")
        out.append("findings:")
        for v in plan.violations:
            out.append("  %s [%s] %s: %s" % (v.severity, v.rule, ", ".join(v.paths), v.message))
    return "".join(escape_controls(line) + "\n" for line in out)
