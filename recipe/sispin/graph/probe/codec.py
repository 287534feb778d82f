"""
How a report object of :mod:`sispin.graph.probe.schema` becomes JSON and back: written by json's C encoder in one
pass, read by a decoder made once per type. The JSON is an object of the fields by name, nested values alike;
reading refuses a field too many or too few.

This module imports no Sisyphus: the parent imports it.
"""

from __future__ import annotations

__all__ = ["JsonForm"]

import collections.abc
import dataclasses
import functools
import json
from typing import Any, Callable, Dict, List, Mapping, Tuple, Type, TypeVar, Union, get_args, get_origin, get_type_hints

_T = TypeVar("_T", bound="JsonForm")


class JsonForm:
    """The JSON form of a report dataclass: an object of its fields by name, nested values alike."""

    def to_json(self) -> Dict[str, Any]:
        """:return: the object as JSON data (dicts, lists, strings, numbers, booleans, None)"""
        return json.loads(self.to_json_text())

    def to_json_text(self) -> str:
        """:return: the object as JSON text: made by json's C encoder in one pass (a report has millions of values)"""
        return json.dumps(self, default=_fields_of)

    @classmethod
    def from_json(cls: Type[_T], data: Mapping[str, Any]) -> _T:
        """
        :param data: what :meth:`to_json` made
        :raises ValueError: when a field is missing or unknown (the two sides disagree), or a value has another shape
        """
        try:
            return _decoder(cls)(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a {cls.__name__} of the probe's report: {exc}") from None


def _fields_of(value: Any) -> Any:
    """json's hook for what it cannot encode itself: a report object is the object of its fields"""
    if isinstance(value, JsonForm):
        return {name: getattr(value, name) for name in _field_names(type(value))}
    if isinstance(value, collections.abc.Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not part of the probe's report")


@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is Python 3.9+, lru_cache reads on all
def _field_names(kind: Type[JsonForm]) -> Tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(kind))


def _same(value: Any) -> Any:
    return value


@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is Python 3.9+, lru_cache reads on all
def _decoder(kind: Any) -> Callable[[Any], Any]:
    """:return: what turns JSON data into a value of the type ``kind`` (made once per type: reports are large)"""
    origin, args = get_origin(kind), get_args(kind)
    if isinstance(kind, type) and issubclass(kind, JsonForm):
        return _dataclass_decoder(kind)
    if origin is Union:
        (inner,) = [arg for arg in args if arg is not type(None)]
        decode = _decoder(inner)
        return _same if decode is _same else lambda data: None if data is None else decode(data)
    if origin is tuple and args[-1:] == (Ellipsis,):
        item = _decoder(args[0])
        return lambda data: tuple(item(value) for value in data)
    if origin is tuple:
        items = [_decoder(arg) for arg in args]
        return lambda data: tuple(decode(value) for decode, value in zip(_fixed(items, data), data))
    if origin in (dict, collections.abc.Mapping):
        value_of = _decoder(args[1])
        return lambda data: {key: value_of(value) for key, value in data.items()}
    return _same


def _fixed(items: List[Callable[[Any], Any]], data: Any) -> List[Callable[[Any], Any]]:
    """:raises TypeError: unless a fixed-length tuple's data has its length (zip would cut it short)"""
    if len(data) != len(items):
        raise TypeError(f"{len(data)} values for a tuple of {len(items)}")
    return items


def _dataclass_decoder(kind: Type[JsonForm]) -> Callable[[Any], Any]:
    hints = get_type_hints(kind)
    parts = {field.name: _decoder(hints[field.name]) for field in dataclasses.fields(kind)}
    if all(part is _same for part in parts.values()):
        # every field as JSON has it (an Arg: a report holds hundreds of thousands): no decoder per field, and the
        # fields set as a whole (a frozen dataclass's __init__ sets each through object.__setattr__, 4x slower)
        names = parts.keys()

        def plain(data: Mapping[str, Any]) -> Any:
            if data.keys() != names:
                _fields_match(kind, parts, data)
            value = object.__new__(kind)
            value.__dict__.update(data)
            return value

        return plain

    def decode(data: Mapping[str, Any]) -> Any:
        _fields_match(kind, parts, data)
        return kind(**{name: part(data[name]) for name, part in parts.items()})

    return decode


def _fields_match(kind: Type[JsonForm], parts: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    """:raises KeyError: unless data has kind's fields (a field too few or too many: the two sides disagree)"""
    if data.keys() != parts.keys():
        unknown, missing = sorted(set(data) - set(parts)), sorted(set(parts) - set(data))
        raise KeyError(f"{kind.__name__}: unknown fields {unknown}, missing fields {missing}")
