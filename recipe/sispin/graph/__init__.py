"""
The job-graph room: a set's graph as real Sisyphus builds it, in a subprocess (:mod:`~sispin.graph.build` runs
:mod:`~sispin.graph.probe`), what makes a graph untrustworthy (:mod:`~sispin.graph.guard`), why an id changed
(:mod:`~sispin.graph.explain`), the recorded graph (:mod:`~sispin.graph.snapshot`) and what uses a commit in
work/ (:mod:`~sispin.graph.usage`).

It may import :mod:`sispin.lock`, :mod:`sispin.git` and the config path. Only :mod:`~sispin.graph.probe` imports
Sisyphus and i6_core, and only in the probe's own process.
"""
