"""
What a setup's settings.py calls: redirect git from the locked URLs to sispin's store, for the manager and its
workers.

git rewrites a URL only when it connects (``url.<mirror>.insteadOf <url>``), so every CloneGitRepositoryJob keeps
its URL and its job id; the rewrite travels in git's ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``
environment, which needs no file and reaches every git process below the one that sets it.
"""

from __future__ import annotations

__all__ = ["store_redirects", "use_store_mirrors"]

import os
from typing import Dict, List, Tuple

from sispin import git
from sispin.lockfile import Lockfile, find_lockfile, load_lockfile
from sispin.store import Store


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
        if mirror is not None and not git.missing_commits(mirror, sorted(wanted)):
            redirects.append((str(mirror), url))
    return redirects


def use_store_mirrors() -> Dict[str, str]:
    """
    Make git clone the locked repositories from sispin's store (one local bare mirror per URL) instead of the
    remotes, with hardlinked objects: fast, light on disk and on the remote.

    A URL whose mirror is missing, or lacks a pinned commit, is not redirected. Call it from settings.py; it sets
    the variables in this process (the manager, and workers that inherit its environment) and returns them for
    Sisyphus's ``DEFAULT_ENVIRONMENT_SET`` (workers in a cleaned environment)::

        DEFAULT_ENVIRONMENT_SET.update(sispin.use_store_mirrors())

    Every process decides anew (workers load settings.py too), replacing redirections to the store that it
    inherited and keeping any other ``GIT_CONFIG_*`` entries.

    :return: the ``GIT_CONFIG_*`` environment variables, complete
    """
    store = Store()
    ours = f"url.{store.directory}{os.sep}"
    inherited = [
        (os.environ.get(f"GIT_CONFIG_KEY_{i}", ""), os.environ.get(f"GIT_CONFIG_VALUE_{i}", ""))
        for i in range(int(os.environ.get("GIT_CONFIG_COUNT") or 0))
    ]
    entries = [(key, value) for key, value in inherited if not key.startswith(ours)]
    redirects = store_redirects(load_lockfile(find_lockfile()), store)
    entries += [(f"url.{mirror}.insteadOf", url) for mirror, url in redirects]
    for i in range(len(entries), len(inherited)):
        os.environ.pop(f"GIT_CONFIG_KEY_{i}", None)
        os.environ.pop(f"GIT_CONFIG_VALUE_{i}", None)
    env = {"GIT_CONFIG_COUNT": str(len(entries))}
    for i, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    os.environ.update(env)
    return env
