"""
The job graph of an experiment set, as Sisyphus builds it from the set's configs, and the one way the parent runs
the probe that builds it.

The parent never imports Sisyphus: it runs :mod:`sispin.graph.probe.main` in a subprocess (:func:`run_probe`), as
``sis manager`` in the setup root would run: Sisyphus from a ``[setup.*]`` checkout when pin.toml has one, else from
the environment (pip or PYTHONPATH); i6_core and the setup's packages through Sisyphus's own finder of ``recipe/``.
sispin itself is loaded from this very package without putting its directory on the path, so a sispin installed
editable from another setup never lends that setup's recipe code. What the probe replies is read through
:mod:`sispin.graph.probe.schema`. Nothing runs and nothing is written to work/.

While :func:`recording_inputs` is in use, every graph build records what it read (see
:mod:`sispin.graph.probe.inputs`).
"""

from __future__ import annotations

__all__ = [
    "find_sisyphus",
    "check_setup_commits",
    "check_configs",
    "probe_environment",
    "run_probe",
    "recording_inputs",
    "InputsRead",
    "GraphBuild",
    "load_graph",
    "load_graphs",
    "processors",
]

import contextlib
import contextvars
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from sispin.errors import CheckoutStateError, SisyphusError, UnsupportedVersionError
from sispin.git.registry import registry_directory
from sispin.git.store import SCRATCH_CHECKOUTS_ENV, Store
from sispin.git.verify import at_another_commit, checked_out_commit
from sispin.git.versions import unsupported_setup
from sispin.graph.probe.codec import read_json
from sispin.graph.probe.schema import Reply, SetGraph
from sispin.graph.running import run_probe_process
from sispin.lock.loading import LOCK_ENV, PROBE_TEXT_ENV
from sispin.lock.lockfile import Lockfile, inside_setup
from sispin.lock.urls import name_from_url
from sispin.text import shown_key

#: loading a set's configs must not take longer than this
PROBE_TIMEOUT = 600
#: the probe's first lines: load this sispin package (its directory is argv[1]) under its name, then run the probe
#: on the remaining arguments; the working directory (the setup root) is not put on the path, as under `sis`. It
#: ends without tearing the interpreter down (its report is written and closed by then): freeing a graph of 5,000
#: jobs object by object took a fifth of the build
_BOOTSTRAP = """\
import importlib.util, os, sys
del sys.path[0]
package = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "sispin", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
)
module = sys.modules["sispin"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from sispin.graph.probe.main import main
code = main(sys.argv[2:])
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
"""


class InputsRead:
    """:param ledgers: what each graph build made while recording read (None: a build that recorded nothing)"""

    def __init__(self) -> None:
        self.ledgers: List[Optional[Dict[str, Any]]] = []


#: who records the builds made in this context (a thread's own: `pin check` builds sets side by side)
_RECORDING: contextvars.ContextVar[Tuple[InputsRead, ...]] = contextvars.ContextVar("sispin_recording", default=())


@contextlib.contextmanager
def recording_inputs() -> Iterator[InputsRead]:
    """Record what every graph build made inside the block reads (the set's own and its moved-commit builds)."""
    found = InputsRead()
    token = _RECORDING.set((*_RECORDING.get(), found))
    try:
        yield found
    finally:
        _RECORDING.reset(token)


def find_sisyphus(lockfile: Lockfile) -> Optional[Path]:
    """
    :param lockfile: the setup's lockfile
    :return: the directory holding the setup's Sisyphus package (a ``[setup.*]`` checkout), or None when pin.toml
        pins no Sisyphus (then the environment's is used, as by a ``sis`` installed with pip)
    :raises SisyphusError: when pin.toml pins Sisyphus but its checkout is missing: an unpinned one must not stand in
    """
    for entry in lockfile.setup.values():
        candidate = lockfile.root / entry.path
        if (candidate / "sisyphus" / "toolkit.py").is_file():
            return candidate
    for entry in lockfile.setup.values():
        if name_from_url(entry.url).lower() == "sisyphus":
            raise SisyphusError(f"setup.{entry.name}: no Sisyphus checkout at {entry.path} (run `pin sync`)")
    return None


def check_setup_commits(lockfile: Lockfile) -> None:
    """
    Before a build: each ``[setup.*]`` git checkout is at its pinned commit (local changes are ``pin verify``'s).

    :raises CheckoutStateError: when one is at another commit (the build would record the ids of a Sisyphus or
        i6_core the lock does not pin)
    """
    for entry in lockfile.setup.values():
        checkout = lockfile.root / entry.path
        if not (checkout / ".git").exists():
            continue  # missing (find_sisyphus says so where it matters) or not a git checkout: nothing to compare
        head = checked_out_commit(checkout)
        if head is not None and head != entry.commit:
            raise CheckoutStateError(
                f"setup.{entry.name}: {at_another_commit(entry.path, head, entry.commit)}: a build there would record "
                "another version's ids; check out the pinned commit (or pin that one), then rerun"
            )


def _reply(result: subprocess.CompletedProcess, reply_path: Path, what: str, lockfile: Lockfile) -> Reply:
    """
    :return: what a finished probe replied
    :raises SisyphusError: with its error, or its last line of stderr
    :raises UnsupportedVersionError: instead, when the setup's Sisyphus or i6_core is one sispin does not support (it
        fails in ways of its own: what it is is said, not how it failed)
    """
    try:
        return _read_reply(result, reply_path, what)
    except SisyphusError:
        reason = unsupported_setup(lockfile)
        if reason:
            raise UnsupportedVersionError(reason) from None
        raise


def _read_reply(result: subprocess.CompletedProcess, reply_path: Path, what: str) -> Reply:
    """:return: what a finished probe replied; :raises SisyphusError: with its error, or its last line of stderr"""
    reply = Reply.from_json(read_json(reply_path.read_bytes())) if reply_path.is_file() else None
    if reply is not None and reply.failure is not None:
        if reply.failure.exit_code == UnsupportedVersionError.exit_code:
            # not the configs' fault: the setup's i6_core or Sisyphus cannot build what pin.toml asks for
            raise UnsupportedVersionError(reply.failure.exception.split(": ", 1)[-1])
        failure = SisyphusError(f"{what} failed: {reply.failure.where}: {reply.failure.exception}")
        failure.details = reply.failure.traceback
        raise failure
    if result.returncode != 0 or reply is None:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit code {result.returncode}"
        raise SisyphusError(f"{what} failed: {reason}")
    return reply


def probe_environment(lockfile: Lockfile) -> Dict[str, str]:
    """:return: the environment a probe of the setup runs in (the lock found by name, Sisyphus on the path)"""
    sisyphus_dir = find_sisyphus(lockfile)
    python_path = os.pathsep.join(p for p in (sisyphus_dir and str(sisyphus_dir), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, LOCK_ENV: str(lockfile.path), "PYTHONPATH": python_path}
    env.pop(PROBE_TEXT_ENV, None)
    env.pop(SCRATCH_CHECKOUTS_ENV, None)
    return env


def run_probe(
    lockfile: Lockfile,
    arguments: List[str],
    what: str,
    lock_text: Optional[str] = None,
    *,
    request: Optional[Any] = None,
    scratch_checkouts: bool = False,
) -> Any:
    """
    Run the probe (:mod:`sispin.graph.probe.main`) in the setup root with the setup's Sisyphus, and return what it
    reports: the JSON of a :class:`~sispin.graph.probe.schema.SetGraph` for ``graph`` (see :func:`load_graph`).

    :param lockfile: the setup's lockfile (its root, and its ``[setup.*]`` Sisyphus)
    :param arguments: the probe's mode, then its arguments after OUT
    :param what: what is being done, for error messages
    :param lock_text: run against this lockfile content instead of the file
    :param request: a JSON request, handed to the probe as a file after OUT (before the other arguments)
    :param scratch_checkouts: make the checkouts the store lacks in the probe's scratch directory, not in the store
        (a build at pins no lockfile holds: they would stay behind)
    :raises SisyphusError: when no Sisyphus can be imported or the probe fails
    """
    check_setup_commits(lockfile)
    env = probe_environment(lockfile)
    if arguments[0] == "graph" and request is not None:
        request = {**request, "inputs": _recorded_inputs()}
    with tempfile.TemporaryDirectory(prefix="sispin-probe-") as scratch:
        if lock_text is not None:
            # the text only: the lockfile stays where it is, so that the setup root, the configs' owners
            # (current_set) and the store's record of its users are the real ones
            text_path = Path(scratch) / "pin.toml"
            text_path.write_text(lock_text, encoding="utf-8")
            env[PROBE_TEXT_ENV] = str(text_path)
        if scratch_checkouts:
            env[SCRATCH_CHECKOUTS_ENV] = str(Path(scratch) / "checkouts")
        reply_path = Path(scratch) / "reply.json"
        extra = list(arguments[1:])
        if request is not None:
            request_path = Path(scratch) / "request.json"
            request_path.write_text(json.dumps(request), encoding="utf-8")
            extra.insert(0, str(request_path))
        command = [sys.executable, "-c", _BOOTSTRAP, _PACKAGE, arguments[0], str(reply_path), *extra]
        reply = _reply(run_probe_process(command, lockfile.root, env, PROBE_TIMEOUT, what), reply_path, what, lockfile)
    for found in _RECORDING.get():
        found.ledgers.append(reply.read)
    return reply.report


@dataclasses.dataclass(frozen=True)
class GraphBuild:
    """
    One build of a set's job graph with real Sisyphus.

    :param set_name: the set whose ``configs`` to load
    :param lock_text: load against this lockfile content instead of the file (to see a move before making it)
    :param states: report the whole state of every job (to compare with another build), or of these jobs only (the
        jobs of the kept graph the build is compared with: a job the other graph does not hold is compared with none)
    :param moved: build the set with its pins moved (``lock_text`` holds the moved pins): {"remap": [[url, pinned
        commit, moved commit]], "awaits": {config: awaits the real build passed}}
    :param records: whose argument records to take (walking them costs as much as hashing): "all" (to record the
        set), or the outputs' recorded job ids (the jobs below each output whose id differs, to explain it), or None
    :param contents: report content keys (see :mod:`sispin.graph.probe.contents`): True, beside the records (of a
        graph kept to be compared with); or a kept graph's keys, each job of one of them with its key in place of its
        record
    :param scratch_checkouts: the build is at pins no lockfile holds (``lock_text``): code it checks out goes with it
    :param requests: report what each unfinished job's tasks ask the engine for (to price what would run)
    :param blind: find the jobs that keep their id when a pin's commit moves (the check's guard: a build at its pins
        of a set whose ids are recorded; an upgrade compares two builds instead)
    :param relocated: {place: as}: record each place in every value as the other (the build runs in a temporary
        copy of the setup, ``--against``, whose location is no change of the configs)
    :param finished_of: job ids whose finished state in work/ to report beside the graph (the jobs of a kept graph)
    :param overwrites: find the paths among the jobs' arguments whose ``hash_overwrite`` stands in for a clone's
        commit or another value (the graph's escapes and overwrites, what the check's guard judges); a build only
        compared with a kept graph needs none
    """

    set_name: str
    lock_text: Optional[str] = None
    states: Union[bool, Tuple[str, ...]] = False
    moved: Optional[Dict[str, Any]] = None
    records: Union[str, Mapping[str, str], None] = None
    contents: Union[bool, Tuple[str, ...]] = False
    scratch_checkouts: bool = False
    requests: bool = False
    blind: bool = True
    relocated: Optional[Dict[str, str]] = None
    finished_of: Tuple[str, ...] = ()
    overwrites: bool = True


def load_graph(lockfile: Lockfile, set_name: str, lock_text: Optional[str] = None, **options: Any) -> SetGraph:
    """
    Build the set's job graph with real Sisyphus, in a subprocess.

    :param lockfile: the setup's lockfile
    :param set_name: the set whose ``configs`` to load
    :param lock_text: load against this lockfile content instead of the file
    :param options: the other fields of :class:`GraphBuild`
    :raises SisyphusError: when Sisyphus is missing, the set has no configs, or loading them fails
    """
    build = GraphBuild(set_name, lock_text, **options)
    request, what = _graph_request(lockfile, build)
    report = run_probe(lockfile, ["graph"], what, lock_text, request=request, scratch_checkouts=build.scratch_checkouts)
    return SetGraph.from_json(report)


def load_graphs(
    lockfile: Lockfile, builds: Sequence[GraphBuild], preload: Sequence[str] = ()
) -> List[Union[SetGraph, SisyphusError]]:
    """
    Several builds at once: one process imports Sisyphus and the modules to preload, then forks a process per build,
    as many at a time as this process may use processors. Builds whose configs import TensorFlow pay for that import
    once instead of once each.

    :param lockfile: the setup's lockfile
    :param builds: what to build
    :param preload: modules to import before forking: only what every build imports as it is whatever the pins (a
        graph's ``site_modules``), so that a forked build is the build a process of its own would make
    :return: per build, in order, its graph, or why it could not be built
    :raises SisyphusError: when a set has no configs, or one is missing, or the builds take longer than
        :data:`PROBE_TIMEOUT` each
    :raises UnsupportedVersionError: when the setup's Sisyphus or i6_core is one sispin does not support
    """
    if not builds:
        return []
    prepared = [_graph_request(lockfile, build) for build in builds]
    check_setup_commits(lockfile)
    env = probe_environment(lockfile)
    recording = _recorded_inputs()
    processes = max(1, min(len(builds), len(processors())))
    with tempfile.TemporaryDirectory(prefix="sispin-probe-") as scratch:
        entries = [
            _build_files(Path(scratch) / str(index), build, {**request, "inputs": recording})
            for index, (build, (request, _)) in enumerate(zip(builds, prepared))
        ]
        manifest = Path(scratch) / "manifest.json"
        manifest.write_text(
            json.dumps({"preload": list(preload), "processes": processes, "inputs": recording, "builds": entries}),
            encoding="utf-8",
        )
        codes_path = Path(scratch) / "codes.json"
        what = prepared[0][1] + ("" if len(builds) == 1 else f" ({len(builds)} builds side by side)")
        command = [sys.executable, "-c", _BOOTSTRAP, _PACKAGE, "fork", str(codes_path), str(manifest)]
        result = run_probe_process(
            command, lockfile.root, env, PROBE_TIMEOUT * math.ceil(len(builds) / processes), what
        )
        codes = json.loads(codes_path.read_text(encoding="utf-8")) if codes_path.is_file() else None
        results: List[Union[SetGraph, SisyphusError]] = []
        for index, (entry, (_, build_what)) in enumerate(zip(entries, prepared)):
            child = result  # the process that forks failed before any build: its reason is every build's
            if codes is not None:
                output = [Path(entry[part]).read_text(errors="replace") for part in ("stdout", "stderr")]
                child = subprocess.CompletedProcess(command, codes[index], *output)
            try:
                reply = _reply(child, Path(entry["out"]), build_what, lockfile)
            except UnsupportedVersionError:
                raise
            except SisyphusError as exc:
                results.append(exc)
                continue
            for found in _RECORDING.get():
                found.ledgers.append(reply.read)
            results.append(SetGraph.from_json(reply.report))
    return results


def _build_files(folder: Path, build: GraphBuild, request: Dict[str, Any]) -> Dict[str, Any]:
    """
    Write what the probe needs for one build of :func:`load_graphs` into its folder.

    :return: the build's entry in the probe's manifest (see :func:`sispin.graph.probe.forking.fork_builds`)
    """
    folder.mkdir()
    entry: Dict[str, Any] = {
        part: str(folder / name)
        for part, name in {
            "request": "request.json",
            "out": "reply.json",
            "stdout": "stdout",
            "stderr": "stderr",
        }.items()
    }
    Path(entry["request"]).write_text(json.dumps(request), encoding="utf-8")
    entry["environment"] = {}
    if build.lock_text is not None:
        (folder / "pin.toml").write_text(build.lock_text, encoding="utf-8")
        entry["environment"][PROBE_TEXT_ENV] = str(folder / "pin.toml")
    if build.scratch_checkouts:
        entry["environment"][SCRATCH_CHECKOUTS_ENV] = str(folder / "checkouts")
    return entry


#: this sispin package's directory, which the probe loads (see _BOOTSTRAP)
_PACKAGE = str(Path(__file__).resolve().parent.parent)


def _graph_request(lockfile: Lockfile, build: GraphBuild) -> Tuple[Dict[str, Any], str]:
    """
    :return: the probe's request for the build, and what it is doing (for error messages)
    :raises SisyphusError: when the set has no configs, or one of them is missing or outside the setup
    """
    name = build.set_name
    spec = lockfile.get_set(name)
    if not spec.configs:
        raise SisyphusError(f"set {name!r} lists no configs in pin.toml (sets.{shown_key(name)}.configs)")
    check_configs(lockfile, name)
    request = {
        "set": name,
        "configs": list(spec.configs),
        "states": build.states if isinstance(build.states, bool) else list(build.states),
        "moved": build.moved,
        "records": build.records,
        "contents": build.contents if isinstance(build.contents, bool) else list(build.contents),
        "requests": build.requests,
        "blind": build.blind,
        "relocated": build.relocated,
        "finished_of": list(build.finished_of),
        "overwrites": build.overwrites,
    }
    return request, f"loading the configs of set {name!r}" + (" with its pins moved" if build.moved else "")


def check_configs(lockfile: Lockfile, set_name: str) -> None:
    """
    What can be known of a set's configs without building it: each is a file of the setup.

    :raises SisyphusError: when one is missing or leads out of the setup
    """
    for config in lockfile.get_set(set_name).configs:
        if not (lockfile.root / config).is_file():
            raise SisyphusError(f"sets.{shown_key(set_name)}.configs: {config} does not exist")
        if not inside_setup(lockfile.root, config):
            raise SisyphusError(
                f"sets.{shown_key(set_name)}.configs: {config} leads out of the setup through a symlink"
            )


def _recorded_inputs() -> Optional[Dict[str, List[str]]]:
    """
    :return: whether the probe records what its builds read (None: not), which places are no inputs besides its
        own files (the store's mirrors, which a fetch rewrites (settings.py's redirect looks at them) while every pin
        is in pin.toml; the store's record of the setups it serves, which a checkout writes), and where each checkout
        is written whole before a build reads it (the store's checkouts: a file there that is new is no file that may
        still be changing)
    """
    if not _RECORDING.get():
        return None
    store = Store()
    ignored = [str(store.mirrors_directory), str(registry_directory(store.directory))]
    return {"ignored": ignored, "made_whole": [str(store.checkouts_directory)]}


def processors() -> Sequence[int]:
    """:return: the processors this process may run on (a cluster job's share)"""
    try:
        return list(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return list(range(os.cpu_count() or 1))
