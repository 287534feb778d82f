"""
The lockfile room: pin.toml read and validated into value objects (:mod:`~sispin.lock.lockfile`,
:mod:`~sispin.lock.validate`), the URL rules it applies (:mod:`~sispin.lock.urls`), the cache of validated lockfiles
(:mod:`~sispin.lock.cache`), comment-preserving edits (:mod:`~sispin.lock.editing`) and the atomic, locked writes
of every file sispin owns in a setup (:mod:`~sispin.lock.files`).

It may import :mod:`sispin.errors` and :mod:`sispin.clonejob` only: no git, no Sisyphus, no job graph. Reading
(lockfile, validate, urls, cache) is the config path and imports neither tomlkit nor filelock.
"""
