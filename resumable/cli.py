"""Command line: ``resumable validate|plan|schema|render|docs``; the runtime commands (``launch``,
``doctor``, ``image``) are registered by :mod:`resumable.runtime`.

Exit codes: 0 success, 2 invalid input (unreadable file, bad YAML, schema error, rule errors, or
warnings with --strict, an output place that may not be written), 3 internal error, 130 / 143
after Ctrl-C / SIGTERM (once what was being written is cleaned up). Problems are printed on stderr
as one paragraph each, never as a traceback (set RESUMABLE_DEBUG=1 to see one for an internal
error); user values in them are shortened and their control characters escaped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Sequence, TextIO

import yaml

from . import __version__
from .api import counts, failing, load_plan
from .binding import json_schema
from .errors import ResumableError, for_people, shown
from .fileio import Terminated
from .plan import build_plan
from .plan.text import render_text
from .profile import Profile, load_profile
from .rules import format_violation
from .rules.base import Violation

EXIT_OK, EXIT_INVALID, EXIT_INTERNAL = 0, 2, 3


def _print_violations(violations: Sequence[Violation], out: TextIO) -> None:
    for v in violations:
        print("  " + for_people(format_violation(v)), file=out)


def cmd_validate(args: argparse.Namespace) -> int:
    """Every profile is checked (one bad file does not hide the others); findings go to stderr."""
    worst = EXIT_OK
    for path in args.profiles:
        try:
            profile = load_profile(path)
        except ResumableError as exc:
            print("INVALID %s" % exc, file=sys.stderr)
            worst = EXIT_INVALID
            continue
        plan = build_plan(profile, path)
        if failing(plan.violations, args.strict):
            print("INVALID %s: %s" % (path, counts(plan.violations)), file=sys.stderr)
            worst = EXIT_INVALID
        else:
            print("OK %s: %s" % (path, counts(plan.violations)))
        _print_violations(plan.violations, sys.stderr)
        for note in plan.notes:
            print(for_people("  NOTE %s (source: %s)" % (note.text, note.source)), file=sys.stderr)
    return worst


def cmd_plan(args: argparse.Namespace) -> int:
    plan = load_plan(args.profile, args.strict)
    if args.format == "json":
        print(json.dumps(plan.to_dict(), indent=2, ensure_ascii=False))
    elif args.format == "yaml":
        print(yaml.safe_dump(plan.to_dict(), sort_keys=False, allow_unicode=True), end="")
    else:
        print(render_text(plan), end="")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    schema = json_schema(Profile, "resumable profile")
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return EXIT_OK


def _image_overrides(items: Sequence[str]) -> Dict[str, str]:
    images: Dict[str, str] = {}
    for item in items:
        component, sep, ref = item.partition("=")
        if not sep or not component or not ref:
            raise ResumableError(
                "is not COMPONENT=IMAGE",
                "--image %s" % shown(item),
                "Write e.g. --image clusterd=registry.example.com/mindx/clusterd:v7.3.0",
            )
        images[component] = ref
    from .manifests.settings import check_images

    return check_images(images)


def cmd_render(args: argparse.Namespace) -> int:
    from .fileio import check_replaceable, output_path

    images = _image_overrides(args.image)
    # A target that would be refused is refused before any work (write_stack checks again).
    check_replaceable(output_path(args.out), args.out)
    plan = load_plan(args.profile, args.strict)
    from .manifests import build_deployment, check_supported
    from .manifests.render import write_stack

    check_supported(plan.scheduler)
    objects = build_deployment(plan, crd_sources=args.crd_source or None, images=images or None).objects()
    written = write_stack(objects, args.out)
    print("wrote %d objects to %s" % (len(written), args.out))
    return EXIT_OK


def cmd_docs(args: argparse.Namespace) -> int:
    from .docsgen import write_docs

    changed = write_docs(args.out, check=args.check)
    if args.check and changed:
        print("out of date: %s (run `resumable docs`)" % ", ".join(changed), file=sys.stderr)
        return EXIT_INVALID
    for name in changed:
        print("wrote %s" % name)
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="resumable",
        description="Validate a resumable-training profile and plan every layer from it.",
    )
    p.add_argument("--version", action="version", version="resumable " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    v = sub.add_parser("validate", help="check profiles against every rule (exit 2 when invalid)")
    v.add_argument("profiles", nargs="+", metavar="PROFILE")
    v.add_argument("--strict", action="store_true", help="warnings fail too")
    v.set_defaults(func=cmd_validate)

    pl = sub.add_parser("plan", help="print everything the profile implies")
    pl.add_argument("profile", metavar="PROFILE")
    pl.add_argument("--format", choices=["text", "json", "yaml"], default="text")
    pl.add_argument("--strict", action="store_true", help="warnings fail too")
    pl.set_defaults(func=cmd_plan)

    s = sub.add_parser("schema", help="print the profile's JSON Schema")
    s.set_defaults(func=cmd_schema)

    r = sub.add_parser(
        "render", help="write the whole deployment (scheduling stack, storage, image build spec, jobs) as YAML"
    )
    r.add_argument("profile", metavar="PROFILE")
    r.add_argument("--out", required=True, metavar="DIR")
    r.add_argument(
        "--crd-source",
        action="append",
        default=[],
        metavar="FILE",
        help="deploy the CRDs verbatim from this release YAML (your copy of the release package); repeatable",
    )
    r.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="COMPONENT=IMAGE",
        help="override one component's image, e.g. clusterd=registry/clusterd:v7.3.0; repeatable",
    )
    r.add_argument("--strict", action="store_true", help="warnings fail too")
    r.set_defaults(func=cmd_render)

    d = sub.add_parser("docs", help="regenerate docs/rules.md, docs/profile.md and docs/sources.md from the code")
    d.add_argument("--out", default="docs", metavar="DIR")
    d.add_argument("--check", action="store_true", help="only report files that are out of date")
    d.set_defaults(func=cmd_docs)

    from .runtime import add_commands

    add_commands(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except ResumableError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; nothing was left half-written", file=sys.stderr)
        return 130
    except Terminated as exc:
        print("terminated by signal %d; nothing was left half-written" % exc.signum, file=sys.stderr)
        return 128 + exc.signum
    except Exception as exc:  # an internal error still gets one paragraph, not a traceback
        if os.environ.get("RESUMABLE_DEBUG"):
            raise
        print(
            "internal error: %s: %s. This is a bug in resumable; rerun with RESUMABLE_DEBUG=1 for the "
            "traceback and report it." % (type(exc).__name__, exc),
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
