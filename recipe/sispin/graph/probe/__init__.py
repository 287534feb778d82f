"""
What runs inside the Sisyphus process: the probe that :mod:`sispin.graph.build` starts in the setup root, which
loads a set's configs with real Sisyphus and reports the graph they build, without running a job.

- :mod:`~sispin.graph.probe.main`: the probe's modes, and the graph it reports, with
  :mod:`~sispin.graph.probe.bytecode`: the bytecode it runs and writes (none stale, none of the setup's code);
- :mod:`~sispin.graph.probe.schema`: that report, defined once for both sides of the process seam, and
  :mod:`~sispin.graph.probe.codec`: how it becomes JSON and back;
- :mod:`~sispin.graph.probe.adapter`: what the probe knows of Sisyphus and i6_core beyond their public API, with
  :mod:`~sispin.graph.probe.adapter.watches`: the places it watches while configs load;
- :mod:`~sispin.graph.probe.records`: what each job's id is made of, and the paths among its hashed arguments, with
  :mod:`~sispin.graph.probe.contents`: a key that stands for a record but for its inputs' ids;
- :mod:`~sispin.graph.probe.state`: every job a job holds, and the whole state of each;
- :mod:`~sispin.graph.probe.requests`: what an unfinished job would ask the engine for;
- :mod:`~sispin.graph.probe.moving`: the moved-commit check (Sisyphus's hashes recomputed with the pins moved);
- :mod:`~sispin.graph.probe.values`: where config code takes a pinned value out of the graph;
- :mod:`~sispin.graph.probe.aliases`: the legacy ``hash_overwrite`` values a pin binds, and where configs assign them;
- :mod:`~sispin.graph.probe.inputs`: what a build reads, recorded while the configs load, as
  :mod:`~sispin.graph.probe.ledger` writes it down;
- :mod:`~sispin.graph.probe.forking`: several builds forked from one process that imported what they share.

Its modules may import :mod:`sispin.lock` and the config path, and Sisyphus and i6_core (only inside the probe's
process, and lazily). The parent imports only :mod:`~sispin.graph.probe.schema` (with its codec) and
:mod:`~sispin.graph.probe.ledger` of them, which import no Sisyphus.
"""
