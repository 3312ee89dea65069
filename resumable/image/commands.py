"""The image subcommands that build the training image from outside it: ``image context`` (the build
context) and ``image wheel-deps`` (the public requirements of the vendor wheels, run by the recipe)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from ..api import job_plan, load_plan
from ..errors import ResumableError, shown, text_problem

EXIT_OK = 0


def cmd_context(args: argparse.Namespace) -> int:
    from .context import build_commands, prepare_context

    plan = load_plan(args.profile)
    why = text_problem(os.path.abspath(args.out)) if args.out else None
    if why is not None:  # the build line below would not be one shell command
        raise ResumableError(
            "%s, so the podman build line cannot name it" % why,
            "--out %s" % shown(args.out),
            "Name a directory without control characters, in UTF-8.",
        )
    ctx = prepare_context(plan, args.job, args.out)
    job = job_plan(plan, args.job)
    print("build context for job %s: %s (wheels: %s)" % (job.name, ctx.path, ", ".join(ctx.wheels) or "none"))
    for argv in build_commands(plan, job, ctx, args.builder):
        print(" ".join(shlex.quote(a) for a in argv))
    if not job.image.pullable:
        print(
            "note: %s is a local name; the job's pods run it only on nodes that have it loaded. Set image.registry "
            "(or image.name) in the profile to push it where the nodes pull from." % job.image.reference,
            file=sys.stderr,
        )
    return EXIT_OK


def cmd_wheel_deps(args: argparse.Namespace) -> int:
    from .wheels import public_requirements

    directory = args.dir
    if not os.path.isdir(directory):
        raise ResumableError("is not a directory", directory, "Name the wheels/ directory of the build context.")
    paths = sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".whl"))
    for req in public_requirements(paths):
        print(req)
    return EXIT_OK


def register(isub: Any) -> None:
    """``image context`` and ``image wheel-deps`` on the ``image`` command's subparsers."""
    cx = isub.add_parser("context", help="write the image build context (Dockerfile, wheels, resumable, profile)")
    cx.add_argument("profile", metavar="PROFILE")
    cx.add_argument("--job", metavar="NAME")
    cx.add_argument("--out", required=True, metavar="DIR")
    cx.add_argument(
        "--builder",
        choices=["podman", "docker"],
        default="podman",
        help="the tool of the printed build and push lines (docker: docker buildx build --load)",
    )
    cx.set_defaults(func=cmd_context)
    wd = isub.add_parser("wheel-deps", help="print the public requirements of the vendor wheels in DIR")
    wd.add_argument("dir", metavar="DIR")
    wd.set_defaults(func=cmd_wheel_deps)
