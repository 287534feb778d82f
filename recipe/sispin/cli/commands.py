"""
The ``pin`` commands as they are typed, each with its module in :mod:`sispin.cli` and its line in ``pin --help``:
listed here, so that ``pin --help`` imports no command module, and a run imports only its command's (which brings
its own dependencies).
"""

from __future__ import annotations

__all__ = ["COMMANDS", "PASSES_ON"]

#: command -> (its module in sispin.cli, its line in ``pin --help``)
COMMANDS = {
    "sync": (
        "sync",
        "clone the setup's own checkouts ([setup.*]), or a set's store checkouts, at their pinned commits",
    ),
    "upgrade": ("upgrade", "move an experiment set's pins to newer commits"),
    "new": ("new", "start a new experiment set at the newest commits"),
    "configs": ("configs", "list, add or remove the Sisyphus configs of a set"),
    "freeze": ("freeze", "freeze sets whose results are published: nothing moves them until `pin thaw`"),
    "thaw": ("thaw", "thaw frozen sets: they may change again"),
    "status": ("status", "show each set's pins and how far they are behind their branches"),
    "snapshot": ("snapshot", "record the job id behind every output of each set (pin.snapshot.toml)"),
    "check": ("check", "verify the lock, the pinned commits, the job graphs and the snapshot (for CI)"),
    "explain": ("explain", "say why job ids differ from the snapshot: the argument that changed, old -> new"),
    "import": ("import_pins", "find hand-written CloneGitRepositoryJob pins and move them into pin.toml"),
    "verify": ("verify", "check that setup checkouts, store checkouts and finished clone jobs are untouched"),
    "why": ("why", "show which sets, finished jobs and outputs use a commit or a repository"),
    "gc": ("gc", "remove the store checkouts that no lockfile using the store pins"),
    "run": ("run", "run sis manager on the configs of sets (a config that fails to load: one line, exit 9)"),
    "merge-driver": ("merge_driver", "merge pin.toml and pin.snapshot.toml for git (--install sets it up)"),
}

#: commands whose words after ``--`` go to the program they run (``pin run demo -- -r``), as ``args.passed_on``
PASSES_ON = frozenset({"run"})
