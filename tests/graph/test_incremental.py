"""
The incremental ``pin check`` (real Sisyphus, real git): a set whose check passed is not built again while nothing its
build read changed, and is built again, finding the change, as soon as anything it read did: its config, a recipe
module it imports, a file it reads, an environment variable it reads, its lock section, its snapshot entry, a module
that appears where an import looked. A build that reads the clock or unseeded randomness is never kept.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import py_compile
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

import pytest

import sispin.ops.move_builds as move_builds
from conftest import SISYPHUS_DIR, USE_JOB, git_commit
from scenarios import age_files
from sispin.cli.main import main
from sispin.graph.build import load_graph, recording_inputs
from sispin.graph.snapshot import read_snapshot
from sispin.lock.files import snapshot_path
from sispin.lock.loading import find_lockfile, load_lockfile

CONFIG = (
    """\
import os
import random
import time

from sisyphus import Job, Task, tk

from incmod.helper import FACTOR
from sispin import experiment_set

try:
    from incmod.extra import EXTRA
except ImportError:
    EXTRA = None

"""
    + USE_JOB
    + """

def py():
    with open("config/lr.txt") as handle:
        lr = handle.read().strip()
    read = {volatile}  # read, not hashed
    thing = {{"rc": experiment_set("inc").repo("rc"), "lr": lr, "factor": FACTOR, "extra": EXTRA}}
    thing["mode"] = os.environ.get("INC_MODE", "a")
    tk.register_output("inc/out", Use(thing).out)
"""
)
NOT_BUILT = "sets.inc: not built: nothing it read changed since it passed"
SECOND_CONFIG = """\
from sisyphus import tk

from sispin import experiment_set


def py():
    tk.register_output("two/repo", experiment_set("two").repo("rc"))
"""


def _check(capsys, *args: str):
    code = main(["check", "--offline", "--verbose", *args])
    return code, capsys.readouterr().out


@pytest.fixture
def inc(real_setup, make_repo, monkeypatch):
    def make(
        volatile: str = "None", second: bool = False, config: Optional[str] = None, before: Callable = lambda root: None
    ) -> Path:
        remote = make_repo("rc")
        commits = [git_commit(remote, {"__init__.py": f"X = {i}\n"}, f"c{i}") for i in range(2)]
        tables = (
            f'[repos.rc]\nurl = "file://{remote}"\n\n[sets.inc]\nconfigs = ["config/inc.py"]\nrc = "{commits[0]}"\n'
        )
        configs = {"inc.py": config or CONFIG.format(volatile=volatile)}
        if second:  # another set, of another config that reads nothing of the first's
            tables += f'\n[sets.two]\nconfigs = ["config/two.py"]\nrc = "{commits[1]}"\n'
            configs["two.py"] = SECOND_CONFIG
        root = real_setup(tables, configs)
        (root / "config" / "lr.txt").write_text("0.001\n")
        (root / "recipe" / "incmod").mkdir()
        (root / "recipe" / "incmod" / "__init__.py").write_text("")
        (root / "recipe" / "incmod" / "helper.py").write_text("FACTOR = 2\n")
        monkeypatch.delenv("INC_MODE", raising=False)
        before(root)
        root.joinpath("commits").write_text(json.dumps(commits))
        assert main(["snapshot"]) == 0
        age_files(root)
        return root

    return make


def _move_pin(root: Path) -> None:
    first, second = json.loads((root / "commits").read_text())
    lock = root / "pin.toml"
    lock.write_text(lock.read_text().replace(first, second))


def _replace(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


CHANGES = {
    "config": lambda root, _: _replace(root / "config" / "inc.py", '"a")', '"b")'),
    "imported recipe module": lambda root, _: (root / "recipe" / "incmod" / "helper.py").write_text("FACTOR = 3\n"),
    "file the config reads": lambda root, _: (root / "config" / "lr.txt").write_text("0.002\n"),
    "environment variable": lambda _, monkeypatch: monkeypatch.setenv("INC_MODE", "b"),
    "lock section": lambda root, _: _move_pin(root),
    "new module where an import looked": lambda root, _: (root / "recipe" / "incmod" / "extra.py").write_text(
        "EXTRA = 1\n"
    ),
    "snapshot entry": lambda root, _: _replace(root / "pin.snapshot.toml", "inc/out", "inc/old"),
}


def test_an_unchanged_set_is_not_built_again(inc, capsys):
    inc()
    code, out = _check(capsys)
    # the whole line: a pass that is not kept says why after it
    assert code == 0 and "sets.inc: built (no earlier pass)\n" in out and NOT_BUILT not in out, out
    code, out = _check(capsys)
    assert code == 0 and NOT_BUILT in out and "1 unchanged since the last pass" in out, out
    code, out = main(["check", "--offline", "--json"]), capsys.readouterr().out
    assert json.loads(out)["kept"] == ["inc"]
    # touched, not changed: the setup's own files are compared by content
    past = time.time() - 30
    os.utime("config/inc.py", (past, past))
    assert NOT_BUILT in _check(capsys)[1]
    code, out = _check(capsys, "--full")
    assert code == 0 and "sets.inc: built (--full)" in out, out


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_any_input_that_changed_builds_the_set_again_and_the_change_is_found(inc, capsys, monkeypatch, change):
    root = inc()
    assert _check(capsys)[0] == 0
    assert NOT_BUILT in _check(capsys)[1]
    CHANGES[change](root, monkeypatch)
    code, out = _check(capsys)
    assert code == 1 and "sets.inc: built (" in out and NOT_BUILT not in out, out
    # a failing set keeps no pass: the next check builds it again and fails again
    code, out = _check(capsys)
    assert code == 1 and NOT_BUILT not in out, out


@pytest.mark.parametrize(
    "volatile, why",
    [
        ("time.time()", "config/inc.py:LINE reads the clock"),
        ("random.random()", "config/inc.py:LINE draws random numbers"),
        ("__import__('datetime').datetime.now()", "config/inc.py may read the clock (datetime)"),
        ("os.popen('true').read()", "config/inc.py:LINE runs a process"),
    ],
)
def test_a_build_that_reads_the_clock_randomness_or_a_process_is_never_kept(inc, capsys, volatile, why):
    root = inc(volatile)
    line = next(
        n for n, text in enumerate((root / "config" / "inc.py").read_text().splitlines(), 1) if "read =" in text
    )
    why = why.replace("LINE", str(line))
    for _ in range(2):
        code, out = _check(capsys)
        assert code == 0 and f"sets.inc: built (no earlier pass); its pass is not kept: {why}\n" in out, out
    with recording_inputs() as read:
        load_graph(load_lockfile(find_lockfile()), "inc")
    assert read.ledgers[0]["volatile"] == why


def test_a_copy_of_the_setup_does_not_take_the_originals_pass(inc, capsys, monkeypatch):
    root = inc()
    # Sisyphus from the environment, as a pip install gives it: nothing in pin.toml or the environment names the setup
    lock = root / "pin.toml"
    lock.write_text(lock.read_text().split("[setup.sisyphus]")[0])
    monkeypatch.setenv("PYTHONPATH", str(SISYPHUS_DIR))
    age_files(root)
    assert _check(capsys)[0] == 0
    assert NOT_BUILT in _check(capsys)[1]
    copy = root.with_name("setup-v2")
    subprocess.run(["cp", "-a", str(root), str(copy)], check=True)  # its pass too, naming the original's files
    monkeypatch.chdir(copy)
    _replace(copy / "config" / "lr.txt", "0.001", "0.002")  # an edit in the copy only
    code, out = _check(capsys)
    assert code == 1 and "sets.inc: built (pin.toml, the snapshot, the setup's or the store's location" in out, out
    monkeypatch.chdir(root)
    assert NOT_BUILT in _check(capsys)[1], "the original keeps its own"


def test_another_store_does_not_take_the_pass_made_with_the_first(inc, capsys, monkeypatch, tmp_path):
    # the store's location is sispin's to read, not the setup's code's: a config may still hash a checkout's path
    root = inc()
    assert _check(capsys)[0] == 0
    assert NOT_BUILT in _check(capsys)[1]
    monkeypatch.setenv("PIN_HOME", str(tmp_path / "another-store"))
    out = _check(capsys)[1]
    assert "sets.inc: built (pin.toml, the snapshot, the setup's or the store's location" in out, out
    assert root.is_dir()


def test_a_checkout_the_store_makes_while_the_set_is_built_is_no_racy_input(inc, capsys, monkeypatch, tmp_path):
    # the config reads a file of a checkout the build itself makes (a new store): the file is new, but written whole
    # before the config reads it, and the store's record of its setups is written then too
    config = CONFIG.format(volatile="None").replace(
        'open("config/lr.txt")', 'open(experiment_set("inc").checkout("rc") / "__init__.py")'
    )
    inc(config=config)
    monkeypatch.setenv("PIN_HOME", str(tmp_path / "another-store"))
    code, out = _check(capsys)
    assert code == 0 and "sets.inc: built (" in out and "not kept" not in out, out
    assert NOT_BUILT in _check(capsys)[1]


def test_an_online_check_keeps_its_pass_while_the_remote_did_not_move(inc, capsys):
    # each online check fetches the store's mirror first, which the build reads (settings.py's redirect)
    root = inc()
    for _ in range(2):
        assert main(["check", "--verbose"]) == 0
        age_files(root, Path(os.environ["PIN_HOME"]))
    capsys.readouterr()
    assert main(["check", "--verbose"]) == 0
    assert NOT_BUILT in capsys.readouterr().out


def test_a_build_that_logs_is_kept(inc, capsys):
    # a log record's time stamp is the logging module's: it reaches the log, never the graph (i6_core logs a warning
    # while a config loads when it looks up an executable)
    inc("__import__('logging').getLogger('incmod').warning('no such executable')")
    assert _check(capsys)[0] == 0
    assert NOT_BUILT in _check(capsys)[1]


def test_seeded_randomness_is_reproducible_and_kept(inc, capsys):
    inc("(random.seed(4), random.random())[1]")
    assert _check(capsys)[0] == 0
    assert NOT_BUILT in _check(capsys)[1]


def test_settings_py_and_sisyphus_are_inputs_too(inc, capsys):
    root = inc()
    assert _check(capsys)[0] == 0
    with open(root / "settings.py", "a") as handle:
        handle.write("# a new line\n")
    assert "sets.inc: built (settings.py: changed)" in _check(capsys)[1]
    with recording_inputs() as read:
        load_graph(load_lockfile(find_lockfile()), "inc")
    files = read.ledgers[0]["files"]
    assert str(root / "tools" / "sisyphus" / "sisyphus" / "toolkit.py") in files
    assert str(root / "recipe" / "incmod" / "helper.py") in files


@pytest.mark.parametrize("prefix", [False, True], ids=["__pycache__", "PYTHONPYCACHEPREFIX"])
def test_a_module_read_from_its_bytecode_is_recorded_as_its_source(inc, capsys, monkeypatch, tmp_path, prefix):
    root = inc()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if prefix:
        monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pycache"))
        env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    # what `sis manager` leaves: the recipe module's bytecode, valid for its source
    importing = "import sys; sys.path.insert(0, 'recipe'); import incmod.helper as h; print(h.__cached__)"
    compiled = subprocess.run(
        [sys.executable, "-c", importing], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert os.path.isfile(compiled) and (prefix == compiled.startswith(str(tmp_path / "pycache")))
    # written after the source (both dated back): the probe trusts it and reads it, not the source
    age_files(root, tmp_path / "pycache")
    os.utime(compiled, (time.time() - 30, time.time() - 30))
    assert _check(capsys)[0] == 0 and NOT_BUILT in _check(capsys)[1]
    (root / "recipe" / "incmod" / "helper.py").write_text("FACTOR = 5\n")  # same size: only its time tells
    code, out = _check(capsys)
    assert code == 1 and "recipe/incmod/helper.py: changed" in out, out


def test_the_probe_writes_bytecode_of_its_own_modules_and_none_of_the_setups(inc, capsys, monkeypatch, tmp_path):
    root = inc()
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    cache = tmp_path / "pycache"  # empty: whatever bytecode a build wants, it compiles, and writes where it may
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(cache))
    assert _check(capsys, "--full")[0] == 0
    written = glob.glob(f"{cache}/**/*.pyc", recursive=True)
    probes = {Path(path).name.split(".")[0] for path in written if f"{os.sep}sispin{os.sep}graph{os.sep}probe" in path}
    # modules only the probe imports: without their bytecode every probe compiled them again
    assert {"moving", "aliases", "state"} <= probes, sorted(probes)
    setups = [path for path in written if str(root) in path]
    assert setups == [], "below the setup root a .pyc could be stale (a config rewritten within its second)"


def test_the_probe_writes_no_bytecode_of_a_setup_below_the_pythons_prefix(tmp_path):
    # a venv made in the setup root: the setup's configs and recipes lie below sys.prefix, where the probe writes
    root = tmp_path / "setup"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    (root / "config").mkdir()
    (root / "config" / "exp.py").write_text("X = 1\n")
    site = next((root / "lib").glob("python3*")) / "site-packages"
    (site / "setup_recipe.py").write_text("Y = 2\n")
    guarded = (
        "import sys; from sispin.graph.probe.bytecode import never_stale_bytecode; never_stale_bytecode(sys.argv[1]); "
        "sys.path.insert(0, 'config'); import exp, setup_recipe; print(sys.prefix)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(Path(main.__code__.co_filename).parents[2])  # sispin, as the bootstrap finds it
    said = subprocess.run(
        [str(root / "bin" / "python"), "-c", guarded, str(root)], cwd=root, env=env, capture_output=True, text=True
    )
    assert said.returncode == 0 and said.stdout.strip() == str(root), said.stderr
    assert glob.glob(f"{root}/**/exp*.pyc", recursive=True) == []
    assert glob.glob(f"{root}/**/setup_recipe*.pyc", recursive=True) == []


def test_recipe_code_reached_through_a_symlinked_spelling_of_the_root_is_not_run_from_stale_bytecode(
    inc, capsys, monkeypatch, tmp_path
):
    # a cluster home reached through a symlink: PYTHONPATH=$PWD/recipe spells the setup's recipes through it, while the
    # probe runs in the root as the system resolves it
    root = inc()
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    link = tmp_path / "home"
    link.symlink_to(root)
    monkeypatch.setenv("PYTHONPATH", str(link / "recipe"))
    helper = link / "recipe" / "incmod" / "helper.py"
    assert _check(capsys)[0] == 0
    # the recipe's bytecode as an import leaves it (its source's whole second and size), then a rewrite of the same
    # size within that second: only the bytecode's own time tells that it is older than the source
    second = helper.stat().st_mtime_ns // 10**9 * 10**9
    os.utime(helper, ns=(second + 10**8,) * 2)
    cached = Path(py_compile.compile(str(helper), cfile=importlib.util.cache_from_source(str(helper))))
    os.utime(cached, ns=(second + 2 * 10**8,) * 2)
    helper.write_text("FACTOR = 3\n")
    os.utime(helper, ns=(second + 5 * 10**8,) * 2)
    code, out = _check(capsys)
    assert code == 1 and "2 -> 3" in out, out


def _compiled(source: Path) -> Path:
    """What an import leaves: the module's bytecode, stamped with its source's time and size, written after it."""
    cached = Path(py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source))))
    for directory in (source.parent, cached.parent):  # their entries changed just now: not while a build reads them
        os.utime(directory, (time.time() - 60, time.time() - 60))
    os.utime(cached, (time.time() - 30, time.time() - 30))
    return cached


def test_a_pass_follows_the_bytecode_python_runs_not_only_its_source(inc, capsys, monkeypatch):
    root = inc()
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    helper = root / "recipe" / "incmod" / "helper.py"
    cached = _compiled(helper)
    assert _check(capsys)[0] == 0 and NOT_BUILT in _check(capsys)[1]
    # bytecode stamped for another time of the source is not what Python runs (it compiles the source): rewritten,
    # as a checkout of another branch and back leaves it, it changes nothing
    os.utime(helper, (time.time() - 50, time.time() - 50))
    _compiled(helper)
    os.utime(helper, (time.time() - 45, time.time() - 45))
    assert NOT_BUILT in _check(capsys)[1]
    _compiled(helper)  # other bytecode that Python runs: built once, then kept
    assert f"sets.inc: built ({cached.relative_to(root)}: changed)" in _check(capsys)[1]
    assert NOT_BUILT in _check(capsys)[1]
    # an edit at the same size within the source's second, compiled (an import), then undone with `cp -p`: the
    # source is as it was, time included, and Python runs the edit's bytecode, which it takes for the source's
    kept = helper.parent / "helper.py.orig"
    shutil.copy2(helper, kept)
    helper.write_text("FACTOR = 7\n")
    os.utime(helper, ns=(kept.stat().st_mtime_ns,) * 2)
    _compiled(helper)
    shutil.copy2(kept, helper)
    kept.unlink()
    os.utime(helper.parent, (time.time() - 60, time.time() - 60))
    code, out = _check(capsys)
    assert code == 1 and f"sets.inc: built ({cached.relative_to(root)}: changed)" in out, out


def test_sets_are_built_side_by_side_and_each_keeps_what_it_read(inc, capsys):
    root = inc(second=True)
    code, out = _check(capsys)
    assert code == 0 and out.endswith("pin check: ok (2 sets, 2 outputs)\n"), out
    assert out.index("sets.inc: built") < out.index("sets.two: built"), "reported in pin.toml's order"
    _replace(root / "config" / "inc.py", '"a")', '"b")')
    code, out = _check(capsys)
    assert code == 1 and "sets.inc: built (config/inc.py: changed)" in out, out
    assert "sets.two: not built: nothing it read changed since it passed" in out, out


def test_a_check_right_after_a_snapshot_takes_the_pass_of_the_builds_it_recorded(inc, capsys):
    root = inc(second=True)
    assert main(["snapshot", "inc"]) == 0
    capsys.readouterr()
    code, out = _check(capsys)
    # the set recorded is not built again; the other was not built by this snapshot
    assert code == 0 and NOT_BUILT in out and "sets.two: built (no earlier pass)" in out, out
    # what the snapshot's build read changing builds it again, and the change is found
    _replace(root / "config" / "inc.py", '"a")', '"b")')
    code, out = _check(capsys)
    assert code == 1 and "sets.inc: built (config/inc.py: changed)" in out, out


#: a config whose one job hashes the value of an expression
VALUE_CONFIG = (
    "import datetime, os, random, secrets, time\n\n"
    "from sisyphus import Job, Task, tk\n\nfrom sispin import experiment_set\n\n" + USE_JOB + """

def py():
    value = {expression}
    tk.register_output("inc/out", Use({{"rc": experiment_set("inc").repo("rc"), "value": value}}).out)
"""
)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _retarget(link: Path, target: str) -> None:
    link.unlink()
    link.symlink_to(target)


def _same_size_and_time(path: Path, text: str) -> None:
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


#: name -> (what the setup has first, the expression, the change): each found only since a hostile review
READS = {
    "an environment variable that was set": (
        lambda root, mp: mp.setenv("INC_VALUE", "a"),
        'os.environ.get("INC_VALUE")',
        lambda root, mp: mp.setenv("INC_VALUE", "b"),
    ),
    "os.environb": (
        lambda root, mp: mp.setenv("INC_VALUE", "a"),
        'os.environb.get(b"INC_VALUE", b"").decode()',
        lambda root, mp: mp.setenv("INC_VALUE", "b"),
    ),
    "a file's size": (
        lambda root, mp: _write(root / "config" / "data.bin", "abc"),
        'os.path.getsize("config/data.bin")',
        lambda root, mp: _write(root / "config" / "data.bin", "abcdef"),
    ),
    "where a symlink points": (
        lambda root, mp: [_write(root / "config" / n, n) for n in ("v1", "v2")]
        + [(root / "config" / "cur").symlink_to("v1")],
        'os.path.basename(os.path.realpath("config/cur"))',
        lambda root, mp: _retarget(root / "config" / "cur", "v2"),
    ),
    "the kind of a listed entry": (
        lambda root, mp: _write(root / "data" / "x", ""),
        'sorted(e.name for e in os.scandir("data") if e.is_dir())',
        lambda root, mp: [(root / "data" / "x").unlink(), (root / "data" / "x").mkdir()],
    ),
    "os.access": (
        lambda root, mp: (root / "sub").mkdir(),
        'os.access("sub/flag", os.F_OK)',
        lambda root, mp: _write(root / "sub" / "flag", ""),
    ),
    "a file opened for update": (
        lambda root, mp: _write(root / "data.txt", "1"),
        'open("data.txt", "r+").read()',
        lambda root, mp: _write(root / "data.txt", "2"),
    ),
    "posix.open": (
        lambda root, mp: _write(root / "data.txt", "1"),
        'os.read(__import__("posix").open("data.txt", os.O_RDONLY), 9)',
        lambda root, mp: _write(root / "data.txt", "2"),
    ),
    "linecache": (
        lambda root, mp: _write(root / "data.txt", "1\n"),
        '__import__("linecache").getline(os.path.abspath("data.txt"), 1)',
        lambda root, mp: _write(root / "data.txt", "2\n"),
    ),
    "a file rewritten at its size and time": (
        lambda root, mp: _write(root / "data.txt", "1"),
        'open("data.txt").read()',
        lambda root, mp: _same_size_and_time(root / "data.txt", "2"),
    ),
    "the mode of a path looked at": (
        lambda root, mp: _write(root / "tool.sh", ""),
        'os.access("tool.sh", os.X_OK)',
        lambda root, mp: (root / "tool.sh").chmod(0o755),
    ),
    "whether a listed symlink points to a file or a directory": (
        lambda root, mp: [
            _write(root / "t" / "f", ""),
            (root / "data").mkdir(),
            (root / "data" / "x").symlink_to("../t/f"),
        ],
        'sorted(f for _, _, fs in os.walk("data") for f in fs)',
        lambda root, mp: _retarget(root / "data" / "x", "../t"),
    ),
    "a variable read through setdefault (read, then written)": (
        lambda root, mp: None,
        'os.environ.setdefault("INC_VALUE", "0.001")',
        lambda root, mp: mp.setenv("INC_VALUE", "0.002"),
    ),
    "a variable read, then written back": (
        lambda root, mp: None,
        '(os.environ.__setitem__("INC_VALUE", os.environ.get("INC_VALUE", "d")), os.environ["INC_VALUE"])[1]',
        lambda root, mp: mp.setenv("INC_VALUE", "e"),
    ),
    "how many environment variables there are": (
        lambda root, mp: None,
        "len(os.environ)",
        lambda root, mp: mp.setenv("INC_ANOTHER", "1"),
    ),
    "a module appearing on PYTHONPATH": (
        lambda root, mp: [(root / "extra").mkdir(), mp.setenv("PYTHONPATH", str(root / "extra"))],
        '__import__("importlib.util").util.find_spec("inc_optional") is not None',
        lambda root, mp: _write(root / "extra" / "inc_optional.py", ""),
    ),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_whatever_the_config_read_changing_is_found(inc, capsys, monkeypatch, tmp_path, read):
    prepare, expression, change = READS[read]
    root = inc(config=VALUE_CONFIG.format(expression=expression), before=lambda root: prepare(root, monkeypatch))
    assert _check(capsys)[0] == 0 and NOT_BUILT in _check(capsys)[1]
    change(root, monkeypatch)
    code, out = _check(capsys)
    assert code == 1 and "sets.inc: built (" in out, out


@pytest.mark.parametrize(
    "expression",
    [
        "datetime.datetime.now ().year > 2000",
        'getattr(datetime.datetime, "now")().year > 2000',
        "time.clock_gettime(time.CLOCK_REALTIME) > 0",
        "random.Random().random() < 2",
        "secrets.randbelow(2) < 2",
        "(random.seed(1), random.seed(), random.random() < 2)[2]",
        "os.getpid() > 0",
        'os.open("inc.py", os.O_RDONLY, dir_fd=os.open("config", os.O_RDONLY)) > 0',
        'len(list(os.fwalk("config"))) > 0',
        '__import__("socket").gethostname() != ""',
        "len(os.sched_getaffinity(0)) > 0",
        'open("/proc/self/status").read() != ""',
        '__import__("secrets").token_bytes(1) != b""',
        "time.monotonic() > 0",
        "(lambda clock: clock().year)(datetime.datetime.now) > 2000",
    ],
)
def test_what_no_record_can_hold_is_never_kept(inc, capsys, expression):
    inc(config=VALUE_CONFIG.format(expression=expression))
    for _ in range(2):
        code, out = _check(capsys)
        assert code == 0 and "sets.inc: built (no earlier pass)" in out, out


def test_a_damaged_record_or_a_missing_sisyphus_builds_the_set(inc, capsys):
    root = inc()
    assert _check(capsys)[0] == 0
    kept = root / ".sispin-cache" / "checks" / "inc.json"
    data = json.loads(kept.read_text())
    data["ledgers"][0]["files"] = {str(root / "config" / "inc.py"): [1]}
    kept.write_text(json.dumps(data))
    assert "sets.inc: built (no earlier pass)" in _check(capsys)[1]
    assert _check(capsys)[0] == 0
    (root / "tools" / "sisyphus").unlink()
    # no pass is kept, nor is the set reported checked: the check could not run (exit 9)
    assert _check(capsys)[0] == main(["check", "--offline", "--full"]) == 9


AVAILABLE_CONFIG = "from sisyphus import Job, Task, tk\n\nfrom sispin import experiment_set\n\n" + USE_JOB + """

def py():
    first = Use({"rc": experiment_set("inc").repo("rc")})
    tk.register_output("inc/out", first.out)
    if first.out.available():
        tk.register_output("inc/more", Use({"after": first.out}).out)
"""


def test_a_config_that_asks_whether_a_job_finished_sees_it_finish(inc, capsys):
    root = inc(config=AVAILABLE_CONFIG)
    assert _check(capsys)[0] == 0 and NOT_BUILT in _check(capsys)[1]
    job = read_snapshot(snapshot_path(root / "pin.toml"))["inc"]["inc/out"].job
    _write(root / "work" / job / "output" / "out", "done")
    _write(root / "work" / job / "finished", "")
    code, out = _check(capsys)
    assert code == 1 and "new outputs not in the snapshot (run `pin snapshot` to record them): inc/more" in out, out


TMP_CONFIG = (
    "from sisyphus import Job, Task, global_settings, tk\n\nfrom sispin import experiment_set\n\n" + USE_JOB + """

def py():
    tk.register_output("inc/out", Use({"rc": experiment_set("inc").repo("rc"), "tmp": global_settings.TMP_PREFIX}).out)
"""
)


def test_what_sisyphus_reads_of_the_environment_when_imported_is_an_input(inc, capsys, monkeypatch):
    monkeypatch.setenv("TMPDIR", "/tmp")
    inc(config=TMP_CONFIG)
    assert _check(capsys)[0] == 0 and NOT_BUILT in _check(capsys)[1]
    monkeypatch.setenv("TMPDIR", "/var/tmp")  # global_settings.TMP_PREFIX: /var/tmp/sis_
    code, out = _check(capsys)
    assert code == 1 and "sets.inc: built ($TMPDIR: changed)" in out, out


def _counting_builds(monkeypatch) -> List[int]:
    """:return: how many builds each graph load that judges a move asks for (the real loads run)"""
    counts: List[int] = []
    load = move_builds.load_graphs

    def counting(lockfile, builds):
        counts.append(len(builds))
        return load(lockfile, builds)

    monkeypatch.setattr(move_builds, "load_graphs", counting)
    return counts


@pytest.mark.parametrize("change", sorted(set(CHANGES) - {"lock section"}))  # a moved pin leaves nothing to upgrade
def test_an_upgrade_builds_the_set_at_its_pins_again_only_when_something_it_read_changed(
    inc, capsys, monkeypatch, change
):
    root = inc()
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    first = capsys.readouterr().out
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert capsys.readouterr().out == first, "the kept build says what the build said"
    assert builds == [2, 1], "the second dry run builds only the moved side"
    CHANGES[change](root, monkeypatch)
    main(["upgrade", "inc", "rc", "--dry-run"])
    assert builds[-1] == 2, f"after a change of the {change}, both sides are built"


def test_a_kept_record_damaged_by_hand_is_said_never_taken_for_one_not_kept(inc, capsys, monkeypatch):
    root = inc()
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    said = capsys.readouterr().out
    kept = root / ".sispin-cache" / "builds" / "inc.json"
    data = json.loads(kept.read_text())
    clone = next(job for job in data["records"] if "CloneGitRepositoryJob" in job)  # the move's own: looked up
    data["records"][clone] = '{"args": '
    kept.write_text(json.dumps(data))
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "inc.json" in err and "cannot be read" in err and "Traceback" not in err, err
    data["records"][clone] = 5  # not what a kept build holds: not taken, both sides built
    kept.write_text(json.dumps(data))
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert capsys.readouterr().out == said and builds == [2, 1, 2], builds


def test_a_kept_build_sees_the_jobs_that_finished_since_in_work(inc, capsys, monkeypatch):
    root = inc()
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert "0 finished jobs would no longer be used" in capsys.readouterr().out
    job = read_snapshot(snapshot_path(root / "pin.toml"))["inc"]["inc/out"].job
    _write(root / "work" / job / "finished", "")
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    kept = capsys.readouterr().out
    assert builds == [2, 1] and "1 finished job would no longer be used" in kept, kept
    shutil.rmtree(root / ".sispin-cache" / "builds")
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert capsys.readouterr().out == kept and builds[-1] == 2, "what a build of both sides says"


def _settings(*lines: str) -> Callable[[Path], None]:
    """:return: what adds lines to the setup's settings.py"""

    def add(root: Path) -> None:
        settings = root / "settings.py"
        settings.write_text(settings.read_text() + "".join(f"{line}\n" for line in lines))

    return add


def test_a_kept_build_asks_sisyphus_where_work_is_and_what_marks_a_job_finished(inc, capsys, monkeypatch):
    settings = _settings('WORK_DIR = "elsewhere"', 'JOB_FINISHED_MARKER = "done"')
    root = inc(before=lambda root: (settings(root), (root / "elsewhere").mkdir()))
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert "0 finished jobs would no longer be used" in capsys.readouterr().out
    job = read_snapshot(snapshot_path(root / "pin.toml"))["inc"]["inc/out"].job
    _write(root / "elsewhere" / job / "done", "")  # finished, as this setup's Sisyphus sees it; work/ has nothing
    age_files(root)
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    kept = capsys.readouterr().out
    assert builds == [2, 1] and "1 finished job would no longer be used" in kept, kept
    shutil.rmtree(root / ".sispin-cache" / "builds")
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert capsys.readouterr().out == kept, "what a build of both sides says"


def test_a_kept_build_is_not_taken_where_a_jobs_directory_holds_its_tags(inc, capsys, monkeypatch):
    inc(before=_settings("JOB_USE_TAGS_IN_PATH = True"))
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    for _ in range(2):
        assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert builds == [2, 1, 2], "the moved build could not tell which of the kept jobs finished: both built again"


def test_status_and_a_dry_run_of_the_same_move_take_the_graph_at_the_pins_the_other_kept(inc, capsys, monkeypatch):
    root = inc()
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    said = []
    for fetch in (["--fetch"], []):
        assert main(["status", "--changes", *fetch]) == 0
        said.append(capsys.readouterr().out)
    assert "Moving set 'inc' to the heads: 2 of 2 jobs get new ids" in said[0] and said[0] == said[1], said
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert builds == [2, 1, 1], "after the first, only the moved side is built"
    capsys.readouterr()
    shutil.rmtree(root / ".sispin-cache" / "builds")
    assert main(["status", "--changes"]) == 0
    again = capsys.readouterr().out
    # the dry run fetched the remote since: only the time of the store's last fetch differs
    assert _unfetched(again) == _unfetched(said[0]) and builds[-1] == 2, "what a build of both sides says"


def _unfetched(status: str) -> List[str]:
    """:return: the lines of ``pin status`` output but the time of the store's last fetch"""
    return [line for line in status.splitlines() if not line.startswith("store last fetched: ")]


def test_an_upgrade_that_writes_builds_both_sides(inc, capsys, monkeypatch):
    inc()
    builds = _counting_builds(monkeypatch)
    assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0 and main(["upgrade", "inc", "rc"]) == 0
    assert builds == [2, 2], "its refusals judge a build of now, not what a read the recorder missed left kept"


HELD_CONFIG = (
    """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import Job, Task, tk

from sispin import experiment_set

"""
    + USE_JOB
    + """

def py():
    rc = experiment_set("inc").repo("rc")
    # a RETURNN config hashes its config, not its post_config: the job keeps its id when the pin moves
    config = ReturnnConfig({"x": 1}, post_config={"held": rc})
    tk.register_output("inc/held", WriteReturnnConfigJob(config).out_returnn_config_file)
    tk.register_output("inc/out", Use(rc).out)
"""
)


def test_a_kept_build_still_finds_a_job_that_would_keep_its_id_with_other_content(inc, capsys, monkeypatch):
    root = inc()
    # a set not recorded yet: the check's guard, which would refuse to record it, has not looked at it
    (root / "config" / "inc.py").write_text(HELD_CONFIG)
    (root / "pin.snapshot.toml").unlink()
    age_files(root)
    builds, _ = _counting_builds(monkeypatch), capsys.readouterr()
    said = []
    for _ in range(2):
        assert main(["upgrade", "inc", "rc", "--dry-run"]) == 7
        out = capsys.readouterr()
        assert "1 job would keep its id with other content after this move" in out.err, out
        said.append(out)
    assert builds == [2, 1] and said[0] == said[1], "the moved build, compared with the kept one, has its states"


WAITING_CONFIG = """\
from sisyphus import tk

from sispin import experiment_set


async def py():
    rc = experiment_set("inc").repo("rc")
    tk.register_output("inc/out", rc)
    await tk.async_run(rc)
    tk.register_output("inc/after", rc)
"""


def test_a_build_that_waits_for_unfinished_jobs_is_not_kept(inc, capsys, monkeypatch):
    inc(config=WAITING_CONFIG)
    builds = _counting_builds(monkeypatch)
    for _ in range(2):
        assert main(["upgrade", "inc", "rc", "--dry-run"]) == 0
    assert builds == [2, 2], "what it builds once the jobs ran is not in the graph: each upgrade builds both sides"
