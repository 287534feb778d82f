"""
The git room: running git (:mod:`~sispin.git.env` the environment of every git process,
:mod:`~sispin.git.process` supervision and progress), repositories and mirrors (:mod:`~sispin.git.repo`),
history (:mod:`~sispin.git.history`, :mod:`~sispin.git.moves`), and the store that owns them
(:mod:`~sispin.git.store`) with the lockfiles it serves (:mod:`~sispin.git.registry`) and its garbage collection
(:mod:`~sispin.git.gc`).

It may import :mod:`sispin.errors`, :mod:`sispin.clonejob` and :mod:`sispin.lock`; never Sisyphus or the job graph.
Where things are in the store (:meth:`~sispin.git.store.Store.mirror`) and :mod:`~sispin.git.env` cost no import of
GitPython or filelock: the settings hook asks them in every Sisyphus process.
"""
