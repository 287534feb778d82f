"""
The job-graph room, on the parent's side of the process seam: a set's graph as real Sisyphus builds it, in a
subprocess that runs :mod:`~sispin.graph.probe` (what runs inside the Sisyphus process, and the report it writes).

- :mod:`~sispin.graph.build`: running the probe (with the setup's Sisyphus, recording what each build read) and a
  set's graph as it reports it; :mod:`~sispin.graph.running`: one probe process, its time limit and its live line;
- :mod:`~sispin.graph.guard`: what makes a graph untrustworthy, one problem per root cause;
- :mod:`~sispin.graph.moved`: the set built once more with its pins moved, for the guard;
- :mod:`~sispin.graph.explain`: why an output's job id changed, down to the inputs that did;
- :mod:`~sispin.graph.against`: the set's graph at another revision of the setup (``--against REV``);
- :mod:`~sispin.graph.snapshot` and :mod:`~sispin.graph.snapshot_merge`: pin.snapshot.toml, and its merge;
- :mod:`~sispin.graph.recordcache`: what each recorded job's id is made of, kept beside the snapshot;
- :mod:`~sispin.graph.incremental`: the passes ``pin check`` keeps, while nothing their builds read changed;
- :mod:`~sispin.graph.usage`: what uses a commit in work/;
- :mod:`~sispin.graph.price`: what finished jobs cost, from the usage Sisyphus recorded in work/;
- :mod:`~sispin.graph.used_code`: what of a repository a set uses.

It may import :mod:`sispin.lock`, :mod:`sispin.git` and the config path, and of the probe only its report
(:mod:`sispin.graph.probe.schema`) and its ledger (:mod:`sispin.graph.probe.ledger`). No module of it imports
Sisyphus or i6_core: only the probe's modules do, and only in the probe's own process.
"""
