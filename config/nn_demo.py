"""
The experiment set nn_demo: a small Conformer built with returnn_common's ``nn`` in the manager, from the commits of
RETURNN and returnn_common that pin.toml pins for the set, written as a RETURNN config whose job id depends on the
net dict that code built.

Run from the setup root: ``python tools/sisyphus/sis manager -r config/nn_demo.py`` (needs ``pip install -e
".[nn]"``: ``nn`` asks RETURNN's TensorFlow layers for every output shape). The config is written canonically: the
same pins give the same text, so the same job id, in every process (see :func:`canonical_config`).
"""

from __future__ import annotations

import importlib.util
from typing import Any, Dict, Tuple

from i6_core.returnn.config import CodeWrapper, ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    """Sisyphus entry point: build the net dict from the pinned code, write it as a RETURNN config."""
    if importlib.util.find_spec("tensorflow") is None:
        raise ModuleNotFoundError('set nn_demo builds its network with TensorFlow: pip install -e ".[nn]"')
    exp = experiment_set("nn_demo")
    # all of returnn_common's and RETURNN's work happens inside the blocks: what leaves them is plain data
    with exp.imported("returnn"), exp.imported("returnn_common"):
        try:
            prolog, config = canonical_config(build_conformer())
        except Exception as exc:
            # one line that names the pins and RETURNN's own reason (its message spans a page), so that `pin upgrade`
            # and `pin snapshot` show why the model cannot be built at these commits
            pins = f"returnn_common {exp.commit('returnn_common')[:7]} with RETURNN {exp.commit('returnn')[:7]}"
            raise RuntimeError(f"set nn_demo: {pins} cannot build the Conformer: {_reason(exc)}") from exc

    write_config = WriteReturnnConfigJob(ReturnnConfig(config, python_prolog=prolog, black_formatting=False))
    tk.register_output("nn_demo/returnn.config", write_config.out_returnn_config_file)
    # what a training job of this config would run with (its returnn_root), and the code that built the net dict
    tk.register_output("nn_demo/returnn", exp.repo("returnn"))
    tk.register_output("nn_demo/returnn_common", exp.repo("returnn_common"))


def build_conformer() -> Tuple[Any, Any]:
    """
    The model: a 2-layer Conformer encoder over 40-dim features (returnn_common API of 2023-03 onwards).

    :return: the root module and the returnn_common config serializer that holds its net
    """
    import importlib.abc  # noqa: F401  returnn_common before 2023-03-13 uses importlib.abc without importing it

    from returnn_common import nn

    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_dim = nn.FeatureDim("logmel", 40)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    model = nn.ConformerEncoder(
        in_dim,
        nn.FeatureDim("model", 64),
        ff_dim=nn.FeatureDim("ff", 128),
        input_layer=nn.ConformerConvSubsample(
            in_dim,
            out_dims=[nn.FeatureDim("conv1", 16), nn.FeatureDim("conv2", 32)],
            filter_sizes=[(3, 3), (3, 3)],
            pool_sizes=[(2, 1), (2, 1)],
        ),
        num_heads=4,
        num_layers=2,
    )
    out, _ = model(data, in_spatial_dim=time_dim)
    out.mark_as_default_output()
    return model, nn.get_returnn_config()


def canonical_config(built: Tuple[Any, Any]) -> Tuple[str, Dict[str, Any]]:
    """
    The RETURNN config of a built model, the same in every process.

    returnn_common's own ``get_complete_py_code_str`` is not: dims hash by object id (or by a randomly seeded string
    hash), so the order of a set such as ``out_shape``, and with it the order in which dims are named and defined,
    varies between runs. Here every set is walked in the order of its dims' reprs, so dims get their names and
    definitions in one order; then returnn_common's own dim proxies write the definitions (the prolog) and refer to
    the dims in the config. Sisyphus hashes exactly what is written: the prolog text and the config dict, whose
    leaves are plain values or i6_core ``CodeWrapper`` code (a dim, a set of dims).

    :param built: the root module and config serializer, from :func:`build_conformer`
    :return: the python prolog (imports and dim definitions) and the config dict
    """
    from returnn_common.nn.naming import ReturnnConfigSerializer, ReturnnDimTagsProxy

    model, serializer = built
    raw = _ordered_sets(serializer.get_config_raw_dict(model))
    proxy = ReturnnDimTagsProxy()
    config = proxy.collect_dim_tags_and_transform_config(raw)
    config = {"use_tensorflow": True, **{key: _plain(value) for key, value in config.items()}}
    return ReturnnConfigSerializer.ImportPyCodeStr + proxy.py_code_str(), config


def _reason(exc: Exception) -> str:
    """The exception's type and the last line of its message that says something (not RETURNN's "See above")."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("(See above")]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"


class _OrderedSet(set):
    """A set that is iterated in the order of its elements' reprs, which do not depend on the process."""

    def __iter__(self):
        items = sorted(set.__iter__(self), key=repr)
        for before, after in zip(items, items[1:]):
            if repr(before) == repr(after):
                raise ValueError(f"two different dims print as {before!r}: give them distinct names")
        return iter(items)


def _ordered_sets(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _ordered_sets(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_ordered_sets(item) for item in value]
    if type(value) is tuple:
        return tuple(_ordered_sets(item) for item in value)
    if isinstance(value, set):
        return _OrderedSet(_ordered_sets(item) for item in value)
    return value


def _plain(value: Any) -> Any:
    """Plain data for the config dict; anything returnn_common's proxies print as code becomes a CodeWrapper."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _plain(item) for key, item in value.items()}
        # keys that are dims (e.g. set_dim_tags): one piece of code, its items in the order of their text
        items = sorted(f"{_plain(key)!r}: {_plain(item)!r}" for key, item in value.items())
        return CodeWrapper("{" + ", ".join(items) + "}")
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if type(value) is tuple:
        return tuple(_plain(item) for item in value)
    if type(value).__qualname__ in ("ReturnnDimTagsProxy.DimRefProxy", "ReturnnDimTagsProxy.SetProxy"):
        return CodeWrapper(repr(value))
    raise TypeError(f"cannot write {type(value).__name__} {value!r} into the RETURNN config")
