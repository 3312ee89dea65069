"""Render at scale: CPU seconds of `resumable render` for a profile of 1, 64 and 300 jobs of 16
nodes each (issue 16, targets: 64 jobs under 0.5 s CPU, 300 jobs under 2 s, growth near linear).

Each size is rendered in a fresh process (``python -m resumable render``) so the figure includes
loading the profile, the rules, the plan, the builders and the YAML output, as a user sees it; CPU
time is the child's user + system time (``resource.getrusage``), so a busy machine changes the
wall time but less the figure; each size is rendered ``--repeat`` times (default 5) and the least
CPU time is the figure (the range is printed beside it: other work on the machine only adds to
it). ``--pure`` forces PyYAML's pure-Python loader and emitter
(RESUMABLE_PURE_YAML=1) for comparison. ``--profile`` prints the top of a cProfile run instead.

    python benchmarks/render_scale.py [--sizes 1,64,300] [--repeat 5] [--pure] [--profile N]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pytorch-process-recovery.yaml"


def profile_with(jobs: int, nodes: int = 16) -> Dict[str, Any]:
    """The process-recovery example with ``jobs`` copies of its job, ``nodes`` nodes each."""
    doc: Dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    template = doc["jobs"][0]
    doc["jobs"] = []
    for i in range(jobs):
        job = copy.deepcopy(template)
        job["name"] = "job-%03d" % i
        job["nodes"] = nodes
        doc["jobs"].append(job)
    return doc


#: The child: imports first (not counted), then CPU time of `resumable render` itself.
CHILD = (
    "import sys, time; from resumable import cli; import resumable.manifests, resumable.manifests.render; "
    "t = time.process_time(); rc = cli.main(sys.argv[1:]); "
    "sys.stderr.write('render-cpu %f\\n' % (time.process_time() - t)); sys.exit(rc)"
)


def profile_text(doc: Dict[str, Any]) -> str:
    """``doc`` as compact YAML that stays under the 256 KiB profile limit at 300 jobs: JSON (which
    is YAML) with the jobs' common image section written once and referred to by an alias (one
    section of 31 nodes, so 300 jobs stay under the loader's 10,000 alias nodes)."""
    image = json.dumps(doc["jobs"][0]["image"], separators=(",", ":"))
    jobs = []
    for i, job in enumerate(doc["jobs"]):
        rest = {k: v for k, v in job.items() if k != "image"}
        text = json.dumps(rest, separators=(",", ":"))
        jobs.append(text[:-1] + ',"image":' + ("&image " + image if i == 0 else "*image") + "}")
    head = json.dumps({k: v for k, v in doc.items() if k != "jobs"}, separators=(",", ":"))
    return head[:-1] + ',"jobs":[' + ",\n".join(jobs) + "]}\n"


def child_cpu(argv: List[str], env: Dict[str, str]) -> Tuple[float, float, float]:
    """(CPU seconds of the render, CPU seconds of the whole process, wall seconds) of one child
    process; exits with its stderr when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        sys.exit("render failed (rc %d): %s" % (proc.returncode, err))
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    render = float(err.rsplit("render-cpu ", 1)[1].split()[0])
    return render, total, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,64,300", help="job counts, comma-separated (default 1,64,300)")
    ap.add_argument("--nodes", type=int, default=16, help="nodes per job (default 16)")
    ap.add_argument("--repeat", type=int, default=5, help="renders per size; the least CPU time counts (default 5)")
    ap.add_argument("--pure", action="store_true", help="force the pure-Python YAML loader and emitter")
    ap.add_argument("--profile", type=int, metavar="JOBS", help="print a cProfile of one render of JOBS jobs")
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if args.pure:
        env["RESUMABLE_PURE_YAML"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        if args.profile:
            path = Path(tmp, "profile.yaml")
            path.write_text(profile_text(profile_with(args.profile, args.nodes)), encoding="utf-8")
            argv = [sys.executable, "-m", "cProfile", "-s", "cumulative", "-m", "resumable", "render", str(path)]
            proc = subprocess.run([*argv, "--out", str(Path(tmp, "out"))], env=env, capture_output=True, text=True)
            print("\n".join(proc.stdout.splitlines()[:60]))
            return proc.returncode
        from resumable.yamlio import backend

        print(
            "render_scale: %s, Python %s, %s, %d CPUs; YAML backend: %s"
            % (
                platform.machine(),
                platform.python_version(),
                platform.processor() or platform.system(),
                os.cpu_count() or 0,
                "pure Python (forced)" if args.pure else backend(),
            )
        )
        results: List[Tuple[int, float, int]] = []
        for jobs in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp, "profile-%d.yaml" % jobs)
            path.write_text(profile_text(profile_with(jobs, args.nodes)), encoding="utf-8")
            out = Path(tmp, "out-%d" % jobs)
            runs = [child_cpu(["render", str(path), "--out", str(out)], env) for _ in range(max(1, args.repeat))]
            cpu, total, wall = min(runs)
            files = len(list(out.rglob("*.yaml")))
            size = sum(f.stat().st_size for f in out.iterdir())
            print(
                "%4d jobs x %d nodes: %6.2f s CPU render (%.2f to %.2f in %d runs; %5.2f s CPU with start-up and "
                "imports, %5.2f s wall), %d files, %.1f MB"
                % (jobs, args.nodes, cpu, cpu, max(r[0] for r in runs), len(runs), total, wall, files, size / 1e6)
            )
            results.append((jobs, cpu, size))
        if len(results) >= 2:
            (j0, c0, s0), (j1, c1, s1) = results[-2], results[-1]
            print(
                "growth %d->%d jobs: CPU x%.2f, output x%.2f for jobs x%.2f"
                % (j0, j1, c1 / c0 if c0 else 0.0, s1 / s0 if s0 else 0.0, j1 / j0)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
