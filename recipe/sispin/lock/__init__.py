"""
The lockfile room: pin.toml's value objects (:mod:`~sispin.lock.lockfile`), found, read and parsed
(:mod:`~sispin.lock.loading`, tomllib's messages in a user's words in :mod:`~sispin.lock.toml_words`) and validated
into them (:mod:`~sispin.lock.validate`), the URL rules it applies (:mod:`~sispin.lock.urls`), the cache of
validated lockfiles, parsed snapshots and sispin's own source digests (:mod:`~sispin.lock.cache`), comment-preserving
edits (:mod:`~sispin.lock.editing`) and what a rewrite may change of the text (:mod:`~sispin.lock.kept_text`), the
three-way merge of two branches' lockfiles by value (:mod:`~sispin.lock.merging`), and the atomic, locked writes of
every file sispin owns in a setup (:mod:`~sispin.lock.files`).

It may import :mod:`sispin.text`, :mod:`sispin.errors` and :mod:`sispin.clonejob` only: no git, no Sisyphus, no job
graph. Reading (lockfile, loading, validate, urls, cache) is the config path and imports neither tomlkit nor
filelock.
"""
