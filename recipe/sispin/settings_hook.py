"""
What a setup's settings.py calls: redirect git from the locked URLs to sispin's store, for every job the manager
creates.

git rewrites a URL only when it connects (``url.<mirror>.insteadOf <url>``), so every CloneGitRepositoryJob keeps
its URL and its job id; the rewrite travels in git's ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``
environment, which needs no file and reaches every git process below the one that has it.

The hook returns those variables for Sisyphus's ``DEFAULT_ENVIRONMENT_SET`` and changes no process environment.
Sisyphus stores that environment in each job it creates (only the manager creates jobs) and sets it in the task's
process before the task runs: every task follows the decision of the manager that created its job, and a lockfile
edited, broken or removed while jobs run does not reach it. The variables include a marker
(``SISPIN_STORE_REDIRECTS``, the lockfile that decided): a process that has it (a task that starts Sisyphus again)
keeps what it inherited. Nothing here may stop Sisyphus from starting: without a usable lockfile the hook says in one
line that no redirect is active. This module loads neither tomlkit nor filelock.
"""

from __future__ import annotations

__all__ = ["REDIRECT_MARKER", "store_redirects", "redirect_entries", "use_store_mirrors"]

import logging
import os
from typing import Dict, List, Sequence, Tuple

from sispin.errors import PinError
from sispin.git.presence import missing_in_mirror
from sispin.git.store import Store
from sispin.lock.cache import load_cached
from sispin.lock.loading import find_lockfile
from sispin.lock.lockfile import Lockfile

#: among the variables the hook returns (the lockfile that decided the redirects): a process that has it keeps them
REDIRECT_MARKER = "SISPIN_STORE_REDIRECTS"
#: what the marker says when no lockfile could be read
_NO_LOCKFILE = "none"
#: characters a URL can go on with after a redirected one (every ASCII character but NUL, which no environment
#: variable holds, and newline, which git refuses in a config key and so in any URL it rewrites): each gets an entry
#: that keeps such a longer URL where it would go without the store, since git's insteadOf rewrites every URL that
#: merely starts with the redirected one
_URL_CONTINUATIONS = [chr(code) for code in range(0x01, 0x80) if chr(code) != "\n"]

_log = logging.getLogger("sispin")


def store_redirects(lockfile: Lockfile, store: Store) -> List[Tuple[str, str]]:
    """
    Which locked URLs git can take from the store instead of the remote.

    :param lockfile: the setup's lockfile
    :param store: the store whose mirrors to use
    :return: (mirror path, url) for every repository URL pinned by a set whose mirror holds every commit pinned
        for it; a URL whose mirror is missing or stale is left out, so that git falls back to the remote
    """
    commits: Dict[str, set] = {}
    for spec in lockfile.sets.values():
        for name, pin in spec.pins.items():
            commits.setdefault(lockfile.repos[name].url, set()).add(pin.commit)
    redirects = []
    for url, wanted in commits.items():
        mirror = store.mirror(url)
        if mirror is not None and not missing_in_mirror(mirror, sorted(wanted)):
            redirects.append((str(mirror), url))
    return redirects


def redirect_entries(
    redirects: List[Tuple[str, str]], inherited: Sequence[Tuple[str, str]] = ()
) -> List[Tuple[str, str]]:
    """
    :param redirects: (mirror path, url) pairs
    :param inherited: the git config entries already in force (the user's own redirects among them)
    :return: git config entries (key, value) that send exactly each url, and nothing that merely starts with it
        (``.../returnn`` redirected leaves ``.../returnn_common``, ``.../returnn.git`` and ``.../returnn/`` alone), to
        its mirror: git takes the longest matching ``insteadOf``, and every one-character continuation of the url
        maps to where it went before (itself, or the user's own redirect of it)
    """
    entries = []
    for mirror, url in redirects:
        entries.append((f"url.{mirror}.insteadOf", url))
        entries += [
            (f"url.{_rewritten(url + char, inherited)}.insteadOf", f"{url}{char}") for char in _URL_CONTINUATIONS
        ]
    return entries


def _rewritten(url: str, entries: Sequence[Tuple[str, str]]) -> str:
    """What git makes of url with the given ``url.<base>.insteadOf`` entries: the longest matching one wins."""
    best = ""
    base = ""
    for key, value in entries:
        if key.startswith("url.") and key.endswith(".insteadOf") and url.startswith(value) and len(value) > len(best):
            best, base = value, key[len("url.") : -len(".insteadOf")]
    return base + url[len(best) :] if best else url


def _without_store_redirects(entries: Sequence[Tuple[str, str]], store: Store) -> List[Tuple[str, str]]:
    """Inherited entries but ours: redirects to the store, and the entries that keep the URLs continuing them."""
    redirected = {value for key, value in entries if key.startswith(f"url.{store.directory}{os.sep}")}
    return [
        (key, value)
        for key, value in entries
        if not key.startswith(f"url.{store.directory}{os.sep}") and value[:-1] not in redirected
    ]


def use_store_mirrors() -> Dict[str, str]:
    """
    Make git clone the locked repositories from sispin's store (one local bare mirror per URL) instead of the
    remotes, with hardlinked objects: fast, light on disk and on the remote.

    Call it from settings.py and give the variables to Sisyphus, which sets them in the process of each job's tasks::

        DEFAULT_ENVIRONMENT_SET.update(sispin.use_store_mirrors())

    A URL whose mirror is missing, or lacks a pinned commit, is not redirected. A process that has the marker
    (``SISPIN_STORE_REDIRECTS``) keeps what it inherited; any other replaces redirections to the store that it
    inherited and keeps any other ``GIT_CONFIG_*`` entries, after its own. (A redirect of the same URL in a git config
    file still wins: git reads those before the environment.) This process's own environment is left as it is.

    :return: the ``GIT_CONFIG_*`` variables, complete, and the marker; ``$`` written ``$$``, as Sisyphus expands
        ``$NAME`` in ``DEFAULT_ENVIRONMENT_SET`` values
    """
    count = int(os.environ.get("GIT_CONFIG_COUNT") or 0)
    inherited = [
        (os.environ.get(f"GIT_CONFIG_KEY_{i}", ""), os.environ.get(f"GIT_CONFIG_VALUE_{i}", "")) for i in range(count)
    ]
    marker = os.environ.get(REDIRECT_MARKER)
    if marker is not None:
        entries = inherited
    else:
        store = Store()
        entries = _without_store_redirects(inherited, store)
        try:
            lockfile = load_cached(find_lockfile())
        except PinError as exc:
            _log.warning("sispin: no store redirect active: %s", exc)
            marker = _NO_LOCKFILE
        else:
            # git takes the first of equally long insteadOf keys: the store's come before inherited ones (an offline
            # bundle redirect of the same URL, say), so that the local mirror wins
            entries = redirect_entries(store_redirects(lockfile, store), entries) + entries
            marker = str(lockfile.path)
    env = {"GIT_CONFIG_COUNT": str(len(entries)), REDIRECT_MARKER: marker}
    for i, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return {key: value.replace("$", "$$") for key, value in env.items()}
