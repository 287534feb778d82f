"""
The fault loop: ``kill -9`` at random moments of ``pin upgrade`` (of a set whose snapshot moves with the lock, and of
one without configs), ``pin new`` (which records the new set's snapshot) and ``pin sync``, and at every write of the
pin.toml/pin.snapshot.toml pair; after each kill, ``pin check --offline`` must pass (every command first completes
what a killed one left) and the next commands must leave no temporary file behind.

    python tests/fault_loop.py [--trials 50] [--seed 13]

Needs the setup's real Sisyphus + i6_core (``pin sync``), like the tests. Prints its figures; exit 1 when a trial
leaves a pair that the next command does not repair.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import PROJECT_ROOT, SISYPHUS_DIR, git, git_commit, make_setup, sisyphus_entry  # noqa: E402

CONFIG = """\
from sisyphus import tk
from sispin import experiment_set


def py():
    tk.register_output("{name}/rc", experiment_set("{name}").repo("rc"))
"""

# a pin command that SIGKILLs itself just before (or just after) its Nth rename into place of a file of the setup
# (not of its caches), or before it removes the journal: the moments between the writes of the pair, which a random
# kill hits only by luck
KILL_AT_A_WRITE = """\
import os, signal, sys
from sispin.cli.main import main

point, number = sys.argv[1], int(sys.argv[2])
renames = 0
real_replace, real_unlink = os.replace, os.unlink


def replace(source, target):
    global renames
    if ".sispin-cache" in str(target):  # a cache (the parsed snapshot's): no write of the pair
        return real_replace(source, target)
    renames += 1
    if point == "before-rename" and renames == number:
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(source, target)
    if point == "after-rename" and renames == number:
        os.kill(os.getpid(), signal.SIGKILL)


def unlink(path, *args, **kwargs):
    if point == "before-journal-removal" and str(path).endswith(".pin.journal.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    real_unlink(path, *args, **kwargs)


os.replace, os.unlink = replace, unlink
sys.exit(main(sys.argv[3:]))
"""

#: what a trial runs: name -> pin arguments
COMMANDS: Dict[str, List[str]] = {
    "upgrade with snapshot": ["upgrade", "exp"],
    "upgrade, lock only": ["upgrade", "plain"],
    "new with snapshot": ["new", "fresh", "--from", "exp", "--configs", "config/fresh.py"],
    "sync": ["sync"],
}
#: the moments between the writes of the pair (renames of the journal, pin.toml and pin.snapshot.toml, then the
#: journal's removal), the telling ones first: pin.toml moved but the snapshot not yet, and a half-written pin.toml
WRITE_POINTS = [
    ("after-rename", 2),
    ("before-rename", 2),
    ("after-rename", 1),
    ("before-rename", 3),
    ("after-rename", 3),
    ("before-journal-removal", 0),
    ("before-rename", 1),
]


class Setup:
    """A setup with real Sisyphus: set exp (configs, snapshot), set plain (no configs), a [setup.tool] checkout."""

    def __init__(self, root: Path, env: Dict[str, str], head: str, tool_head: str):
        self.root = root
        self.env = env
        self.head = head
        self.tool_head = tool_head
        self.baseline = {name: (root / name).read_bytes() for name in ("pin.toml", "pin.snapshot.toml")}

    def pin(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "sispin", *argv],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def restore(self) -> None:
        """Every trial starts from the same pair (and, for sync, without the tool checkout)."""
        for name, content in self.baseline.items():
            (self.root / name).write_bytes(content)
        tool = self.root / "tools" / "tool"
        if tool.exists():
            shutil.rmtree(tool)

    def leftovers(self) -> List[str]:
        names = [p.name for p in self.root.iterdir()] + [p.name for p in (self.root / "tools").iterdir()]
        return sorted(n for n in names if n.endswith(".tmp") or ".pin-partial-" in n or n == ".pin.journal.json")


def make(base: Path) -> Setup:
    """Build the setup under base (real Sisyphus + i6_core of this project, local remotes)."""
    remotes = base / "remotes"
    rc, tool = remotes / "rc", remotes / "tool"
    for remote in (rc, tool):
        remote.mkdir(parents=True)
        git(remote, "init", "-q", "-b", "main")
    commits = [git_commit(rc, {"__init__.py": f"VERSION = {i}\n"}, f"change {i}") for i in range(3)]
    tool_head = git_commit(tool, {"tool.py": "TOOL = 1\n"}, "tool")
    lock = (
        "version = 1\n\n"
        f'[repos.rc]  # model code\nurl = "file://{rc}"\nbranch = "main"\n\n'
        f'[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{commits[0]}"  # keep this comment\n\n'
        f'[sets.plain]\nrc = "{commits[0]}"\n\n'
        + sisyphus_entry(SISYPHUS_DIR)
        + f'\n[setup.tool]\nurl = "file://{tool}"\ncommit = "{tool_head}"\npath = "tools/tool"\n'
    )
    configs = {f"{name}.py": CONFIG.format(name=name) for name in ("exp", "fresh")}
    root = make_setup(base / "setup", lock, SISYPHUS_DIR, configs)
    env = {k: v for k, v in os.environ.items() if k != "PIN_LOCK"}
    env["PIN_HOME"] = str(base / "store")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT / "recipe"), env.get("PYTHONPATH")) if p)
    probe = subprocess.run(
        [sys.executable, "-m", "sispin", "snapshot", "exp"], cwd=root, env=env, capture_output=True, text=True
    )
    if probe.returncode != 0:
        raise SystemExit(f"fault loop: cannot make the setup's snapshot: {probe.stderr.strip()}")
    return Setup(root, env, commits[-1], tool_head)


def run_killed(setup: Setup, argv: List[str], delay: Optional[float], point: Optional[Tuple[str, int]]) -> str:
    """Run pin, SIGKILL it (its whole process group) after delay seconds or at a write; return how it ended."""
    if point is None:
        command = [sys.executable, "-m", "sispin", *argv]
    else:
        command = [sys.executable, "-c", KILL_AT_A_WRITE, point[0], str(point[1]), *argv]
    process = subprocess.Popen(
        command,
        cwd=setup.root,
        env=setup.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        process.wait(timeout=delay if point is None else 300)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        return "killed"
    finally:
        process.stderr.close()
        try:
            os.killpg(process.pid, signal.SIGKILL)  # a probe the kill left running
        except ProcessLookupError:
            pass
    return "killed" if process.returncode == -signal.SIGKILL else f"finished ({process.returncode})"


def verify(setup: Setup, kind: str) -> Tuple[List[str], str]:
    """
    :return: the problems (none when the pair passes `pin check --offline` and nothing is left over), and what the
        next command said it repaired
    """
    problems = []
    sets = ["exp", "fresh"] if "[sets.fresh]" in (setup.root / "pin.toml").read_text() else ["exp"]
    check = setup.pin("check", "--offline", *sets)
    if check.returncode != 0:
        problems.append(f"pin check --offline: exit {check.returncode}: {check.stdout}{check.stderr}".strip())
    repaired = " ".join(line for line in check.stderr.splitlines() if line.startswith("pin: note:"))
    status = setup.pin("status", "plain")
    if status.returncode != 0:
        problems.append(f"pin status: exit {status.returncode}: {status.stderr.strip()}")
    if kind == "sync":
        sync = setup.pin("sync")
        if sync.returncode != 0:
            problems.append(f"pin sync after the kill: exit {sync.returncode}: {sync.stderr.strip()}")
        elif git(setup.root / "tools" / "tool", "rev-parse", "HEAD") != setup.tool_head:
            problems.append("pin sync after the kill: tools/tool is not at its pinned commit")
    left = setup.leftovers()
    if left:
        problems.append(f"left over after the next commands: {', '.join(left)}")
    return problems, repaired


def loop(trials: int, seed: int, base: Path) -> int:
    """Run the trials; print figures; return the exit code."""
    started = time.monotonic()
    setup = make(base)
    rng = random.Random(seed)
    # first a kill at each write of the pair, for the commands that write both files; then random moments
    pair_points = [(kind, point) for kind in ("upgrade with snapshot", "new with snapshot") for point in WRITE_POINTS]
    plan = [(kind, None) for kind in COMMANDS] * trials
    rng.shuffle(plan)
    schedule = (pair_points + plan)[:trials]
    durations = {}
    for kind, argv in COMMANDS.items() if len(schedule) > len(pair_points) else ():
        # each command's running time, to spread the random kills over it
        setup.restore()
        began = time.monotonic()
        result = setup.pin(*argv)
        durations[kind] = time.monotonic() - began
        if result.returncode != 0:
            raise SystemExit(f"fault loop: {' '.join(argv)} fails even without a kill: {result.stderr.strip()}")
    outcomes: Counter = Counter()
    failures = []
    for number, (kind, point) in enumerate(schedule, 1):
        setup.restore()
        delay = None if point is not None else rng.uniform(0, durations[kind] * 1.1)
        ended = run_killed(setup, COMMANDS[kind], delay, point)
        problems, repaired = verify(setup, kind)
        moment = f"at {point[0]} {point[1]}" if point else f"after {delay:.2f} s"
        outcomes[(kind, "at a write" if point else "random", ended if ended == "killed" else "finished")] += 1
        outcomes[("repaired",)] += bool(repaired)
        print(f"trial {number:2}: {kind}, kill {moment}: {ended}{'; ' + repaired if repaired else ''}", flush=True)
        for problem in problems:
            print(f"    PROBLEM: {problem}", flush=True)
            failures.append((number, problem))
    elapsed = time.monotonic() - started
    timing = ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in durations.items())
    print(f"\n{len(schedule)} trials in {elapsed:.0f} s" + (f" (uninterrupted: {timing})" if timing else ""))
    for key, count in sorted(outcomes.items()):
        if key != ("repaired",):
            print(f"  {count:3}  {key[0]}, kill {key[1]}: {key[2]}")
    print(f"  {outcomes[('repaired',)]:3}  times the next command completed or dropped a half-done change")
    print(f"  {len(failures):3}  trials whose pair the next command did not repair")
    return 1 if failures else 0


def main(argv: Optional[List[str]] = None) -> int:
    """:param argv: command line (default: sys.argv[1:])"""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50, help="number of kills (default: 50)")
    parser.add_argument("--seed", type=int, default=13, help="seed of the random kill moments")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sispin-fault-loop-") as base:
        return loop(args.trials, args.seed, Path(base))


if __name__ == "__main__":
    sys.exit(main())
