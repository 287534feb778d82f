"""
Several builds of a set's graph from one probe process (the ``fork`` mode of :mod:`sispin.graph.probe.main`): it
imports what the set's own build imported from the Python installation (TensorFlow, numpy: the same files whatever
the pins, see :func:`site_modules`), then forks one process per build, as many at a time as it is told. Nothing of
the setup's runs before the fork, not even Sisyphus's import (which runs settings.py): each build imports Sisyphus
and loads the configs with its own pins, as a process of its own would.
"""

from __future__ import annotations

__all__ = ["site_modules", "EnvironmentWrites", "fork_builds"]

import contextlib
import json
import os
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

#: the probe's answer to one request: (mode, OUT, request, the rest of its arguments, recorder, modules preloaded)
Answer = Callable[[str, str, Any, List[str], Any, Set[str]], int]


def _site_places() -> Tuple[str, ...]:
    """:return: the Python installation's site directories (where pip installs), each with a separator"""
    import site

    places = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return tuple(os.path.join(os.path.abspath(path), "") for path in places)


def _stdlib_place() -> str:
    """:return: the standard library's directory, with a separator"""
    import sysconfig

    return os.path.join(sysconfig.get_paths()["stdlib"], "")


def site_modules(before: Set[str]) -> Tuple[str, ...]:
    """
    :param before: the modules imported before the configs loaded
    :return: the modules the configs imported, top-level (below a namespace package: its packages), that lie wholly
        in the Python installation's site directories: the same files whatever the pins
    """
    places = _site_places()
    found: Dict[str, bool] = {}
    for name, module in list(sys.modules.items()):
        if name in before or module is None:
            continue
        top = name.split(".")[0]
        if getattr(sys.modules.get(top), "__file__", None) is None and "." in name:
            top = ".".join(name.split(".")[:2])  # a namespace package has no code of its own: its packages
        file = getattr(module, "__file__", None)
        # a namespace package is where its folders are; a built-in module or one made by code is nowhere
        files = [file] if file is not None else list(getattr(module, "__path__", None) or [])
        if files:
            inside = all(os.path.abspath(path).startswith(places) for path in files)
            found[top] = found.get(top, True) and inside
    return tuple(sorted(name for name, inside in found.items() if inside and name not in before))


class EnvironmentWrites:
    """Whether code other than the installed packages' (configs, recipes, Sisyphus) wrote an environment variable."""

    def __init__(self) -> None:
        self.by_setup = False

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Watch os.environ while the block runs."""
        places, stdlib = _site_places(), _stdlib_place()
        base, writes = type(os.environ), self

        def note() -> None:
            # the first caller outside the standard library (os.environ.setdefault is in it) is the writer
            frame = sys._getframe(2)
            while frame is not None and (frame.f_code.co_filename.startswith((stdlib, "<frozen"))):
                frame = frame.f_back
            if frame is None or not os.path.abspath(frame.f_code.co_filename).startswith(places):
                writes.by_setup = True

        class Watched(base):  # type: ignore[misc, valid-type]
            def __setitem__(self, key: Any, value: Any) -> None:
                note()
                super().__setitem__(key, value)

            def __delitem__(self, key: Any) -> None:
                note()
                super().__delitem__(key)

        os.environ.__class__ = Watched
        try:
            yield
        finally:
            os.environ.__class__ = base


def fork_builds(out: str, manifest_path: str, answer: Answer, input_recorder: Callable[[str, Any], Any]) -> int:
    """
    ``fork OUT MANIFEST``: several ``graph`` builds, each in a process forked from this one once the manifest's
    modules are imported, so that they pay for those imports once and run side by side.

    :param out: where to write the builds' exit codes (a JSON list, in the manifest's order)
    :param answer: what makes one build and writes its reply (the probe's)
    :param input_recorder: the probe's recorder of what a build reads, for a file of the probe's scratch folder and
        the manifest's "inputs"
    :param manifest_path: JSON {"preload": module names, "processes": how many builds run at once, "inputs": None,
        or {"ignored": places} to record what the builds read, "builds": [{"request", "out", "stdout", "stderr":
        paths, "environment": the variables this build sets}]}
    """
    import importlib

    with open(manifest_path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    recorder = input_recorder(manifest_path, manifest["inputs"]) if manifest["inputs"] else None
    if recorder:
        recorder.start()
    before = set(sys.modules)
    # no code of the setup's may run here (settings.py runs as Sisyphus is imported, in each build with its pins)
    only_site = _SitePackagesOnly()
    sys.meta_path.insert(0, only_site)
    try:
        for name in manifest["preload"]:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: S110  the build that imports it says why it cannot
                pass
    finally:
        sys.meta_path.remove(only_site)
    preloaded = set(sys.modules) - before
    builds, running = manifest["builds"], {}
    codes: List[Optional[int]] = [None] * len(builds)
    for index, build in enumerate(builds):
        while len(running) >= manifest["processes"]:
            _reap(running, codes)
        sys.stdout.flush()
        sys.stderr.flush()  # nothing buffered here is written twice by the children
        pid = os.fork()
        if pid == 0:
            os._exit(_forked_build(build, answer, recorder, preloaded))
        running[pid] = index
    while running:
        _reap(running, codes)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(codes, handle)
    return 0


class _SitePackagesOnly:
    """An import finder that lets only the Python installation's modules be imported (and never Sisyphus)."""

    def __init__(self) -> None:
        self.places = _site_places() + (_stdlib_place(),)

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        """:raises ImportError: for a module elsewhere"""
        if name.split(".")[0] == "sisyphus":
            raise ImportError(f"{name} is imported by each build")
        for finder in [finder for finder in sys.meta_path if finder is not self]:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is None:
                continue
            places = [spec.origin] if spec.has_location and spec.origin else list(spec.submodule_search_locations or [])
            if any(not os.path.abspath(place).startswith(self.places) for place in places):
                raise ImportError(f"{name} is not the Python installation's")
            return spec
        return None


def _reap(running: Dict[int, int], codes: List[Optional[int]]) -> None:
    """Wait for one build of :func:`fork_builds` to end, and note its exit code."""
    pid, status = os.wait()
    if pid in running:
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)


def _forked_build(build: Dict[str, Any], answer: Answer, recorder: Any, preloaded: Set[str]) -> int:
    """
    One build of :func:`fork_builds`, in its child process.

    :param preloaded: the modules imported before the fork (imported by the configs, as far as the build can tell)
    :return: its exit code
    """
    try:
        with recorder.paused() if recorder else contextlib.nullcontext():
            # the build's own output files and variables (the text of its pins, its scratch checkouts): no inputs
            for descriptor, path in ((1, build["stdout"]), (2, build["stderr"])):
                target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(target, descriptor)
                os.close(target)
            os.environ.update(build["environment"])
            with open(build["request"], encoding="utf-8") as handle:
                request = json.load(handle)
        code = answer("graph", build["out"], request, [build["request"]], recorder, preloaded)
    except SystemExit as exc:  # no Sisyphus to import: ends the build as it ends a process of its own
        sys.stderr.write(f"{exc}\n")
        code = 1
    except BaseException:  # a failure of the probe's own: its traceback is the build's last words
        import traceback

        traceback.print_exc()
        code = 70
    sys.stdout.flush()
    sys.stderr.flush()
    return code
