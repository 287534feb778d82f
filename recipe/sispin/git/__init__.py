"""
The git room: running git (:mod:`~sispin.git.process`: every git process starts there, in a clean environment of its
own, with progress and time-outs), repositories and mirrors (:mod:`~sispin.git.repo`), whether a checkout is exactly
its commit (:mod:`~sispin.git.verify`), which commits a repository holds (:mod:`~sispin.git.presence`), history
(:mod:`~sispin.git.history`, :mod:`~sispin.git.moves`), the setup's own history and ``--commit``
(:mod:`~sispin.git.setup_history`), the Sisyphus and i6_core versions sispin supports (:mod:`~sispin.git.versions`),
git's line merge and the merge driver's set-up (:mod:`~sispin.git.merge`), and the
store that owns the mirrors (:mod:`~sispin.git.store`) with the lockfiles it serves (:mod:`~sispin.git.registry`) and
its garbage collection (:mod:`~sispin.git.gc`).

It may import :mod:`sispin.errors`, :mod:`sispin.clonejob` and :mod:`sispin.lock`; never Sisyphus or the job graph.
Where things are in the store (:meth:`~sispin.git.store.Store.mirror`), :mod:`~sispin.git.presence` and
:mod:`~sispin.git.process` cost no import beyond the standard library (no filelock): the settings hook asks them in
every Sisyphus process.
"""
