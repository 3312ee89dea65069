"""``resumable drill``: inject faults into a running job on purpose and measure its recovery.

Run inside a training pod (``kubectl exec POD -- resumable drill ...``) or beside a local
``resumable launch``. The drill finds the launcher of the job in this pod through its event socket
(``$TMPDIR/resumable-launch-*/events.sock``, the launcher's private runtime directory), asks it for
its state, and asks *it* to inject the fault, so the drill itself signals no process and can name
none by mistake (a reused pid, a process of another job):

- ``kill``: the chosen local rank's training process gets a signal (SIGKILL by default);
- ``hang``: it gets SIGSTOP, so the launcher's heartbeat finds it hung after the plan's hang timeout
  and kills it;
- ``exit``: it exits with a code (its start-up hook's command socket: ``os._exit`` from the heartbeat
  thread, so a main thread blocked in a collective exits at once).

Each of the N rounds waits a random moment (uniform in ``--within`` seconds) once the job trains
steadily (every training process past its first collective, no fault being recovered), injects the
fault, and waits until the job trains steadily again in a later generation, at most ``--timeout``
seconds. The phases of that recovery are then read from the job's recovery timeline (the same
figures as ``resumable timeline``) and printed against the plan's budget, then the spread over the
N rounds.

Refused (exit 2, naming why) before any fault: no launcher of this job in the pod, a launcher not
started by torchrun or torch_npu_run, N above the restarts the job has left (torchrun's
``--max_restarts`` less the restarts done), a job not in steady training. A round that does not
come back within the timeout is a failed drill (exit 1, the rounds so far reported).
"""

from __future__ import annotations

import glob
import os
import random
import socket
import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import jsonio
from ..errors import ResumableError, escape_controls
from ..plan.model import JobPlan
from .drill_server import FAULTS, SIGNALS
from .launch import RUNTIME_PREFIX, SOCKET_NAME
from .timeline import PHASE_ORDER, Recovery, phase_lines, read_events, recoveries

#: seconds the drill waits for a launcher's answer
ANSWER_SECONDS = 2.0
#: runtime directories looked at, at most (a TMPDIR full of them is not read for ever)
MAX_LAUNCHERS = 64
#: seconds between looks at a recovering job
POLL_SECONDS = 0.25
FIX = (
    "Run it in the training container of the job (kubectl exec POD -- resumable drill ...), or beside resumable launch."
)


def _valid_status(item: Any) -> Optional[Dict[str, Any]]:
    """A launcher's status, its fields of the types the drill reads, else None (not a launcher)."""
    if not isinstance(item, dict) or item.get("ok") is not True or not isinstance(item.get("status"), dict):
        return None
    status: Dict[str, Any] = item["status"]
    ints = ("launcher_pid", "generation")
    optional_ints = ("max_restarts", "restart_count")
    if not all(isinstance(status.get(k), int) and not isinstance(status.get(k), bool) for k in ints):
        return None
    for key in optional_ints:
        value = status.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return None
    if not isinstance(status.get("job"), str) or not isinstance(status.get("timeline"), str):
        return None
    if not isinstance(status.get("steady"), bool) or not isinstance(status.get("workers"), list):
        return None
    workers = [w for w in status["workers"] if isinstance(w, dict) and isinstance(w.get("local_rank"), int)]
    status["workers"] = workers
    if not isinstance(status.get("why_not"), (str, type(None))) or not isinstance(status.get("launcher"), str):
        return None
    return status


class Launcher:
    """One launcher's event socket, asked through a socket of the drill's own in the abstract
    namespace (nothing is written)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def ask(self, request: Dict[str, Any], timeout: float = ANSWER_SECONDS) -> Optional[Dict[str, Any]]:
        """The launcher's answer, or None: no launcher there, no answer in time, not an answer."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind("\0resumable-drill-%d-%s" % (os.getpid(), os.urandom(6).hex()))
            sock.settimeout(timeout)
            sock.sendto(jsonio.dumps(dict(request, event="drill"), indent=None).encode("utf-8"), self.path)
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                sock.settimeout(max(0.01, end - time.monotonic()))
                data = sock.recv(1 << 20)
                try:
                    answer = jsonio.loads(data.decode("utf-8"))
                except ValueError:
                    continue
                if isinstance(answer, dict) and isinstance(answer.get("ok"), bool):
                    return answer
            return None
        except (OSError, UnicodeDecodeError):
            return None
        finally:
            sock.close()

    def status(self) -> Optional[Dict[str, Any]]:
        return _valid_status(self.ask({"op": "status"}))


def find_launchers(tmpdir: Optional[str] = None) -> List[Tuple[Launcher, Dict[str, Any]]]:
    """Every launcher answering under TMPDIR, with its status."""
    pattern = os.path.join(glob.escape(tmpdir or tempfile.gettempdir()), RUNTIME_PREFIX + "*", SOCKET_NAME)
    out = []
    for path in sorted(glob.glob(pattern))[:MAX_LAUNCHERS]:
        launcher = Launcher(path)
        status = launcher.status()
        if status is not None:
            out.append((launcher, status))
    return out


def choose(job: JobPlan, pid: Optional[int], tmpdir: Optional[str] = None) -> Tuple[Launcher, Dict[str, Any]]:
    """The launcher of ``job`` in this pod (``pid``: that launcher), or a user error naming why not."""
    where = os.path.join(tmpdir or tempfile.gettempdir(), RUNTIME_PREFIX + "*")
    found = find_launchers(tmpdir)
    mine = [(one, s) for one, s in found if s["job"] == job.name and (pid is None or s["launcher_pid"] == pid)]
    if not mine:
        others = sorted({"%s (pid %d)" % (s["job"], s["launcher_pid"]) for _, s in found})
        raise ResumableError(
            "no launcher of job %s%s runs here (%s: %s)"
            % (
                job.name,
                "" if pid is None else " with pid %d" % pid,
                where,
                "launchers of " + ", ".join(others) if others else "none answered",
            ),
            "resumable drill",
            FIX,
        )
    if len(mine) > 1:
        pids = ", ".join(str(s["launcher_pid"]) for _, s in mine)
        raise ResumableError(
            "more than one launcher of job %s runs here (pids %s)" % (job.name, pids),
            "resumable drill",
            "Name one with --launcher-pid.",
        )
    return mine[0]


def check_budget(status: Dict[str, Any], count: int) -> None:
    """N faults need N restarts left (each fault costs the agent one, a hang too)."""
    if status["launcher"] == "msrun":
        raise ResumableError(
            "job %s is started by msrun, whose restarts the plan does not bound (no --max_restarts)" % status["job"],
            "resumable drill",
            "Drill PyTorch jobs (torchrun, torch_npu_run).",
        )
    limit = status["max_restarts"]
    used = status["restart_count"] or 0
    left = (0 if limit is None else limit) - used
    if count > left:
        raise ResumableError(
            "%d fault%s would exceed the job's max restarts: %s, %d done, %d left%s"
            % (
                count,
                "" if count == 1 else "s",
                "0 (torchrun's default; the plan passes no --max_restarts)" if limit is None else limit,
                used,
                max(0, left),
                "" if left > 0 else ": one more fault ends the job",
            ),
            "--count %d" % count,
            "Drill fewer faults, or set recovery.max_restarts in the profile (it is the job's --max_restarts).",
        )


def not_steady(status: Dict[str, Any]) -> ResumableError:
    return ResumableError(
        "job %s is not in steady training: %s" % (status["job"], status.get("why_not") or "unknown"),
        "resumable drill",
        "Drill once every training process has run its first collective (resumable timeline shows first-collective).",
    )


# --- one round -----------------------------------------------------------------------------------------------


def _wait_steady(launcher: Launcher, after: Optional[int], timeout: float) -> Optional[Dict[str, Any]]:
    """The launcher's status once it trains steadily (in a generation later than ``after``), or None."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = launcher.status()
        if status is not None and status["steady"] and (after is None or status["generation"] > after):
            return status
        time.sleep(POLL_SECONDS)
    return None


def _recovery_of(path: str, injected: float) -> Optional[Recovery]:
    """The first recovery of the job's timeline whose fault came after the injection."""
    for r in recoveries(read_events(path)):
        if r.fault_time >= injected - 0.5:
            return r
    return None


def run_round(
    launcher: Launcher, request: Dict[str, Any], within: float, timeout: float, rng: random.Random
) -> Dict[str, Any]:
    status = _wait_steady(launcher, None, timeout)
    if status is None:
        return {"recovered": False, "error": "the job did not train steadily within %.0f s" % timeout}
    workers = status["workers"]
    local = request.get("local_rank")
    if local is None:
        local = rng.choice(sorted(w["local_rank"] for w in workers))
    delay = rng.uniform(0.0, within)
    time.sleep(delay)
    answer = launcher.ask(dict(request, op="inject", local_rank=local))
    if answer is None or not answer.get("ok"):
        why = "no answer" if answer is None else escape_controls(str(answer.get("error")))
        return {"recovered": False, "local_rank": local, "delay": delay, "error": "not injected: %s" % why}
    injected = answer.get("time")
    injected = float(injected) if isinstance(injected, (int, float)) and not isinstance(injected, bool) else time.time()
    generation = answer.get("generation") if isinstance(answer.get("generation"), int) else status["generation"]
    back = _wait_steady(launcher, generation, timeout)
    out: Dict[str, Any] = {
        "local_rank": local,
        "rank": answer.get("rank") if isinstance(answer.get("rank"), int) else None,
        "pid": answer.get("pid") if isinstance(answer.get("pid"), int) else None,
        "delay": round(delay, 3),
        "injected_at": injected,
        "recovered": back is not None,
    }
    if back is None:
        out["error"] = "the job did not train steadily again within %.0f s" % timeout
    recovery = _recovery_of(status["timeline"], injected)
    if recovery is not None:
        out["recovery"] = recovery
    return out


# --- the report --------------------------------------------------------------------------------------------------


def spread(rounds: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per phase over the rounds: min, median, max of what was measured, against the budget."""
    out = []
    for name in PHASE_ORDER:
        values: List[float] = []
        budget: Optional[float] = None
        for r in rounds:
            recovery = r.get("recovery")
            if recovery is None:
                continue
            row = next(p for p in recovery.phases() if p["phase"] == name)
            if row["seconds"] is not None:
                values.append(row["seconds"])
            budget = row["budget_seconds"] if row["budget_seconds"] is not None else budget
        item: Dict[str, Any] = {"phase": name, "rounds": len(values), "budget_seconds": budget}
        if values:
            item.update(min=min(values), median=statistics.median(values), max=max(values))
            item["within"] = None if budget is None else max(values) <= budget
        out.append(item)
    return out


def _plain(r: Dict[str, Any]) -> Dict[str, Any]:
    out = {k: v for k, v in r.items() if k != "recovery"}
    recovery = r.get("recovery")
    if isinstance(recovery, Recovery):
        out["how"] = recovery.how
        out["level"] = recovery.level
        out["generation"] = recovery.generation
        out["phases"] = recovery.phases()
    return out


def to_json(
    job: str, status: Dict[str, Any], fault: Dict[str, Any], rounds: Sequence[Dict[str, Any]]
) -> Dict[str, Any]:
    return {
        "job": job,
        "launcher_pid": status["launcher_pid"],
        "timeline": status["timeline"],
        "fault": fault,
        "rounds": [_plain(r) for r in rounds],
        "spread": spread(rounds),
    }


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else "%.2f s" % value


def render(job: str, status: Dict[str, Any], fault: Dict[str, Any], rounds: Sequence[Dict[str, Any]]) -> str:
    what = fault["fault"]
    if "signal" in fault:
        what += " %s" % fault["signal"]
    elif "code" in fault:
        what += " with code %d" % fault["code"]
    out = [
        "drill of job %s (launcher pid %d, timeline %s): %s, %d round%s"
        % (
            escape_controls(job),
            status["launcher_pid"],
            escape_controls(status["timeline"]),
            what,
            len(rounds),
            "" if len(rounds) == 1 else "s",
        )
    ]
    for number, r in enumerate(rounds, 1):
        head = "round %d: local rank %s (rank %s, pid %s), %.2f s after steady training" % (
            number,
            r.get("local_rank", "-"),
            r.get("rank", "-"),
            r.get("pid", "-"),
            r.get("delay", 0.0),
        )
        recovery = r.get("recovery")
        if isinstance(recovery, Recovery):
            head += ": %s restart, level %s" % (recovery.how or "no", escape_controls(str(recovery.level)))
        if not r.get("recovered"):
            head += ": NOT RECOVERED (%s)" % escape_controls(str(r.get("error")))
        out.append(head)
        if isinstance(recovery, Recovery):
            out.extend(phase_lines(recovery))
    out.append("spread over the rounds (min / median / max) against the budget:")
    for item in spread(rounds):
        budget = "" if item["budget_seconds"] is None else "budget %s" % _fmt(item["budget_seconds"])
        if item.get("within") is not None:
            budget += " (within)" if item["within"] else " (OVER)"
        out.append(
            (
                "    %-12s %-30s %s"
                % (
                    item["phase"],
                    "%s / %s / %s" % (_fmt(item.get("min")), _fmt(item.get("median")), _fmt(item.get("max"))),
                    budget,
                )
            ).rstrip()
        )
    return "\n".join(out) + "\n"


def fault_request(fault: str, signal_name: str, code: int) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """What the launcher is asked to inject, and how the report names it; checked (a user error names
    the option)."""
    if fault not in FAULTS:
        raise ResumableError("is not a fault", "--fault %s" % escape_controls(fault), "Choose kill, hang or exit.")
    if fault == "kill":
        names = {s.name: int(s) for s in SIGNALS}
        upper = signal_name.upper()
        name = upper if upper.startswith("SIG") else "SIG" + upper
        if name not in names:
            raise ResumableError(
                "is not a signal a drill kills with (each of these ends a process by default)",
                "--signal %s" % escape_controls(signal_name),
                "Use one of %s." % ", ".join(sorted(names)),
            )
        return {"fault": fault, "signal": names[name]}, {"fault": fault, "signal": name}
    if fault == "exit":
        if not 1 <= code <= 255:
            raise ResumableError("is not an exit code from 1 to 255 (0 is no fault)", "--code %d" % code, "Pick 1-255.")
        return {"fault": fault, "code": code}, {"fault": fault, "code": code}
    return {"fault": fault}, {"fault": fault}
