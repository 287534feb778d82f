"""
Adapter side of the hash guard: load Sisyphus configs and describe the job graph they build, without running a job.

Run by :mod:`sispin.graph.build` in the setup root, in a fresh process (Sisyphus keeps one global graph and one job
object per id, so every set gets its own process), in one of three modes:

- ``graph OUT CONFIG ...``: the outputs, jobs and clones the configs build, and every clone output that reaches a
  job's hashed arguments with a ``hash_overwrite`` (directly, through ``.copy()``/``join_right``, in attributes,
  dicts, lists, ``DelayedFormat``...);
- ``clone-ids OUT REQUEST``: job ids of hand-written CloneGitRepositoryJob calls and of their ``exp.repo()``
  replacements;
- ``set-clones OUT SET ...``: the job id of each of the sets' clone jobs.

It writes JSON to OUT rather than stdout, which config code may print to. It only reads work/ (to see which jobs
finished). Sisyphus and recipe code (i6_core, the setup's own packages) are imported the way ``sis manager`` in the
setup root imports them: Sisyphus from the ``[setup.*]`` checkout or the environment, recipes through Sisyphus's own
finder of the setup's ``recipe/``; :mod:`sispin.graph.build` never puts the directory beside the installed sispin on the
path.
"""

from __future__ import annotations

import enum
import hashlib
import inspect
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Set, Tuple

#: exit code of a probe that found no (rwth-i6) Sisyphus to import
NO_SISYPHUS = 3
#: exit code of a probe whose configs raised; OUT then holds {"error": {"where", "exception", "traceback"}}
CONFIG_FAILED = 4
#: a job's argument record lists at most this many leaves; below the cut, containers are single digests (what
#: pin.snapshot.toml keeps)
MAX_LEAVES = 300
#: the same for the detailed record of a live graph, which explains a change between two graphs built now (a
#: network dict of thousands of leaves, in the upgrade advisor)
MAX_DETAIL_LEAVES = 20_000
#: and goes at most this deep into nested arguments
MAX_DEPTH = 12
#: values whose repr is longer are recorded by digest only
MAX_VALUE = 120


def describe(config_files: List[str], moved_pins: bool = False) -> Dict[str, Any]:
    """
    :param config_files: Sisyphus config files, relative to the setup root (the working directory)
    :param moved_pins: build every pinned clone job at another commit (``exp.repo()`` only; checkouts and imports in
        the manager keep the real one), to see which jobs' ids follow the commit
    :return: {"outputs": {name: {"job", "path"}}, "jobs": {job id: finished}, "clones": [{"job", "url", "commit",
        "branch", "hash_overwrite"}], "escapes": [{"job", "argument", "clone", "hash_overwrite"}],
        "records": {job id: {"args": {argument path: [digest, value or None, input job id or None]},
        "custom_hash": bool}}, "inputs": {job id: [ids of the jobs whose outputs it uses]}}
    """
    from sisyphus import graph
    from sisyphus import toolkit as tk
    from sisyphus.loader import config_manager

    if moved_pins:
        _move_pins()
    config_manager.load_configs(config_files)
    report: Dict[str, Any] = {"outputs": {}, "jobs": {}, "clones": [], "escapes": [], "records": {}, "inputs": {}}
    for target in tk.sis_graph.targets:
        if isinstance(target, graph.OutputPath):
            path = target._sis_path
            creator = path.creator
            report["outputs"][target.name] = {"job": creator.job_id() if creator else None, "path": path.path}
    # update_graph=False: walk the graph as built, without the runnable checks that would touch work/
    for job in tk.sis_graph.jobs(update_graph=False):
        _describe_job(job, report)
    return report


def _move_pins() -> None:
    """Make every ``exp.repo()``/``exp.clone_job()`` of this process clone another commit than the pin."""
    from sispin.sets import ExperimentSet

    pinned = ExperimentSet.clone_kwargs

    def moved(self: Any, repo: str) -> Dict[str, Any]:
        kwargs = pinned(self, repo)
        # another commit than the pin: a job whose id stays the same does not depend on the commit
        kwargs["commit"] = kwargs["commit"][:-1] + format((int(kwargs["commit"][-1], 16) + 1) % 16, "x")
        return kwargs

    ExperimentSet.clone_kwargs = moved  # type: ignore[method-assign]


def _describe_job(job: Any, report: Dict[str, Any]) -> None:
    """Add a job to the report: whether it finished, its inputs, its record, and its clone or escapes."""
    from sisyphus.job import job_finished

    from sispin.clonejob import CLASS_NAME
    from sispin.sets import shown_overwrite

    job_id = job.job_id()
    report["jobs"][job_id] = job_finished(job._sis_path())
    report["inputs"][job_id] = sorted({path.creator.job_id() for path in job._sis_inputs if path.creator is not None})
    report["records"][job_id] = _record(job)
    if type(job).__name__ == CLASS_NAME:
        report["clones"].append(
            {
                "job": job_id,
                "url": job.url,
                "commit": job.commit,
                "branch": job.branch,
                "hash_overwrite": shown_overwrite(job.out_repository.hash_overwrite),
            }
        )
    for argument, path in _hashed_paths(job):
        creator = path.creator
        if path.hash_overwrite is not None and type(creator).__name__ == CLASS_NAME:
            report["escapes"].append(
                {
                    "job": job_id,
                    "argument": argument,
                    "clone": creator.job_id(),
                    "hash_overwrite": shown_overwrite(path.hash_overwrite),
                }
            )


def _record(job: Any) -> Dict[str, Any]:
    """
    What the job's id is made of, leaf by leaf: every argument path Sisyphus hashes (``Job.hash``: the arguments but
    those at their ``__sis_hash_exclude__`` value, and ``__sis_version__``) with a digest of its content, its value
    when short, and for a path the id of the job that creates it. A path's digest covers its creator's class, file
    and hash_overwrite but not the creator's id, so that a changed input shows as an input, not as this job's own
    change. Above MAX_LEAVES or MAX_DEPTH, a container is one digest (a cut of the Merkle tree).
    """
    from sisyphus.job import Job

    excluded = type(job).__sis_hash_exclude__
    hashed = {k: v for k, v in job._sis_kwargs.items() if not (k in excluded and excluded[k] == v)}
    if type(job).__sis_version__ is not None:
        hashed["__sis_version__"] = type(job).__sis_version__
    records = []
    for budget in (MAX_LEAVES, MAX_DETAIL_LEAVES):
        leaves: Dict[str, List[Any]] = {}
        for name, value in sorted(hashed.items()):
            _walk(value, name, 1, leaves, budget)
        records.append(leaves)
    args, detail = records
    return {
        "args": args,
        "detail": detail if detail != args else None,
        "custom_hash": getattr(type(job).hash, "__func__", None) is not Job.hash.__func__,
    }


def _walk(value: Any, where: str, depth: int, leaves: Dict[str, List[Any]], budget: int) -> None:
    """Add value's leaves below ``where`` to leaves, following Sisyphus's sis_hash_helper."""
    children = _children(value) if depth < MAX_DEPTH and len(leaves) < budget else None
    if children is None:
        text, job = _leaf(value)
        digest = hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:8]
        shown = text if len(text) <= MAX_VALUE and not text.startswith("<") else None
        leaves[where] = [digest, shown, job]
        return
    for suffix, child in children:
        _walk(child, f"{where}{suffix}", depth + 1, leaves, budget)


def _children(value: Any) -> Any:
    """(path suffix, child) pairs of a container Sisyphus hashes element by element; None for a leaf."""
    from sisyphus.hash import get_object_state

    if value is None or type(value) in (int, float, bool, str, complex, bytes) or _is_path(value):
        return None
    if hasattr(value, "_sis_id") or isinstance(value, enum.Enum) or inspect.isfunction(value) or inspect.isclass(value):
        return None
    if type(value) in (list, tuple):
        return [(f"[{i}]", item) for i, item in enumerate(value)] or None
    if type(value) in (set, frozenset):
        return None
    if isinstance(value, dict):
        labelled = sorted((_stable_repr(key), item) for key, item in value.items())
        return [(f"[{label}]", item) for label, item in labelled] or None
    # an object with its own _sis_hash (i6_core's ReturnnConfig) hashes part of its state: its state is walked all
    # the same, so that a change shows at the attribute that holds it
    state = get_object_state(value)
    if isinstance(state, dict):
        return [(f".{key}", item) for key, item in sorted(state.items())] or None
    return [("", state)]


def _stable_repr(value: Any) -> str:
    """
    repr() without what changes from process to process: an object's default repr names its address, so such
    objects are named by their type and a digest of what Sisyphus hashes of them (same state, same name).
    """
    text = repr(value)
    if " at 0x" not in text:
        return text
    from sisyphus.hash import sis_hash_helper

    return f"<{type(value).__qualname__} {hashlib.sha256(sis_hash_helper(value)).hexdigest()[:8]}>"


def _is_path(value: Any) -> bool:
    return getattr(value, "_sis_path", False) is True and not isinstance(value, type)


def _leaf(value: Any) -> Tuple[str, Any]:
    """(canonical text of a leaf, id of the job that creates it when it is a path)"""
    from sisyphus.hash import sis_hash_helper

    from sispin.sets import shown_overwrite

    if _is_path(value):
        creator = value.creator
        overwrite = f" hash_overwrite={shown_overwrite(value.hash_overwrite)!r}" if value.hash_overwrite else ""
        if creator is None:
            return f"Path({value.path!r}{overwrite})", None
        return f"Path({type(creator).__name__}, {value.path!r}{overwrite})", creator.job_id()
    if hasattr(value, "_sis_id"):
        return f"Job({value.job_id()})", value.job_id()
    if (
        value is None
        or type(value) in (int, float, bool, str, complex)
        or type(value) in (list, tuple, dict)
        and not value
    ):
        return repr(value), None
    if inspect.isfunction(value) or inspect.isclass(value):
        return f"{value.__module__}.{value.__qualname__}", None
    if type(value) in (set, frozenset):
        return "{" + ", ".join(sorted(_stable_repr(item) for item in value)) + "}", None
    # anything else (a cut container, bytes, an enum...): Sisyphus's own bytes, shown as a type and digest
    return f"<{type(value).__qualname__} {hashlib.sha256(sis_hash_helper(value)).hexdigest()[:8]}>", None


def _hashed_paths(job: Any) -> Iterator[Tuple[str, Any]]:
    """
    Every Sisyphus path object in the job's hashed arguments, with the argument path that leads to it (e.g.
    ``returnn_config.config['rc_root']``). The walk is Sisyphus's own (``sisyphus.tools.extract_paths``: lists,
    tuples, sets, dicts without ``_sis_`` keys, other objects through their hashed state), but keeps every path
    object: Sisyphus's set of inputs merges a copy that carries a hash_overwrite into the original it equals.
    """
    from sisyphus.block import Block
    from sisyphus.hash import get_object_state

    excluded = getattr(job, "__sis_hash_exclude__", {})
    stack: List[Tuple[str, Any]] = [
        (name, value)
        for name, value in sorted(job._sis_kwargs.items(), reverse=True)
        if not (name in excluded and excluded[name] == value)
    ]
    seen: Set[int] = set()
    while stack:
        where, value = stack.pop()
        if id(value) in seen or value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            continue
        seen.add(id(value))
        if isinstance(value, (Block, enum.Enum)) or type(value) is type or hasattr(value, "_sis_id"):
            continue  # a job among the arguments is hashed as its id: its own arguments are its own
        if getattr(value, "_sis_path", False) is True:
            yield where, value
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
        elif isinstance(value, (set, frozenset)):
            stack.extend((f"{where}{{}}", item) for item in value)
        elif isinstance(value, dict):
            stack.extend(
                (f"{where}[{key!r}]", item)
                for key, item in reversed(list(value.items()))
                if not (isinstance(key, str) and key.startswith("_sis_"))
            )
        else:
            state = get_object_state(value)
            if isinstance(state, dict):
                stack.extend((f"{where}.{key}", item) for key, item in reversed(list(state.items())))
            else:
                stack.append((where, state))


def clone_ids(request: Dict[str, Any]) -> List[Dict[str, str]]:
    """
    :param request: {"set": set name, "calls": [{"repo", "positional", "arguments"}]}: each call as written
        (its first ``positional`` arguments positionally, in CloneGitRepositoryJob's parameter order)
    :return: per call {"original": job id of the call as written, "replacement": id of exp.clone_job(repo)}
    """
    from sispin.clonejob import PARAMETERS, job_class
    from sispin.sets import experiment_set

    exp = experiment_set(request["set"])
    results = []
    for call in request["calls"]:
        names = [name for name, _ in PARAMETERS][: call["positional"]]
        args = [call["arguments"][name] for name in names]
        kwargs = {k: v for k, v in call["arguments"].items() if k not in names}
        results.append(
            {
                "original": job_class()(*args, **kwargs).job_id(),
                "replacement": exp.clone_job(call["repo"]).job_id(),
            }
        )
    return results


def set_clones(set_names: List[str]) -> Dict[str, Dict[str, str]]:
    """:return: set name -> repository name -> id of the set's CloneGitRepositoryJob for it"""
    from sispin.sets import experiment_set

    sets = [experiment_set(name) for name in set_names]
    return {exp.name: {repo: exp.clone_job(repo).job_id() for repo in exp.spec.pins} for exp in sets}


def _never_stale_bytecode(root: str) -> None:
    """
    Load no module of the setup from bytecode older than its source, and write none.

    A .pyc records its source's modification time in whole seconds, with its size: a config rewritten within the
    second its bytecode was written, at the same size (a script, the pre-commit hook right after an edit), passes
    for unchanged, and Python would run the old code. Below the setup root, bytecode is used only when it was written
    after the source last changed; otherwise the source is compiled (and, as nothing is written, left as it was).
    """
    import importlib.machinery
    import importlib.util

    sys.dont_write_bytecode = True
    prefix = os.path.join(os.path.abspath(root), "")
    stats_of = importlib.machinery.SourceFileLoader.path_stats

    def path_stats(self: Any, path: str) -> Dict[str, Any]:
        stats = stats_of(self, path)
        if path.startswith(prefix):
            try:
                written = os.stat(importlib.util.cache_from_source(path)).st_mtime_ns
            except (OSError, ValueError, NotImplementedError):
                return stats  # no bytecode to trust or distrust
            if written <= os.stat(path).st_mtime_ns:
                return {**stats, "mtime": -1}  # matches no .pyc: the source is compiled
        return stats

    importlib.machinery.SourceFileLoader.path_stats = path_stats  # type: ignore[method-assign]


def _find_sisyphus() -> None:
    """Exit with NO_SISYPHUS and one line when no rwth-i6 Sisyphus can be imported (PyPI's 'sisyphus' is another)."""
    try:
        import sisyphus.toolkit  # noqa: F401
    except ImportError as exc:
        found = sys.modules.get("sisyphus")
        where = f" ({found.__file__} is another package of that name)" if found is not None else ""
        print(
            f"no Sisyphus to import{where}: {exc}; add it to pin.toml's [setup.*] and run `pin sync`, "
            "pip install a Sisyphus checkout, or put one on PYTHONPATH",
            file=sys.stderr,
        )
        sys.exit(NO_SISYPHUS)


def main(argv: List[str]) -> int:
    """:param argv: ``graph OUT CONFIG ...``, ``clone-ids OUT REQUEST`` or ``set-clones OUT SET ...``"""
    mode, out, rest = argv[0], argv[1], argv[2:]
    _never_stale_bytecode(os.getcwd())
    _find_sisyphus()
    code = 0
    try:
        if mode in ("graph", "graph-moved"):
            report: Any = describe(rest, moved_pins=mode == "graph-moved")
        elif mode == "set-clones":
            report = set_clones(rest)
        else:
            with open(rest[0], encoding="utf-8") as handle:
                report = clone_ids(json.load(handle))
    except Exception as exc:  # the configs' own error: reported with its place, for one line and for --debug
        report, code = {"error": _config_error(exc)}, CONFIG_FAILED
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    return code


def _config_error(exc: BaseException) -> Dict[str, str]:
    """
    :return: {"where": file:line of the deepest frame in the setup's own code (configs, recipes; not Sisyphus or
        sispin), "exception": "Type: message", "traceback": the whole traceback}
    """
    import traceback

    root = os.getcwd() + os.sep
    ours = (os.path.dirname(os.path.abspath(__file__)) + os.sep, os.path.dirname(_module_dir("sisyphus")) + os.sep)
    frames = traceback.extract_tb(exc.__traceback__)
    setup_frames = [
        f
        for f in frames
        if os.path.abspath(f.filename).startswith(root) and not os.path.abspath(f.filename).startswith(ours)
    ]
    frame = (setup_frames or frames or [None])[-1]
    where = f"{os.path.relpath(frame.filename)}:{frame.lineno}" if frame else "?"
    return {
        "where": where,
        "exception": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


def _module_dir(name: str) -> str:
    module = sys.modules.get(name)
    return os.path.dirname(os.path.abspath(module.__file__)) if module and module.__file__ else "/nonexistent"
