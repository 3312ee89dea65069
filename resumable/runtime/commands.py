"""The runtime subcommands: launch, doctor, timeline, drill, and ``image patch-torchrun`` (the build step that
runs inside the image, on the torch installed there; the other ``image`` commands are :mod:`resumable.image`'s)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional, Tuple

from .. import constants as C
from .. import jsonio
from ..api import job_plan, load_plan
from ..errors import ResumableError
from ..options import add_format
from ..plan.model import JobPlan, Plan

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def default_profile() -> str:
    return os.environ.get(C.ENV_RESUMABLE_PROFILE) or C.PROFILE_PATH


def load_profile(profile: Optional[str]) -> Tuple[str, Plan]:
    """The plan of --profile, else of $RESUMABLE_PROFILE (default /etc/resumable/profile.yaml, where
    job templates mount it and the node roles install it)."""
    path = profile or default_profile()
    if not os.path.exists(path):
        raise ResumableError(
            "no profile here",
            path,
            "Pass --profile FILE or set %s (job templates mount the profile at %s and set %s)."
            % (C.ENV_RESUMABLE_PROFILE, C.PROFILE_PATH, C.ENV_RESUMABLE_JOB),
        )
    return path, load_plan(path)


def load_job(profile: Optional[str], job: Optional[str]) -> Tuple[str, Plan, JobPlan]:
    """The plan of the job this container runs: --profile/--job (see :func:`load_profile`), else
    $RESUMABLE_JOB."""
    path, plan = load_profile(profile)
    return path, plan, job_plan(plan, job or os.environ.get(C.ENV_RESUMABLE_JOB) or None)


def _profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        metavar="FILE",
        help="the profile (default: $%s, else %s)" % (C.ENV_RESUMABLE_PROFILE, C.PROFILE_PATH),
    )
    p.add_argument(
        "--job", metavar="NAME", help="the job (default: $%s, else the profile's only job)" % C.ENV_RESUMABLE_JOB
    )


def problem_subject(problem: str) -> str:
    """What a dry-run problem is about (its first word, ``RANK`` of ``RANK='00' is not ...``): the error
    names each input without repeating the text the marked line already gives."""
    first = problem.split(" ", 1)[0]
    return first.split("=", 1)[0] or problem[:40]


def cmd_launch(args: argparse.Namespace) -> int:
    from .launch import build_spec, render_dry_run

    path, _, job = load_job(args.profile, args.job)
    argv: List[str] = list(args.script)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not args.dry_run:
        from .podenv import wait_for_ranktable

        wait_for_ranktable(job, os.environ)  # a Volcano Job's pods start before its RankTable is complete
    spec = build_spec(job, os.environ, argv, args.log_dir)
    if args.dry_run:
        sys.stdout.write(render_dry_run(spec, path))
        if spec.problems:
            count = len(spec.problems)
            subjects = ", ".join(dict.fromkeys(problem_subject(p) for p in spec.problems))
            print(
                "error: %s: a launch here would fail (%d problem%s, with %s: the lines marked `problem` above). "
                "Fix them." % (path, count, "" if count == 1 else "s", subjects),
                file=sys.stderr,
            )
            return EXIT_INVALID
        return EXIT_OK
    if spec.problems:
        raise ResumableError(
            "cannot launch job %s: %s" % (job.name, "; ".join(spec.problems)),
            path,
            "`resumable launch --dry-run` shows everything the launch would do.",
        )
    from .supervisor import run

    return run(spec)


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import failed, render_table, run_checks, to_json

    if args.node:
        from .node_doctor import run_node_checks

        path, plan = load_profile(args.profile)
        roles = sorted(set(args.node))
        name = "node (%s)" % ", ".join(roles)
        checks = run_node_checks(plan.nodes, roles)
    else:
        path, _, job = load_job(args.profile, args.job)
        name = job.name
        checks = run_checks(job, os.environ)
    if args.format == "json":
        print(jsonio.dumps(to_json(name, path, checks), sys.stdout))
    else:
        sys.stdout.write(render_table(name, path, checks))
    return EXIT_FAILED if failed(checks) else EXIT_OK


def cmd_timeline(args: argparse.Namespace) -> int:
    from .timeline import read_events, render, to_json

    events = read_events(args.file)
    if args.format == "json":
        print(jsonio.dumps(to_json(args.file, events), sys.stdout))
    else:
        sys.stdout.write(render(args.file, events, show_events=args.events))
    return EXIT_OK


def cmd_drill(args: argparse.Namespace) -> int:
    import random

    from .drill import check_budget, choose, fault_request, not_steady, render, run_round, to_json

    _, _, job = load_job(args.profile, args.job)
    if args.count < 1:
        raise ResumableError("is not a number of faults", "--count %d" % args.count, "Give at least 1.")
    if not 0 <= args.within <= 3600:
        raise ResumableError(
            "is not from 0 to 3600 seconds", "--within %g" % args.within, "Give the window in seconds."
        )
    if args.timeout is not None and not 1 <= args.timeout <= 86400:
        raise ResumableError("is not from 1 to 86400 seconds", "--timeout %g" % args.timeout, "Give seconds.")
    request, fault = fault_request(args.fault, args.signal, args.code)
    launcher, status = choose(job, args.launcher_pid)
    check_budget(status, args.count)
    if not status["steady"]:
        raise not_steady(status)
    local_ranks = sorted(w["local_rank"] for w in status["workers"])
    if args.local_rank is not None:
        if args.local_rank not in local_ranks:
            raise ResumableError(
                "no training process of local rank %d runs here (local ranks %s)"
                % (args.local_rank, ", ".join(map(str, local_ranks)) or "none"),
                "--local-rank %d" % args.local_rank,
                "Pick one of the pod's local ranks.",
            )
        request["local_rank"] = args.local_rank
    # each round: the job's own bounds for a recovery (the hang timeout for a hang, then the start timeout)
    timeout = args.timeout or float(job.launcher.start_timeout + job.launcher.hang_timeout)
    rng = random.Random(args.seed)
    rounds = []
    for _ in range(args.count):
        result = run_round(launcher, request, args.within, timeout, rng)
        rounds.append(result)
        if not result["recovered"]:
            break
    if args.format == "json":
        print(jsonio.dumps(to_json(job.name, status, fault, rounds), sys.stdout))
    else:
        sys.stdout.write(render(job.name, status, fault, rounds))
    done = len(rounds) == args.count and all(r["recovered"] for r in rounds)
    return EXIT_OK if done else EXIT_FAILED


def cmd_patch_torchrun(args: argparse.Namespace) -> int:
    from .torchrun_patch import patch, undo

    _, _, job = load_job(args.profile, args.job)
    line, anchor = job.image.runpy_patch, job.image.runpy_anchor
    if not line or not anchor:
        print("job %s needs no run.py patch (no TaskD from 7.3.0, no Elastic Agent before it)" % job.name)
        return EXIT_OK
    result = undo(line) if args.undo else patch(line, anchor)
    print(result.message)
    return EXIT_OK


def register(sub: Any) -> None:
    la = sub.add_parser(
        "launch",
        help="start training in the container as the plan says (TaskD Manager, LD_PRELOAD, launcher, timeline)",
        description="Start the training of one job: the plan's environment, LD_PRELOAD of libtaskd.so and the "
        "TaskD Manager where the plan puts them, the launcher with the plan's arguments; SIGTERM/SIGINT are "
        "forwarded; every fault and restart goes to the recovery timeline. Exits with the training's exit code.",
    )
    _profile_args(la)
    la.add_argument("--dry-run", action="store_true", help="print the environment and commands, start nothing")
    la.add_argument(
        "--log-dir",
        metavar="DIR",
        help="job log directory (default: the plan's launcher.log_dir; `resumable plan` shows it)",
    )
    la.add_argument(
        "script", nargs=argparse.REMAINDER, metavar="-- SCRIPT ARGS", help="training script (default: the plan's)"
    )
    la.set_defaults(func=cmd_launch)

    do = sub.add_parser("doctor", help="check this container or node against the plan (exit 1 on a failure)")
    _profile_args(do)
    add_format(do, "text", "json")
    do.add_argument(
        "--node",
        action="append",
        choices=["compute", "management"],
        help="check this host as a cluster node of that role (repeat for both) instead of a training container",
    )
    do.set_defaults(func=cmd_doctor)

    tl = sub.add_parser("timeline", help="measured fault-to-restart durations of a recovery timeline vs the budget")
    tl.add_argument("file", metavar="FILE")
    add_format(tl, "text", "json")
    tl.add_argument("--events", action="store_true", help="list every event too")
    tl.set_defaults(func=cmd_timeline)

    dr = sub.add_parser(
        "drill",
        help="inject faults into this pod's running job on purpose and print each recovery's phases vs the budget",
        description="Inside a training pod (kubectl exec POD -- resumable drill ...) or beside resumable launch: "
        "asks the job's launcher to inject a fault into a local rank at a random moment once the job trains "
        "steadily (kill with a signal, a hang by SIGSTOP, an exit with a code), waits until it trains again, N "
        "times, and prints the measured phases of each recovery against the plan's budget and their spread. "
        "Exit 2 when no launcher of the job runs here, N exceeds the restarts left or the job is not in steady "
        "training; exit 1 when a recovery did not come back within the timeout.",
    )
    _profile_args(dr)
    dr.add_argument("--fault", choices=["kill", "hang", "exit"], default="kill")
    dr.add_argument("--signal", default="SIGKILL", metavar="NAME", help="the signal of --fault kill (default SIGKILL)")
    dr.add_argument("--code", type=int, default=1, metavar="N", help="the exit code of --fault exit (default 1)")
    dr.add_argument("--local-rank", type=int, metavar="N", help="the local rank to hit (default: a random one)")
    dr.add_argument("--count", type=int, default=1, metavar="N", help="faults, one after the other (default 1)")
    dr.add_argument(
        "--within",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="the fault comes at a random moment this many seconds at most after steady training (default 5)",
    )
    dr.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long each recovery may take (default: the plan's start_timeout + hang_timeout)",
    )
    dr.add_argument("--seed", type=int, help="seed of the random moments and ranks")
    dr.add_argument("--launcher-pid", type=int, metavar="PID", help="the launcher to drill when more than one runs")
    add_format(dr, "text", "json")
    dr.set_defaults(func=cmd_drill)


def register_image_steps(isub: Any) -> None:
    """``resumable image patch-torchrun``: the image build's step that runs inside the image."""
    pt = isub.add_parser("patch-torchrun", help="put the plan's import line into torch/distributed/run.py exactly once")
    _profile_args(pt)
    pt.add_argument("--undo", action="store_true", help="remove the line again")
    pt.set_defaults(func=cmd_patch_torchrun)
