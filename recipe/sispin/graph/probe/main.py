"""
Adapter side of the hash guard: load Sisyphus configs and describe the job graph they build, without running a job.

Run by :mod:`sispin.graph.build` in the setup root, in a fresh process (Sisyphus keeps one global graph and one job
object per id, so every build gets its own process), in one of four modes:

- ``graph OUT REQUEST``: the outputs, jobs and clones a set's configs build, every clone output that reaches a job's
  hashed arguments with a ``hash_overwrite`` (directly, through ``.copy()``/``join_right``, in attributes, dicts,
  lists, ``DelayedFormat``...), and the moved-commit check of :mod:`sispin.graph.probe.moving`;
- ``clone-ids OUT REQUEST``: job ids of hand-written CloneGitRepositoryJob calls and of their ``exp.repo()``
  replacements;
- ``set-clones OUT SET ...``: the job id of each of the sets' clone jobs;
- ``fork OUT MANIFEST``: several ``graph`` builds, each in a process forked from this one (see
  :mod:`sispin.graph.probe.forking`).

It writes JSON to OUT rather than stdout, which config code may print to. It only reads work/ (to see which jobs
finished). Sisyphus and recipe code (i6_core, the setup's own packages) are imported the way ``sis manager`` in the
setup root imports them: Sisyphus from the ``[setup.*]`` checkout or the environment, recipes through Sisyphus's own
finder of the setup's ``recipe/``; :mod:`sispin.graph.build` never puts the directory beside the installed sispin on the
path.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from sispin.graph.probe.adapter import (
    SISPIN_DIR,
    SISYPHUS_ENVIRONMENT,
    act_as_manager,
    find_sisyphus,
    finished,
    finished_at,
    given_arguments,
    graph_jobs,
    held_arguments,
    input_jobs,
    overwrite_of,
    registered_outputs,
    suffix_follows_overwrite,
    waiting_configs,
)
from sispin.graph.probe.bytecode import never_stale_bytecode
from sispin.graph.probe.codec import collector_paused
from sispin.graph.probe.contents import records_and_contents
from sispin.graph.probe.forking import EnvironmentWrites, fork_builds, site_modules
from sispin.graph.probe.records import hashed_paths, relocating
from sispin.graph.probe.requests import unfinished_requests
from sispin.graph.probe.schema import (
    Clone,
    CloneIds,
    CloneIdsRequest,
    Content,
    Escape,
    Failure,
    JobRecord,
    Overwrite,
    RecordedOutput,
    Reply,
    SetGraph,
    differing_outputs,
)
from sispin.graph.probe.values import CloneSites, ValueUses

#: exit code of a probe whose configs raised; OUT then holds a Reply with the failure
CONFIG_FAILED = 4


def describe(
    request: Dict[str, Any], loaded: Callable[[], None] = lambda: None, site: Callable[[], Tuple[str, ...]] = tuple
) -> SetGraph:
    """
    :param request: a :class:`~sispin.graph.build.GraphBuild` as :mod:`sispin.graph.build` sends it: "set", "configs"
        (relative to the setup root, the working directory), "states", "moved" (None: at its pins), "records" ("all",
        {output: recorded job id}, or None), "contents", "requests", "blind", "relocated", "finished_of", "overwrites"
    :param loaded: called once the configs are loaded (what is read after that is no input of the graph)
    :param site: the graph's ``site_modules``
    :return: the graph the configs built (``states`` when asked for, or when a value left the graph)
    """
    from sispin.graph.probe import moving
    from sispin.graph.probe.aliases import Assignments, Collisions, bound_aliases
    from sispin.graph.probe.state import References, held_jobs, requested_states

    act_as_manager()
    moved = request.get("moved")
    uses, awaits = ValueUses(moving.set_pins(request["set"])), moving.Awaits(moved["awaits"] if moved else None)
    aliases = bound_aliases(request["set"])
    assignments, collisions, creation = Assignments(), Collisions([] if moved else aliases), moving.CreationArguments()
    sites = CloneSites()
    watching = [awaits.counting(), assignments.recording(), collisions.watching(), sites.recording()]
    watching += [moving.hand_written_clones_moved(moved["remap"])] if moved else [uses.recording()]
    # the jobs that keep their id when a pin moves: for the check's guard (an upgrade compares two builds instead)
    blindness = not moved and request.get("blind", True)
    _load_configs(request["configs"], watching + ([creation.recording()] if blindness else []))
    loaded()
    with collector_paused():  # from here on sispin's own walks of the graph, which make a container per leaf
        # the graph as built, and every job its jobs hold where Sisyphus does not look (__sis_state__, a later path)
        jobs = held_jobs(graph_jobs(), references := References())
        found, outputs = _Found(jobs, sites.found, request.get("overwrites", True)), _outputs()
        pinned = moving.pinned_clones(jobs, request["set"])
        blind, changed_jobs = moving.blind_jobs(jobs, pinned, creation, references) if blindness else ({}, [])
        records, contents = _records(jobs, outputs, found.inputs, request)
        graph = SetGraph(
            set_name=request["set"],
            outputs=outputs,
            jobs=found.jobs,
            clones=tuple(found.clones),
            escapes=tuple(found.escapes),
            records=records,
            contents=contents,
            inputs=found.inputs,
            pinned={clone.job_id(): repo for repo, clones in pinned.items() for clone in clones},
            blind={job: tuple(repos) for job, repos in blind.items()},
            changed_jobs=tuple(changed_jobs),
            value_uses=tuple(uses.found),
            awaits=awaits.passed,
            waiting=tuple(waiting_configs()),
            states=requested_states(jobs, request.get("states"), bool(uses.found)),
            assignments=tuple(assignments.found),
            collisions=tuple(collisions.found),
            aliases={repo: (clone, value) for _, clone, value, repo in aliases},
            overwrites=found.overwrites_given(assignments.elsewhere),
            requests=None,
            site_modules=site(),
            finished_of={job: finished_at(job) for job in request.get("finished_of", ())},
        )
        # last: listing a job's tasks runs recipe code, which could change what the states and records hold
        return replace(graph, requests=unfinished_requests(jobs, found.jobs)) if request.get("requests") else graph


def _load_configs(configs: List[str], watching: List[Any]) -> None:
    """Load the configs as ``sis manager`` does, with what watches them while they load."""
    from sisyphus.loader import config_manager

    with contextlib.ExitStack() as recording:
        for context in watching:
            recording.enter_context(context)
        config_manager.load_configs(configs)


def _records(
    jobs: List[Any], outputs: Dict[str, RecordedOutput], inputs: Dict[str, Any], request: Dict[str, Any]
) -> Tuple[Dict[str, JobRecord], Dict[str, Content]]:
    """
    :return: the records asked for (see :func:`describe`), each value with the places ``relocated`` names moved: what
        an id is made of is walked only where it is needed, for the snapshot or below an id that differs; and the
        content keys asked for (none where places are relocated: a key is of the text as written)
    """
    relocated = request.get("relocated")
    contents = False if relocated else request.get("contents", False)
    wanted = _to_record(jobs, outputs, inputs, request.get("records"))
    return records_and_contents(wanted, relocating(relocated), contents)


def _to_record(jobs: List[Any], outputs: Dict[str, RecordedOutput], inputs: Dict[str, Any], wanted: Any) -> List[Any]:
    """:return: the jobs whose records were asked for"""
    if wanted == "all":
        return jobs
    differing = [outputs[name].job for name in differing_outputs(outputs, wanted)]
    cone: Set[str] = set()
    while differing:
        job = differing.pop()
        if job not in cone:
            cone.add(job)
            differing.extend(inputs.get(job, ()))
    return [job for job in jobs if job.job_id() in cone]


def _outputs() -> Dict[str, RecordedOutput]:
    """The registered outputs by name."""
    return {
        name: RecordedOutput(path.creator.job_id() if path.creator else "", path.path)
        for name, path in registered_outputs()
    }


class _Found:
    """What the jobs of a graph are, job by job: whether each finished, its inputs, and its clone or escapes."""

    def __init__(self, jobs: List[Any], clone_sites: Dict[str, str], overwrites: bool) -> None:
        """
        :param jobs: the jobs of the graph
        :param clone_sites: clone job id -> file:line of the config code that built it
        :param overwrites: walk each job's hashed arguments for the paths that carry a hash_overwrite (escapes and
            overwrites; a walk as long as Sisyphus's own of them)
        """
        self.clone_sites = clone_sites
        self.jobs: Dict[str, bool] = {}
        self.inputs: Dict[str, Tuple[str, ...]] = {}
        self.clones: List[Clone] = []
        self.escapes: List[Escape] = []
        #: (value, path) of each string overwrite on a path no clone created -> (job, argument) of its first use
        self.overwrites: Dict[Tuple[str, str], Tuple[str, str]] = {}
        for job in jobs:
            self._add(job, overwrites)

    def _add(self, job: Any, overwrites: bool) -> None:
        """
        :param job: a job of the graph
        :param overwrites: look for the paths among its hashed arguments that carry a hash_overwrite
        """
        from sispin.clonejob import is_clone
        from sispin.sets import shown_overwrite

        job_id = job.job_id()
        self.jobs[job_id] = finished(job)
        self.inputs[job_id] = tuple(sorted({used.job_id() for used in input_jobs(job)}))
        if is_clone(job):
            self.clones.append(_clone(job, self.clone_sites.get(job_id, "")))
        for argument, path in hashed_paths(job) if overwrites else ():
            creator, overwrite = path.creator, overwrite_of(path)
            if overwrite is None:
                continue
            if is_clone(creator):
                shown = shown_overwrite(overwrite)
                self.escapes.append(Escape(job_id, argument, creator.job_id(), shown, alias_form(path, creator)))
            elif overwrite[0] is None:
                # hashes as (None, value) whatever the path is: with a value the lock binds, like that pin's clone
                self.overwrites.setdefault((overwrite[1], path.path), (job_id, argument))

    def overwrites_given(self, given: Dict[Tuple[str, str], str]) -> Tuple[Overwrite, ...]:
        """:param given: (value, path) of a string overwrite -> file:line where config code first gave it"""
        return tuple(
            Overwrite(value, path, job, argument, given.get((value, path), ""))
            for (value, path), (job, argument) in self.overwrites.items()
        )


def _clone(job: Any, where: str) -> Clone:
    """
    :param job: a CloneGitRepositoryJob of the graph
    :param where: file:line of the config code that built it
    """
    from sispin.sets import shown_overwrite

    held = {name: tuple(value) if isinstance(value, list) else value for name, value in held_arguments(job).items()}
    overwrite = overwrite_of(job.out_repository)
    return Clone(
        job=job.job_id(),
        hash_overwrite=shown_overwrite(overwrite),
        alias=None if overwrite is None else alias_form(job.out_repository, job),
        changed=tuple(_changed_after_creation(job)),
        where=where,
        **held,
    )


def alias_form(path: Any, clone: Any) -> Optional[str]:
    """
    :return: the value a path of the clone carries as an alias: its string overwrite, less the suffix a
        ``join_right``/``copy_append`` added to both the path and the overwrite (a Sisyphus whose derived paths keep
        the overwrite as it was: the overwrite itself); None when the overwrite names another job's path (a tuple)
        or does not follow the path (``p = repo.join_right("x"); p.hash_overwrite = "NAME"``)
    """
    creator, value = overwrite_of(path)
    own = vars(clone)["out_repository"].path
    if creator is not None or not path.path.startswith(own):
        return None
    suffix = path.path[len(own) :]
    if not suffix_follows_overwrite():
        return value
    return value[: len(value) - len(suffix)] if value.endswith(suffix) else None


def _changed_after_creation(clone: Any) -> List[str]:
    """
    :return: the arguments of a CloneGitRepositoryJob that its object no longer holds as its id was made of them
        (``job.patches = [...]`` after creation: what it checks out differs, its id does not), as ``name: old -> new``
    """
    held, given = held_arguments(clone), given_arguments(clone)
    return [f"{name}: {given[name]!r} -> {held[name]!r}" for name in given if held[name] != given[name]]


def clone_ids(request: CloneIdsRequest) -> List[CloneIds]:
    """
    :param request: each call as written, and the set whose pins replace them
    :return: the job ids of each call as written and of its replacement, in the request's order
    """
    from sispin.clonejob import class_parameters, job_class
    from sispin.sets import experiment_set

    exp = experiment_set(request.set_name)
    results = []
    for call in request.calls:
        names = [name for name, _ in class_parameters()][: call.positional]
        args = [call.arguments[name] for name in names]
        kwargs = {k: v for k, v in call.arguments.items() if k not in names}
        original = job_class()(*args, **kwargs).job_id()
        results.append(CloneIds(original, exp.clone_job(call.repo).job_id()))
    return results


def set_clones(set_names: List[str]) -> Dict[str, Dict[str, str]]:
    """:return: set name -> repository name -> id of the set's CloneGitRepositoryJob for it"""
    from sispin.sets import experiment_set

    sets = [experiment_set(name) for name in set_names]
    return {exp.name: {repo: exp.clone_job(repo).job_id() for repo in exp.spec.pins} for exp in sets}


def main(argv: List[str]) -> int:
    """
    :param argv: ``graph OUT REQUEST``, ``clone-ids OUT REQUEST``, ``set-clones OUT SET ...``, or ``fork OUT MANIFEST``
        (several graph builds, see :func:`sispin.graph.probe.forking.fork_builds`)
    """
    mode, out, rest = argv[0], argv[1], argv[2:]
    never_stale_bytecode(os.getcwd())
    if mode == "fork":
        return fork_builds(out, rest[0], _answer, _input_recorder)
    request: Any = None
    if mode != "set-clones":
        with open(rest[0], encoding="utf-8") as handle:
            request = json.load(handle)
    # from before Sisyphus is imported: its settings.py is an input of the build too
    recorder = _input_recorder(rest[0], request["inputs"]) if mode == "graph" and request.get("inputs") else None
    if recorder:
        recorder.start()
    return _answer(mode, out, request, rest, recorder)


def _answer(
    mode: str, out: str, request: Any, rest: List[str], recorder: Any, preloaded: Set[str] = frozenset()
) -> int:
    """
    Import Sisyphus, build what the mode asks for, and write the Reply to out.

    :param preloaded: modules imported before (see :mod:`sispin.graph.probe.forking`)
    :return: the probe's exit code
    """
    report: Any
    writes = EnvironmentWrites()
    with writes.watching():
        find_sisyphus()
        before = set(sys.modules) - preloaded
        try:
            if mode == "graph":
                # an import may read what the setup's code (settings.py too) wrote into the environment: then no
                # build of the set imports anything before that code has run
                def site() -> Tuple[str, ...]:
                    return () if writes.by_setup else site_modules(before)

                report = describe(request, recorder.stop if recorder else lambda: None, site)
            else:
                report = set_clones(rest) if mode == "set-clones" else clone_ids(CloneIdsRequest.from_json(request))
        except (Exception, SystemExit) as exc:  # the configs' own error (or exit): its place, for one line and --debug
            report = _config_error(exc)
    if isinstance(report, Failure):
        reply = Reply(failure=report)
    else:
        graph = isinstance(report, SetGraph)
        reply = Reply(report, _ledger(recorder, report) if recorder and graph else None)
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(reply.to_json_text())  # at once: json.dump encodes chunk by chunk in Python, 5x slower
    return CONFIG_FAILED if reply.failure else 0


def _input_recorder(request_path: str, inputs: Dict[str, List[str]]) -> Any:
    """An InputRecorder for this build: the setup's own code is what lies below the root but outside sispin and
    Sisyphus; pin.toml, the caches and the probe's scratch files are keyed on by the core (or are no input)."""
    import importlib.util

    from sispin.graph.probe.inputs import InputRecorder
    from sispin.lock.files import CACHE_DIR, SNAPSHOT_NAME
    from sispin.lock.loading import LOCK_ENV

    lock = os.environ[LOCK_ENV]
    found = importlib.util.find_spec("sisyphus")
    # sispin, and the Python installation with its packages (a virtual environment may live in the setup root)
    foreign = [SISPIN_DIR, sys.prefix, sys.base_prefix]
    if found is not None and found.origin:
        foreign.append(os.path.dirname(found.origin))
    root = os.path.dirname(lock)
    ignored = [lock, os.path.join(root, SNAPSHOT_NAME), os.path.join(root, CACHE_DIR), os.path.dirname(request_path)]
    ignored += inputs["ignored"]
    # the user's PYTHONPATH (after the Sisyphus checkout sispin puts first): recipe code of the setup's own
    elsewhere = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    return InputRecorder(os.getcwd(), foreign, ignored, elsewhere, inputs["made_whole"])


def _ledger(recorder: Any, graph: SetGraph) -> Dict[str, Any]:
    from sisyphus import global_settings

    from sispin.lock.loading import PROBE_TEXT_ENV
    from sispin.sets import asked_for

    # Sisyphus takes a setting from every SIS_* variable, and a few more of the environment's
    ledger = recorder.ledger(asked_for(), [global_settings.ENVIRONMENT_SETTINGS_PREFIX])
    for name in SISYPHUS_ENVIRONMENT:
        ledger["environment"].setdefault(name, os.environ.get(name))
    ledger["environment"].pop(PROBE_TEXT_ENV, None)  # the moved pins' text: keyed on by the core
    if not ledger["volatile"] and (any(graph.awaits.values()) or graph.waiting):
        ledger["volatile"] = "an async config waits for jobs: its graph depends on work/"
    return ledger


def _config_error(exc: BaseException) -> Failure:
    """:return: where the configs failed, and how"""
    import traceback

    root = os.getcwd() + os.sep
    ours = (SISPIN_DIR, os.path.dirname(_module_dir("sisyphus")) + os.sep)
    frames = traceback.extract_tb(exc.__traceback__)
    setup_frames = [
        f
        for f in frames
        if os.path.abspath(f.filename).startswith(root) and not os.path.abspath(f.filename).startswith(ours)
    ]
    frame = (setup_frames or frames or [None])[-1]
    where = f"{os.path.relpath(frame.filename)}:{frame.lineno}" if frame else "?"
    from sispin.errors import PinError

    return Failure(
        where=where,
        exception=f"{type(exc).__name__}: {exc}",
        traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        exit_code=exc.exit_code if isinstance(exc, PinError) else None,
    )


def _module_dir(name: str) -> str:
    module = sys.modules.get(name)
    return os.path.dirname(os.path.abspath(module.__file__)) if module and module.__file__ else "/nonexistent"
