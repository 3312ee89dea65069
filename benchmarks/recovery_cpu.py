#!/usr/bin/env python3
"""Recovery time on the CPU: fault -> first resumed training step, real torchrun under ``resumable launch``.

Each trial starts the checkpointing training job of the runtime tests (tests/fixtures/runtime/
train_ckpt.py: 2 workers, gloo, a checkpoint every 5 steps), waits for step 12 plus a random delay,
SIGKILLs rank 1 and measures until rank 0 logs its first step of the restarted group.

Four variants: the plan's settings (``--monitor_interval`` of examples/pytorch-process-recovery.yaml; none
since issue 31, so the plan's command line is torch's default's),
the same with warm workers (``recovery.warm_workers``: the restarted workers are forked from a process
that imported torch; the kill comes once that process is ready), the vendor default
(``monitor_interval`` 5 s, RTO 表2) and torch's own default (no ``--monitor_interval``: 0.1 s in torch
2.13's run.py). The detection delay depends on where the kill falls in the agent's monitor tick, so
the kill phase is random: each round draws one delay, uniform in [0, 5 s) (a whole tick of the
slowest variant), and every variant of that round gets the *same* delay; the order of the variants
rotates and alternates from round to round. Each round also measures the floor: a fresh interpreter
importing torch and loading the checkpoint, which a restart without warm workers pays. Medians (and
quartiles, to judge their stability) of at least 10 rounds are printed, with the ratios against the
targets (plan <= 0.5 x default, plan <= 2 x floor; issue 27: warm <= 0.25 x default and <= 0.5 x
plan, new workers running their script within 0.2 s of the stop). The timeline of each run gives
the phases of its recovery (``resumable timeline``: fault -> detected -> workers stopped -> new
workers started -> process group ready -> first collective), printed as medians per variant.

usage: python benchmarks/recovery_cpu.py [--trials N] [--seed S] [--json]   (needs torch; run from the project)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "runtime")
TRAIN = os.path.join(FIXTURES, "train_ckpt.py")
sys.path.insert(0, FIXTURES)
sys.path.insert(0, ROOT)
from build_fixtures import cpu_profile  # noqa: E402  (the profile the runtime tests use)

from resumable import constants as C  # noqa: E402

EXAMPLE = os.path.join(ROOT, "examples", "pytorch-process-recovery.yaml")
DEFAULT_MONITOR_INTERVAL = C.MONITOR_INTERVAL_DEFAULT  # RTO 表2: "不配置该参数时默认为5秒"
TARGET_VS_DEFAULT, TARGET_VS_FLOOR = 0.5, 2.0
#: issue 27: warm workers against the vendor default and the plan without them; stop -> script running
TARGET_WARM_VS_DEFAULT, TARGET_WARM_VS_PLAN, TARGET_SCRIPT_AFTER_STOP = 0.25, 0.5, 0.2
#: the phases of the timeline, in order (resumable.runtime.timeline.PHASE_ORDER)
PHASES = ("detect", "stop", "start", "comm init", "first step", "whole")
FAULT_AT_STEP = 12
#: the kill lands uniformly in this span after FAULT_AT_STEP: one whole tick of the slowest variant
PHASE_SPAN = float(DEFAULT_MONITOR_INTERVAL)


def plan_monitor_interval() -> Optional[float]:
    """The --monitor_interval the example's plan passes to torchrun; None: not passed (torchrun's own default)."""
    from resumable.api import job_plan, load_plan
    from resumable.plan.model import TorchrunOptions

    config = job_plan(load_plan(EXAMPLE)).launcher.config
    return config.monitor_interval if isinstance(config, TorchrunOptions) else None


def monitor_label(interval: Optional[float]) -> str:
    return "no --monitor_interval" if interval is None else "monitor_interval %g" % interval


def jsonl(path: str) -> List[Dict[str, Any]]:
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                with contextlib.suppress(ValueError):  # a line being written
                    out.append(json.loads(line))
    return out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def phases(timeline: str) -> Dict[str, float]:
    """The phases of the first recovery in the launcher's timeline (what resumable timeline prints)."""
    from resumable.runtime.timeline import read_events, recoveries

    (first, *_) = recoveries(read_events(timeline))
    out = {}
    for row in first.phases():
        if row["seconds"] is not None:
            out[row["phase"]] = float(row["seconds"])
    if first.stopped_time is not None:
        out["stopped_at"] = first.stopped_time
    return out


def trial(
    monitor: Optional[float], torch_version: str, work: str, delay: float, warm: bool = False
) -> Dict[str, float]:
    profile = os.path.join(work, "profile.yaml")
    with open(profile, "w", encoding="utf-8") as handle:
        handle.write(cpu_profile(name="bench", max_restarts=3, monitor=monitor, torch=torch_version, warm=warm))
    logs, ckpt, progress = (os.path.join(work, n) for n in ("logs", "ckpt", "progress.jsonl"))
    env = dict(os.environ, RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for name in ("PYTHONPATH", "LD_PRELOAD", "RESUMABLE_PROFILE", "RESUMABLE_JOB"):
        env.pop(name, None)
    argv = [sys.executable, "-m", "resumable", "launch", "--profile", profile, "--log-dir", logs, "--"]
    argv += [TRAIN, "--ckpt", ckpt, "--progress", progress, "--steps", "100000", "--step-seconds", "0.05"]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300

        def ready() -> bool:
            if not any(e.get("event") == "step" and e["step"] >= FAULT_AT_STEP for e in jsonl(progress)):
                return False
            # warm workers: the kill once the warm process has imported torch (it is, long before, in a job)
            names = os.listdir(logs) if os.path.isdir(logs) else []
            return not warm or any(e.get("state") == "ready" for e in jsonl(os.path.join(logs, names[0])))

        while not ready():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the job did not reach step %d" % FAULT_AT_STEP)
            time.sleep(0.02)
        time.sleep(delay)
        timeline = os.path.join(logs, os.listdir(logs)[0])
        victim = next(e for e in jsonl(timeline) if e["event"] == "worker-start" and e["rank"] == 1)
        fault = time.time()
        os.kill(victim["pid"], signal.SIGKILL)
        while True:
            resumed = [e for e in jsonl(progress) if e.get("event") == "step" and e["restart"] >= 1]
            if resumed:
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the job did not resume")
            time.sleep(0.02)
        restart = next(e for e in jsonl(timeline) if e["event"] == "restart")
        while not any(e["event"] == "first-collective" and e["generation"] >= 1 for e in jsonl(timeline)):
            if time.monotonic() > deadline:
                raise RuntimeError("the launcher wrote no first collective of the restarted group")
            time.sleep(0.02)
        time.sleep(0.1)  # the last process's report
        measured = phases(timeline)
        # the new workers' scripts running: train_ckpt records when its module started (after the interpreter
        # and the start-up hook, before it imports torch)
        scripts = [e["started"] for e in jsonl(progress) if e.get("event") == "resume" and e["restart"] >= 1]
        result = {"recovery": resumed[0]["time"] - fault, "restart": restart["time"] - fault}
        if "stopped_at" in measured and scripts:
            result["script_after_stop"] = max(scripts) - measured.pop("stopped_at")
        measured.pop("stopped_at", None)
        result.update({"phase " + k: v for k, v in measured.items()})
        return result
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def floor(ckpt: str) -> float:
    began = time.time()
    out = subprocess.run([sys.executable, TRAIN, "--floor", "--ckpt", ckpt], check=True, stdout=subprocess.PIPE).stdout
    loaded = json.loads(out.decode().strip().splitlines()[-1])
    return float(loaded["finished"]) - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per setting (at least 10 for figures)")
    parser.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    parser.add_argument("--seed", type=int, default=None, help="seed of the kill delays (default: random)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    from importlib import metadata

    try:
        version = metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        print("torch is not installed (make test-venv installs torch==2.13.0)", file=sys.stderr)
        return 2
    plan_mi = plan_monitor_interval()
    settings: Dict[str, Optional[float]] = {
        "plan": plan_mi,
        "warm": plan_mi,
        "default": DEFAULT_MONITOR_INTERVAL,
        "torch": None,
    }
    results: Dict[str, List[Dict[str, float]]] = {name: [] for name in settings}
    floors: List[float] = []
    delays: List[float] = []
    load_before = os.getloadavg()
    began = time.time()
    names = list(settings)
    for i in range(args.trials):
        delay = rng.uniform(0.0, PHASE_SPAN)  # one kill phase for every variant of this round
        delays.append(delay)
        order = names[i % len(names) :] + names[: i % len(names)]
        if (i // len(names)) % 2:
            order.reverse()
        for name in order:
            with tempfile.TemporaryDirectory(prefix="recovery-bench-") as work:
                results[name].append(trial(settings[name], version, work, delay, warm=name == "warm"))
                if name == order[-1]:
                    floors.append(floor(os.path.join(work, "ckpt")))
        print(
            "round %d/%d (kill %.2f s after step %d): %s, floor %.2f s"
            % (
                i + 1,
                args.trials,
                delay,
                FAULT_AT_STEP,
                ", ".join("%s %.2f s" % (n, results[n][-1]["recovery"]) for n in order),
                floors[-1],
            ),
            file=sys.stderr,
        )

    def median(values: List[float]) -> float:
        return statistics.median(values) if values else float("nan")

    measures = ("recovery", "restart", "script_after_stop", *("phase " + p for p in PHASES))
    med = {k: {m: median([t[m] for t in v if m in t]) for m in measures} for k, v in results.items()}
    fl = statistics.median(floors)
    vs_default = med["plan"]["recovery"] / med["default"]["recovery"]
    vs_floor = med["plan"]["recovery"] / fl
    print(
        "recovery_cpu: torch %s, 2 workers (gloo), %d alternated trials per setting, %.0f s"
        % (version, args.trials, time.time() - began)
    )
    if args.trials < 10:
        print("  (fewer than 10 trials: the figures below are not meaningful)")
    print(
        "  load average before/after: %.1f / %.1f on %d CPUs"
        % (load_before[0], os.getloadavg()[0], os.cpu_count() or 0)
    )
    print("  median fault -> first resumed step (quartiles), same random kill phase per round:")
    labels = (
        ("plan", "plan (%s)" % monitor_label(plan_mi)),
        ("warm", "plan + warm workers"),
        ("default", "default (monitor_interval %d)" % DEFAULT_MONITOR_INTERVAL),
        ("torch", "torch default (no --monitor_interval)"),
    )
    for name, label in labels:
        m = med[name]
        values = [t["recovery"] for t in results[name]]
        q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0], values[0], values[0]]
        print(
            "    %-38s %6.2f s  [%.2f, %.2f]  (new workers started after %.2f s)"
            % (label, m["recovery"], q[0], q[2], m["restart"])
        )
    print("    %-36s %6.2f s   (fresh interpreter: import torch + load the checkpoint)" % ("floor", fl))
    print(
        "  plan / default = %.2f  (target <= %.1f: %s)"
        % (vs_default, TARGET_VS_DEFAULT, "met" if vs_default <= TARGET_VS_DEFAULT else "NOT met")
    )
    print(
        "  plan / floor   = %.2f  (target <= %.1f: %s)"
        % (vs_floor, TARGET_VS_FLOOR, "met" if vs_floor <= TARGET_VS_FLOOR else "NOT met")
    )
    print("  plan / torch default = %.2f" % (med["plan"]["recovery"] / med["torch"]["recovery"]))
    restart_ratio = med["plan"]["restart"] / med["default"]["restart"]
    print("  fault -> workers restarted only: plan / default = %.2f (the part --monitor_interval sets)" % restart_ratio)
    warm_default = med["warm"]["recovery"] / med["default"]["recovery"]
    warm_plan = med["warm"]["recovery"] / med["plan"]["recovery"]
    script = med["warm"]["script_after_stop"]
    print(
        "  warm / default = %.2f  (target <= %.2f: %s)"
        % (warm_default, TARGET_WARM_VS_DEFAULT, "met" if warm_default <= TARGET_WARM_VS_DEFAULT else "NOT met")
    )
    print(
        "  warm / plan    = %.2f  (target <= %.2f: %s)"
        % (warm_plan, TARGET_WARM_VS_PLAN, "met" if warm_plan <= TARGET_WARM_VS_PLAN else "NOT met")
    )
    print(
        "  warm: workers stopped -> new workers running their script %.3f s (target <= %.1f s: %s)"
        % (script, TARGET_SCRIPT_AFTER_STOP, "met" if script <= TARGET_SCRIPT_AFTER_STOP else "NOT met")
    )
    print("  median phases from the timeline (resumable timeline), seconds:")
    print("    %-38s %s" % ("", "  ".join("%10s" % p for p in PHASES)))
    for name, label in labels:
        print("    %-38s %s" % (label, "  ".join("%10.3f" % med[name]["phase " + p] for p in PHASES)))
    print(
        "    %-38s %s"
        % ("stop -> script running", "  ".join("%.3f (%s)" % (med[n]["script_after_stop"], n) for n, _ in labels))
    )
    if args.json:
        print(
            json.dumps(
                {
                    "settings": settings,
                    "trials": results,
                    "floors": floors,
                    "delays": delays,
                    "medians": med,
                    "floor": fl,
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
