"""
The config-facing API: an experiment set's pinned repositories as Sisyphus paths, local checkouts and imports.

With :mod:`sispin.graph.probe` (which the core runs in a subprocess), this is the only module that touches
Sisyphus and i6_core, and only inside the methods that build jobs, so the lockfile, git and CLI code stay
importable without them. What settings.py calls lives in :mod:`sispin.settings_hook`.

This is the config path, which every Sisyphus manager runs (and every worker imports): the lockfile is loaded only
when a set is asked for (validated once, then from :mod:`sispin.lock.cache` while its bytes stay the same), and
the git code, filelock and the import machinery only when :meth:`ExperimentSet.checkout` or
:meth:`ExperimentSet.imported` needs them.
"""

from __future__ import annotations

__all__ = ["ExperimentSet", "experiment_set", "current_set", "shown_overwrite"]

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

from sispin.clonejob import ADDED_IN, checkout_folder, class_parameters, job_class
from sispin.errors import GitError, HashOverwriteError, UnknownNameError, UnsupportedVersionError
from sispin.text import shown_key

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    from i6_core.tools.git import CloneGitRepositoryJob
    from sisyphus import tk

    from sispin.imports import PinnedImport
    from sispin.lock.lockfile import Lockfile


class ExperimentSet:
    """
    One experiment set of pin.toml, as config code sees it.

    :param lockfile: the validated lockfile
    :param name: the set's name in it
    :raises UnknownNameError: when the lockfile has no such set
    """

    # a manager makes one per experiment set and calls repo() once per job: the lookups on that path read the
    # lockfile's dicts directly, and fall back to the methods that name what is missing

    __slots__ = ("lockfile", "spec", "name")

    def __init__(self, lockfile: Lockfile, name: str):
        self.lockfile = lockfile
        self.spec = lockfile.sets.get(name) or lockfile.get_set(name)
        self.name = name

    def __repr__(self) -> str:
        return f"ExperimentSet({self.name!r}, lockfile={str(self.lockfile.path)!r})"

    def commit(self, repo: str) -> str:
        """
        :param repo: repository name
        :return: the full commit SHA this set pins it to
        :raises UnknownNameError: when the set does not pin that repository
        """
        return self.spec.pin(repo).commit

    def clone_kwargs(self, repo: str) -> Dict[str, Any]:
        """
        :param repo: repository name
        :return: the keyword arguments of the CloneGitRepositoryJob for it, exactly as a person would write them
        """
        return self.lockfile.clone_kwargs(self.name, repo)

    def clone_job(self, repo: str) -> CloneGitRepositoryJob:
        """
        :param repo: repository name
        :return: i6_core's CloneGitRepositoryJob of the pinned commit; its id equals the hand-written job's; its
            output carries the pin's ``hash_overwrite`` when the lock binds one to the commit
        :raises HashOverwriteError: see :meth:`repo`
        """
        # built anew each call, like a hand-written call: Sisyphus returns its one job per id and also records
        # the job in any active tk.block
        job = job_class()(**self._buildable_kwargs(repo))
        self._bound(repo, job.out_repository)
        return job

    def repo(self, repo: str) -> tk.Path:
        """
        :param repo: repository name
        :return: the checkout of the pinned commit (``out_repository`` of :meth:`clone_job`)
        :raises HashOverwriteError: when other code set a ``hash_overwrite`` on that path (Sisyphus shares one job
            object per id) that the lock does not bind to this commit: it would take the commit out of every
            dependent job's hash
        """
        path = job_class()(**self._buildable_kwargs(repo)).out_repository  # clone_job(), one call less
        self._bound(repo, path)
        return path

    def _buildable_kwargs(self, repo: str) -> Dict[str, Any]:
        """
        :return: :meth:`clone_kwargs`
        :raises UnsupportedVersionError: when the pin carries an argument this i6_core's job does not take
        """
        kwargs = self.clone_kwargs(repo)
        taken = {name for name, _ in class_parameters()}
        for name in kwargs:
            if name not in taken:
                added = " (added in i6_core {}, {})".format(*ADDED_IN[name]) if name in ADDED_IN else ""
                where = f"sets.{shown_key(self.name)}.{shown_key(repo)}"
                raise UnsupportedVersionError(
                    f"{where}: {name} needs an i6_core whose CloneGitRepositoryJob takes it{added}; this setup's "
                    f"has no such parameter: move [setup.i6_core] to a newer commit, or drop {name} from the pin"
                )
        return kwargs

    def _bound(self, repo: str, path: Any) -> None:
        """Give the clone's output the pin's hash_overwrite, if the lock binds one; refuse any other."""
        alias = (self.spec.pins.get(repo) or self.spec.pin(repo)).hash_overwrite
        if path.hash_overwrite is None:
            if alias is not None:
                path.hash_overwrite = alias  # the ids of the work done with it stay, bound to this commit
            return
        if alias is None or shown_overwrite(path.hash_overwrite) != alias:
            bound = f" (pin.toml binds {alias!r} to it)" if alias is not None else ""
            raise HashOverwriteError(
                f"experiment set {self.name!r}, repository {repo!r}: the checkout path of commit "
                f"{self.commit(repo)[:12]} has hash_overwrite={shown_overwrite(path.hash_overwrite)!r}{bound}, which "
                "removes the commit from every dependent job hash; remove the code that sets it"
            )

    def checkout(self, repo: str) -> Path:
        """
        A local, read-only checkout of the pinned commit, for code that runs in the manager itself. Made from the
        store's mirror on first use (or by ``pin sync SET``); later calls only look at the disk.

        :param repo: repository name
        :return: the checkout directory, named like the clone job's output (the repo's ``checkout``)
        :raises GitError: when the commit cannot be had
        """
        from sispin.git.registry import register_lockfile
        from sispin.git.store import Store  # git and filelock: only for code that asks for a checkout

        spec = self.lockfile.get_repo(repo)
        CHECKED_OUT.setdefault((self.name, repo), None)
        store = Store()
        register_lockfile(store.directory, self.lockfile.path)  # first: `pin gc` keeps what a recorded lockfile pins
        try:
            return store.checkout(spec.url, self.commit(repo), checkout_folder(spec.checkout))
        except GitError as exc:
            raise GitError(f"experiment set {self.name!r}, repository {repo!r}: {exc}") from None

    @contextlib.contextmanager
    def imported(self, repo: str) -> Iterator[Path]:
        """
        Within the block, ``import <package>`` gives the package from this set's pinned commit of repo (see
        :mod:`sispin.imports`): copies imported before (another commit, recipe/) are set aside and come back
        after the block; the pinned modules are kept for the next block, so repeated imports are stable.

        :param repo: repository name; its checkout is the package itself (returnn_common's layout: name it with
            ``checkout``) or holds packages at its top
        :return: (as the block's value) the checkout directory
        :raises PinnedImportError: when the modules cannot be kept apart (see :mod:`sispin.imports`)
        """
        from sispin.imports import PinnedImport, checkout_names, pinned_import

        path = self.checkout(repo)
        pinned = _PINNED_IMPORTS.get(path)
        if pinned is None:
            search_path, names = checkout_names(path)
            label = f"set {self.name!r}, {repo} {self.commit(repo)[:7]}"
            pinned = _PINNED_IMPORTS[path] = PinnedImport(label, search_path, names)
        with pinned_import(pinned):
            yield path


#: (set, repository) of every checkout code in this process asked for, in order: the probe sees those asked for
#: before it started recording (settings.py runs when Sisyphus is imported)
CHECKED_OUT: Dict[Tuple[str, str], None] = {}

#: one PinnedImport per checkout, so that its modules live on between blocks and sets of the same commit share them
_PINNED_IMPORTS: Dict[Path, PinnedImport] = {}


#: what experiment_set() reads, once found: the lockfile, and the sets asked for so far (asking twice gives the
#: same object)
_found: Optional[Tuple[Lockfile, Dict[str, ExperimentSet]]] = None


def experiment_set(name: str) -> ExperimentSet:
    """
    The experiment set ``name`` of the setup's lockfile: ``$PIN_LOCK`` if set, else the nearest pin.toml at or
    above the working directory (the setup root, where Sisyphus runs). The lockfile is found and read at the first
    call, once per process, as Sisyphus takes its setup from where the process started.

    :param name: set name, a ``[sets.NAME]`` table of pin.toml
    :raises LockfileError: when the lockfile is missing or invalid
    :raises UnknownNameError: when it has no such set (the message names the lockfile and lists its sets)
    """
    lockfile, known = _found or _find()
    exp = known.get(name)
    if exp is None:
        exp = known[name] = ExperimentSet(lockfile, name)
    return exp


def asked_for() -> List[str]:
    """:return: the names of the sets asked for in this process so far (each one's lock section is an input)"""
    return sorted(_found[1]) if _found else []


def _find() -> Tuple[Lockfile, Dict[str, ExperimentSet]]:
    global _found
    # once per process: a manager builds its whole graph from one view of the lockfile. And it calls this once per
    # job it builds: looking at $PIN_LOCK and the working directory again each time (a system call) would be most of
    # what sispin adds to each clone job (bench/startup.py).
    if _found is None:
        # not imported with sispin: Sisyphus workers import it (settings.py) and never read the lockfile
        from sispin.lock.cache import load_cached
        from sispin.lock.loading import LOCK_ENV, PROBE_TEXT_ENV, find_lockfile, parse_lockfile

        override = os.environ.get(PROBE_TEXT_ENV)
        if override:
            # sispin's own probe, building a set at pins not written yet (an upgrade's, a new set's): the text is
            # another, the lockfile and with it the setup root the same (they name the configs, record the store's
            # users)
            path = Path(os.environ.get(LOCK_ENV) or find_lockfile()).absolute()
            _found = (parse_lockfile(Path(override).read_text(encoding="utf-8"), path), {})
        else:
            _found = (load_cached(find_lockfile()), {})
    return _found


def current_set() -> ExperimentSet:
    """
    The experiment set whose config Sisyphus is loading: for shared recipe code (a ``default_tools.py`` imported by
    the configs of several sets) that must use the pins of whichever set calls it. Call it inside functions that a
    config's ``py()`` calls, not at module level: a module runs once per process, for the first set only.

    :raises UnknownNameError: outside a config, or when the running config belongs to no set or to several (then
        name the set with :func:`experiment_set`)
    """
    from sisyphus.loader import config_manager

    from sispin.text import display_path

    config = config_manager.current_config
    module = _module_body_on_the_way(Path(config).absolute()) if config else None
    if module is not None:
        # a shared module runs once per process: its module-level value would be the first set's for every set
        raise UnknownNameError(
            f"current_set() at module level of {display_path(module)}: a module runs once per process, for the first "
            "set only (also through the functions its body calls); call it inside a function that a config's py() "
            "calls"
        )
    if not config:
        raise UnknownNameError(
            "current_set() is called outside a Sisyphus config (at module level of a shared module, or after loading):"
            " call it inside a function that a config's py() calls, or use experiment_set(NAME)"
        )
    lockfile, _ = _found or _find()
    config_path = Path(config).absolute()
    owners = [
        spec.name
        for spec in lockfile.sets.values()
        if any((lockfile.root / listed).absolute() == config_path for listed in spec.configs)
    ]
    shown = display_path(config_path)
    if not owners:
        raise UnknownNameError(
            f"current_set(): config {shown} belongs to no set of {display_path(lockfile.path)} (add it to a set's "
            "configs)"
        )
    if len(owners) > 1:
        raise UnknownNameError(
            f"current_set(): config {shown} belongs to several sets ({', '.join(owners)}): use experiment_set(NAME)"
        )
    return experiment_set(owners[0])


def _module_body_on_the_way(config: Path) -> Optional[Path]:
    """
    :return: the module other than the config whose body runs between the config's code and the caller of
        current_set() (however many functions deep), if any
    """
    frame = sys._getframe(2)
    bodies = []
    while frame is not None:
        file = Path(frame.f_code.co_filename).absolute()
        if file == config:
            return bodies[0] if bodies else None
        if frame.f_code.co_name == "<module>":
            bodies.append(file)
        frame = frame.f_back
    return None  # not below the config's code at all: said by the caller's other checks


def shown_overwrite(overwrite: Any) -> Any:
    """
    :param overwrite: a Sisyphus path's ``hash_overwrite`` (stored as a (creator, path) pair; as given, a string,
        before Sisyphus a5b9c46, 2022-07)
    :return: it as the user wrote it: Sisyphus stores a string s as (None, s)
    """
    if overwrite is None or isinstance(overwrite, str):
        return overwrite
    creator, path = overwrite
    return path if creator is None else f"({creator}, {path!r})"


def _forget() -> None:
    """Let the next experiment_set() find and read the lockfile anew (for tests: many setups in one process)."""
    global _found
    _found = None
