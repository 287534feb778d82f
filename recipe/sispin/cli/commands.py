"""
The ``pin`` commands as they are typed, each with its module in :mod:`sispin.cli` and its line in ``pin --help``:
listed here, so that ``pin --help`` imports no command module, and a run imports only its command's (which brings
its own dependencies).
"""

from __future__ import annotations

__all__ = ["COMMANDS", "EXAMPLES", "PASSES_ON"]

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
    "help": ("help", "show the help of pin or of one command (pin help check)"),
}

#: command -> what ``pin COMMAND --help`` shows under "examples:", each a command line and what it does
EXAMPLES = {
    "sync": [
        ("pin sync", "clone Sisyphus and i6_core ([setup.*]) at their pins"),
        ("pin sync demo", "check out the store checkouts set demo pins"),
    ],
    "upgrade": [
        ("pin upgrade demo --dry-run", "show what moving every pin of demo would change, write nothing"),
        ("pin upgrade demo returnn_common", "move one pin to its branch head"),
        ("pin upgrade demo returnn_common --to v1.2", "move it to a tag, branch or commit"),
        ("pin upgrade --all --commit", "move every set and commit pin.toml"),
    ],
    "new": [
        ("pin new exp2", "a new set at the newest commits of every repository"),
        ("pin new exp2 --from demo --configs config/exp2.py", "a new set at demo's pins, with its own config"),
    ],
    "configs": [
        ("pin configs demo", "list the set's configs"),
        ("pin configs demo --add config/more.py", "add one (a path is relative to the directory you are in)"),
    ],
    "freeze": [("pin freeze demo --commit", "nothing moves demo's pins until pin thaw")],
    "thaw": [("pin thaw demo", "let demo change again")],
    "status": [
        ("pin status", "each set's pins, from what is known offline"),
        ("pin status --fetch", "fetch first: how far each pin is behind its branch"),
        ("pin status demo --changes", "the commits a pin is behind, one line each"),
    ],
    "snapshot": [("pin snapshot --commit", "record every output's job id and commit pin.snapshot.toml")],
    "check": [
        ("pin check", "what CI runs: lock, commits, graphs, snapshot"),
        ("pin check --offline --full", "no network, and build every graph even when nothing changed"),
    ],
    "explain": [
        ("pin explain demo", "why job ids differ from the snapshot"),
        ("pin explain --against HEAD", "why they differ from the committed setup"),
    ],
    "import": [
        ("pin import config/ --set demo", "show the pins hand-written clones of config/ would become"),
        ("pin import config/ --set demo --write", "write them into pin.toml"),
    ],
    "verify": [("pin verify", "check that no checkout or finished clone was edited by hand")],
    "why": [
        ("pin why f7ad63a", "the sets, jobs and outputs that use a commit"),
        ("pin why returnn_common", "the same for each pinned commit of a repository"),
    ],
    "gc": [("pin gc --dry-run", "list the store checkouts no lockfile pins, remove nothing")],
    "run": [("pin run demo -- -r", "sis manager -r on demo's configs with the pinned Sisyphus")],
    "merge-driver": [("pin merge-driver --install", "let git merge pin.toml and pin.snapshot.toml line by line")],
    "help": [("pin help check", "the same as pin check --help")],
}

#: commands whose words after ``--`` go to the program they run (``pin run demo -- -r``), as ``args.passed_on``
PASSES_ON = frozenset({"run"})
