"""
Shared fixtures: real git repositories built in temporary directories, and the real Sisyphus + i6_core of this
setup (``pin sync`` puts them at tools/sisyphus and recipe/i6_core) when they are there.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence

import pytest
from filelock import FileLock

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SISYPHUS_DIR = PROJECT_ROOT / "tools" / "sisyphus"
RECIPE_DIR = PROJECT_ROOT / "recipe"
#: the clone where .ci/run ran ``make demo``, and the HOME it ran with (read before pytest_configure gives the run a
#: HOME of its own): tests/e2e/test_tour.py runs README's tour there, and is collected only when one is given
TOUR_ROOT = Path(os.environ["SISPIN_TOUR_ROOT"]) if os.environ.get("SISPIN_TOUR_ROOT") else PROJECT_ROOT
TOUR_HOME = os.environ.get("HOME", "")
collect_ignore = [] if os.environ.get("SISPIN_TOUR_ROOT") else ["e2e/test_tour.py"]

# commits made by fixtures must not depend on the developer's git identity or global config
_GIT_FIXTURE_ENV = {
    "GIT_AUTHOR_NAME": "sispin tests",
    "GIT_AUTHOR_EMAIL": "tests@sispin.invalid",
    "GIT_COMMITTER_NAME": "sispin tests",
    "GIT_COMMITTER_EMAIL": "tests@sispin.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


#: the variables a test run takes from its caller: git's offline redirect through the environment (the README's way to
#: run the suite without network), whether CI demands the real Sisyphus, and which versions the version matrix takes
#: (tests/e2e/test_versions.py); every other PIN_*, SISPIN_*, GIT_* and
#: PYTHONPATH is the caller's own business and would change what the tests see
_KEPT_VARIABLES = ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "SISPIN_REQUIRE_REAL", "SISPIN_MATRIX")
_SCRUBBED_PREFIXES = ("PIN_", "SISPIN_", "GIT_", "XDG_")
_hermetic_home: Optional[str] = None
#: the temporary directory of this run (None when --basetemp was given), and whether the run passed
_run_basetemp: Optional[str] = None
_passed = False


#: the source trees that every probe, manager and task of the suite imports: the checkouts of `pin sync`, and sispin
_SHARED_SOURCES = (SISYPHUS_DIR / "sisyphus", RECIPE_DIR / "i6_core", RECIPE_DIR / "sispin")


def _compile_shared_sources() -> None:
    """
    Write the bytecode of _SHARED_SOURCES once, before any test. A probe writes none for a setup's code (below its
    root or on PYTHONPATH: Sisyphus and i6_core here), nor does any process where PYTHONDONTWRITEBYTECODE is set, so
    each of the suite's Sisyphus processes compiled Sisyphus, i6_core and sispin again; and where bytecode is written
    (sispin's by a probe too), the first processes wrote it while the builds of other tests read those trees, and a
    build that read a file written in its last two seconds keeps no pass (the incremental tests failed at random).
    Hence the new files are dated back past that window too, and so are the folders that got a new
    ``__pycache__`` (the import system lists them: on a fresh clone the first tests' passes were not kept). Python
    checks a .pyc by the time and size of its source recorded inside, not by its own time.
    """
    written_before = time.time() - 3
    for tree in _SHARED_SOURCES:
        if tree.is_dir():
            # on every core (a fresh clone: seconds before any test starts); a file that does not compile is compiled by
            # no import either
            compileall.compile_dir(str(tree), quiet=2, workers=0)
            for written in [tree, *tree.rglob("*")]:
                # bytecode and folders only: a source the user just saved keeps its time
                compiled = written.suffix == ".pyc" or (written.is_dir() and not written.is_symlink())
                if compiled and written.stat().st_mtime > written_before:
                    os.utime(written, (written_before, written_before))


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path plugin reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    """
    Run the suite in an environment of its own, whatever machine it is on: a temporary directory of its own (pytest's
    default, /tmp/pytest-of-USER, keeps the newest three runs and deletes older ones, a run still going on the same
    machine included; removed when the run passes), a fresh HOME and global git config (a
    researcher's ~/.gitconfig may redirect github.com, their ~/.cache hold a store), no system git config, and none
    of the caller's PYTHONPATH, PIN_*, SISPIN_*, GIT_* or XDG_* variables but those in _KEPT_VARIABLES. Tests that
    need one of them set it themselves.
    """
    global _hermetic_home, _run_basetemp
    if not hasattr(config, "workerinput") and config.option.basetemp is None:
        _run_basetemp = config.option.basetemp = tempfile.mkdtemp(prefix="sispin-tests-")
    _hermetic_home = tempfile.mkdtemp(prefix="sispin-tests-home-")
    for name in list(os.environ):
        if name == "PYTHONPATH" or (name.startswith(_SCRUBBED_PREFIXES) and not name.startswith(_KEPT_VARIABLES)):
            del os.environ[name]
    gitconfig = Path(_hermetic_home) / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = sispin tests\n\temail = tests@sispin.invalid\n")
    # a home where TensorFlow ran before, as on a researcher's machine: Keras writes ~/.keras/keras.json at its first
    # import, in the middle of the first nn_demo build, which looked for it (absent), so that build's pass was not
    # kept and each worker's next command built nn_demo again (a quarter of a minute of CPU)
    (Path(_hermetic_home) / ".keras").mkdir()
    (Path(_hermetic_home) / ".keras" / "keras.json").write_text("{}\n")
    os.environ.update(HOME=_hermetic_home, GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1")
    if not hasattr(config, "workerinput"):  # in the controller of pytest-xdist (or a run without it), before any worker
        _compile_shared_sources()


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist (-p no:xdist) knows no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> Optional[int]:
    """
    ``-n auto``: a worker per core (pytest-xdist's own count), and one more. A worker per core kept them busy 82% of
    the run (2 cores, quiet: 599 s of CPU in 363 s): the tests wait for git, for the processes they start and, by
    design, for time-outs. One more worker filled the gaps: 310 s, every test passing. A count the caller gives
    (PYTEST_XDIST_AUTO_NUM_WORKERS, ``-n logical``) is pytest-xdist's alone.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses == "logical":
        return None
    from xdist.plugin import pytest_xdist_auto_num_workers as per_core

    return per_core(config) + 1


def pytest_unconfigure(config: pytest.Config) -> None:
    if _hermetic_home is not None:
        shutil.rmtree(_hermetic_home, ignore_errors=True)
    if _run_basetemp is not None and _passed:
        shutil.rmtree(_run_basetemp, ignore_errors=True)


#: a Sisyphus job that hashes whatever it is given, for the configs tests write (needs `from sisyphus import Job, Task`)
USE_JOB = """\
class Use(Job):
    def __init__(self, thing):
        self.thing = thing
        self.out = self.output_path("out")

    def tasks(self):
        yield Task("run")
"""


def git(cwd: Path, *args: str) -> str:
    """Run a real git command in cwd and return its stripped stdout."""
    env = {**os.environ, **_GIT_FIXTURE_ENV}
    result = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return result.stdout.strip()


def git_commit(repo: Path, files: Dict[str, str], message: str = "change") -> str:
    """
    Write files into repo, commit them and return the new commit's SHA.

    :param repo: working tree
    :param files: relative path -> content
    :param message: commit message
    """
    for name, content in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def commit_setup(root: Path, *files: str) -> None:
    """Make the setup directory a git repository (branch main) whose first commit holds files (all when none)."""
    git(root, "init", "-q", "-b", "main")
    git(root, "add", *(files or ("-A",)))
    git(root, "commit", "-q", "-m", "the setup")


@pytest.fixture(autouse=True)
def environment_restored() -> Iterator[None]:
    """sispin.use_store_mirrors() sets its variables in os.environ (for the workers): none may leak into other tests."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def one_setup_per_test() -> Iterator[None]:
    """experiment_set() finds and reads pin.toml once per process: here every test may have a setup of its own."""
    yield
    from sispin import sets

    sets._forget()


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """Factory: an empty git repository (branch main) under tmp_path."""

    def make(name: str = "repo") -> Path:
        repo = tmp_path / "remotes" / name
        repo.mkdir(parents=True)
        git(repo, "init", "-q", "-b", "main")
        return repo

    return make


@pytest.fixture
def write_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """Factory: write pin.toml into a fresh setup directory, make it the working directory, return its path."""

    def write(text: str, setup: Optional[Path] = None) -> Path:
        root = setup or tmp_path / "setup"
        root.mkdir(parents=True, exist_ok=True)
        path = root / "pin.toml"
        path.write_text(text)
        monkeypatch.chdir(root)
        return path

    return write


def _sisyphus_unavailable_reason() -> Optional[str]:
    if not (SISYPHUS_DIR / "sisyphus" / "__init__.py").is_file():
        return f"real Sisyphus not at {SISYPHUS_DIR.relative_to(PROJECT_ROOT)} (run `pin sync`)"
    if not (RECIPE_DIR / "i6_core" / "tools" / "git.py").is_file():
        return f"real i6_core not at {(RECIPE_DIR / 'i6_core').relative_to(PROJECT_ROOT)} (run `pin sync`)"
    for module in ("psutil", "flask", "IPython"):
        try:
            __import__(module)
        except ImportError:
            return f"Sisyphus needs {module!r} (pip install -e '.[setup]')"
    return None


def _real_required() -> bool:
    """SISPIN_REQUIRE_REAL=1 (set by .ci/run): tests that need the real Sisyphus + i6_core must not skip."""
    return os.environ.get("SISPIN_REQUIRE_REAL", "") not in ("", "0")


@pytest.fixture(scope="session")
def real_sisyphus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """
    The real Sisyphus + i6_core of this setup, importable in-process; skips when they are absent (fails instead
    under SISPIN_REQUIRE_REAL=1).
    """
    reason = _sisyphus_unavailable_reason()
    if reason:
        if _real_required():
            pytest.fail(f"SISPIN_REQUIRE_REAL=1: {reason}", pytrace=False)
        pytest.skip(reason)
    for path in (str(SISYPHUS_DIR), str(RECIPE_DIR)):
        if path not in sys.path:
            sys.path.insert(0, path)
    # Sisyphus executes ./settings.py when first imported: import it where there is none, so that no setup's
    # settings (which change the environment) run inside the test process
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("no-settings"))
    try:
        import sisyphus.global_settings  # noqa: F401
    finally:
        os.chdir(cwd)
    yield SISYPHUS_DIR


def run_directory(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """
    The temporary directory of this run that every pytest-xdist worker sees (each has its own below it), for what
    the workers build once and share under a file lock: it is the run's own, so neither another run on the machine
    nor a run after an edit finds it.
    """
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@pytest.fixture(scope="session")
def shipped_mirrors(real_sisyphus: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """
    The mirrors a store holds of the repositories this project's pin.toml names (returnn, returnn_common: the bundles
    of ../shared/mirrors offline), fetched by ``pin status --fetch`` once per run: cloning RETURNN's history is the
    dearest part of a fresh store, and the tests that work on the shipped setup each start from a copy
    (copy_shipped_mirrors). Under pytest-xdist the first worker to need them fetches them, under a file lock.
    """
    from scenarios import mirrors_redirect

    shared = run_directory(tmp_path_factory, worker_id)
    store = shared / "shipped-store"
    with FileLock(str(shared / "shipped-store.lock")):
        if not (shared / "shipped-store.done").is_file():
            shutil.rmtree(shared / "shipped-setup", ignore_errors=True)  # what a worker that died half-way left
            shutil.rmtree(store, ignore_errors=True)
            root = make_setup(shared / "shipped-setup", (PROJECT_ROOT / "pin.toml").read_text(), real_sisyphus)
            env = {key: value for key, value in os.environ.items() if key != "PIN_LOCK"}
            env.update(mirrors_redirect(), PIN_HOME=str(store))
            fetched = run([sys.executable, "-m", "sispin", "status", "--fetch"], root, env)
            assert fetched.returncode == 0, fetched.stdout + fetched.stderr
            (shared / "shipped-store.done").touch()
    return store / "mirrors"


def copy_shipped_mirrors(mirrors: Path, store: Path) -> Path:
    """
    A store of its own at store holding a copy of the shipped mirrors (only they: the store's list of the setups
    that use it stays empty, as in a fresh store); its path.
    """
    shutil.copytree(mirrors, store / "mirrors", symlinks=True)
    return store


#: marker -> the fixtures that give a test what it names: the real Sisyphus + i6_core, a real SLURM
#: (tests/e2e/test_cluster.py), the GitHub repositories. A test is marked when one of them is in its fixture closure,
#: so a fixture built on them (real_setup, a venv, a module's own setup) marks every test that uses it without being
#: named.
MARKING_FIXTURES = {"real": {"real_sisyphus"}, "cluster": {"slurm"}, "network": {"github"}}
#: the tests that need neither Sisyphus, SLURM nor the network but took 5 s or more each in ``--durations`` of the
#: fast selection (2 cores, -n 2, shared with three other suites: load 12), by function name (unique in the suite,
#: and kept when a file moves): marked ``slow``, so that ``make test-fast`` stays under a minute. Most wait by design
#: (a throttled remote, kill -9 loops, concurrent writers, the benchmarks); measure again when a test is added.
SLOW_TESTS = frozenset(
    {
        "test_benchmarks_run_at_tiny_sizes",
        "test_a_killed_store_fetch_is_recovered_by_the_next_run",
        "test_ten_concurrent_writers_lose_no_update",
        "test_remotes_are_fetched_side_by_side",
        "test_a_slow_but_moving_clone_runs_past_the_inactivity_timeout",
        "test_ten_concurrent_upgrades_of_one_set_all_succeed",
        "test_a_killed_sync_is_recovered_by_the_next_run",
        "test_no_progress_with_quiet_or_off_a_terminal",
        "test_only_regular_files_are_read",
    }
)


@pytest.fixture
def github() -> None:
    """
    A test that reaches the real rwth-i6 repositories at their GitHub URLs asks for this, and is marked ``network``
    (offline, git's insteadOf redirect to local bundles, which the suite keeps from the caller's environment, stands
    in for GitHub).
    """


#: the suite's longest tests (each runs a document's whole tour, half a minute): run first, because collected in
#: folder order they came last, and the run ended with one worker idle for their length
LONGEST_FIRST = "tests/project/test_docs.py::test_documented_output_is_what_the_commands_print"


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """
    Mark each test by what it needs: ``real``, ``cluster`` and ``network`` from its fixtures (MARKING_FIXTURES),
    ``slow`` by name (SLOW_TESTS); and put LONGEST_FIRST first.
    """
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in MARKING_FIXTURES.items():
            if used & fixtures:
                item.add_marker(marker)
        if getattr(item, "originalname", item.name) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST_FIRST))


_skipped: list = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under SISPIN_REQUIRE_REAL=1 (CI) a run that skipped any test fails."""
    global _passed
    if _real_required() and _skipped and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _passed = session.exitstatus == pytest.ExitCode.OK


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _real_required() and _skipped:
        first = _skipped[0]
        reason = first.longrepr[2] if isinstance(first.longrepr, tuple) else str(first.longrepr)
        terminalreporter.write_line(
            f"SISPIN_REQUIRE_REAL=1: {len(_skipped)} test(s) skipped, and CI allows none"
            f" (first: {first.nodeid}: {reason})",
            red=True,
        )


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty store of sispin's own ($PIN_HOME) for one test."""
    directory = tmp_path / "store"
    monkeypatch.setenv("PIN_HOME", str(directory))
    return directory


class History:
    """
    A remote ``rc`` with five commits on main (c[0]..c[4]), tag v1 at c[1], and a lockfile whose set ``demo``
    pins c[0] and set ``other`` pins c[2] (as a table with an extra argument), each line commented.
    """

    def __init__(self, remote: Path, commits: list, lock: Path):
        self.remote = remote
        self.c = commits
        self.lock = lock

    @property
    def url(self) -> str:
        return f"file://{self.remote}"

    def text(self) -> str:
        return self.lock.read_text()


@pytest.fixture
def history(make_repo: Callable[..., Path], write_lock: Callable[..., Path], store_dir: Path) -> History:
    remote = make_repo("rc")
    commits = [git_commit(remote, {"nn.py": f"VERSION = {i}\n"}, f"change {i}") for i in range(5)]
    git(remote, "tag", "v1", commits[1])
    lock = write_lock(
        "# the lock of a test setup\n"
        "version = 1\n\n"
        "[repos.rc]  # model code\n"
        f'url = "file://{remote}"\n'
        'branch = "main"\n\n'
        "[sets.demo]\n"
        'configs = ["config/demo.py"]\n'
        f'rc = "{commits[0]}"  # keep this comment\n\n'
        "# the second set\n"
        "[sets.other]\n"
        f'rc = {{ commit = "{commits[2]}", clone_submodules = true }}\n'
    )
    return History(remote, commits, lock)


def sisyphus_entry(sisyphus: Path) -> str:
    """The ``[setup.sisyphus]`` table of a test setup whose tools/sisyphus links to the real checkout."""
    head = git(sisyphus, "rev-parse", "HEAD")
    return f'[setup.sisyphus]\nurl = "file://{sisyphus}"\ncommit = "{head}"\npath = "tools/sisyphus"\n'


def make_setup(root: Path, lock: str, sisyphus: Path, configs: Optional[Dict[str, str]] = None) -> Path:
    """
    A Sisyphus setup like this project's in root: its settings.py, config/demo.py (or the given configs),
    recipe/i6_core, recipe/sispin and tools/sisyphus linked to the real ones, an empty work/, and pin.toml.

    :param lock: pin.toml content
    :param sisyphus: the real Sisyphus checkout
    :param configs: config file name -> content, instead of the demo
    """
    (root / "config").mkdir(parents=True)
    (root / "recipe").mkdir()
    (root / "tools").mkdir()
    (root / "work").mkdir()
    shutil.copy(PROJECT_ROOT / "settings.py", root)
    for name, content in (configs or {"demo.py": (PROJECT_ROOT / "config" / "demo.py").read_text()}).items():
        (root / "config" / name).write_text(content)
    for package in ("i6_core", "sispin"):
        (root / "recipe" / package).symlink_to(RECIPE_DIR / package)
    (root / "tools" / "sisyphus").symlink_to(sisyphus)
    (root / "pin.toml").write_text(lock)
    return root


@pytest.fixture
def real_setup(
    real_sisyphus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_dir: Path
) -> Callable[..., Path]:
    """
    Factory: a setup like this project's (make_setup) at tmp_path/name with the real Sisyphus + i6_core and an empty
    store of its own, made the working directory, and return its root. Its pin.toml is ``version = 1``, the given
    tables, and the ``[setup.sisyphus]`` table of the real checkout.

    :param tables: the ``[repos.*]`` and ``[sets.*]`` tables of pin.toml
    :param configs: config file name -> content (see make_setup)
    :param name: the setup's directory under tmp_path
    """

    def build(tables: str, configs: Optional[Dict[str, str]] = None, name: str = "setup") -> Path:
        lock = f"version = 1\n\n{tables.strip()}\n\n" + sisyphus_entry(real_sisyphus)
        root = make_setup(tmp_path / name, lock, real_sisyphus, configs)
        monkeypatch.chdir(root)
        return root

    return build


def run(command: Sequence[object], cwd: Path, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """Run a command to its end (no input, output captured, at most 300 s) and return what it did."""
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def run_manager(setup: Path, config: str, env: Optional[Dict[str, str]] = None) -> str:
    """Run the real ``sis manager -r config`` in setup to its end; return what it logged."""
    env = env or {k: v for k, v in os.environ.items() if k != "PIN_LOCK"}
    result = run([sys.executable, setup / "tools" / "sisyphus" / "sis", "manager", "-r", config], setup, env)
    return result.stdout + result.stderr


@pytest.fixture
def remotes(tmp_path: Path) -> Path:
    """Two repositories of 400 kB of incompressible data each, "a" and "b", under one directory."""
    base = tmp_path / "served"
    for name in ("a", "b"):
        repo = base / name
        repo.mkdir(parents=True)
        git(repo, "init", "-q", "-b", "main")
        for index in range(4):
            (repo / f"blob{index}.bin").write_bytes(os.urandom(100_000))
        git_commit(repo, {"README": name})
    return base
