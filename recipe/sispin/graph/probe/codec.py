"""
How a report object of :mod:`sispin.graph.probe.schema` becomes JSON and back: written by json's C encoder in one
pass, read by a decoder made once per type. The JSON is an object of the fields by name, nested values alike, but
for a row (a named tuple of plain values: an argument's leaf, of which a report holds hundreds of thousands), which
is an array of its fields in order; reading refuses a field too many or too few.

This module imports no Sisyphus: the parent imports it.
"""

from __future__ import annotations

__all__ = ["JsonForm", "DecodedOnAccess", "read_json", "report_form", "collector_paused"]

import collections.abc
import contextlib
import dataclasses
import functools
import gc
import json
from typing import (
    Any,
    Callable,
    Collection,
    Dict,
    Iterator,
    List,
    Mapping,
    Tuple,
    Type,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from sispin.errors import FileSystemError

_T = TypeVar("_T", bound="JsonForm")


class JsonForm:
    """The JSON form of a report dataclass: an object of its fields by name, nested values alike."""

    def to_json(self) -> Dict[str, Any]:
        """:return: the object as JSON data (dicts, lists, strings, numbers, booleans, None)"""
        return json.loads(self.to_json_text())

    def to_json_text(self) -> str:
        """:return: the object as JSON text: made by json's C encoder in one pass (a report has millions of values)"""
        return json.dumps(self, default=report_form)

    @classmethod
    def from_json(cls: Type[_T], data: Mapping[str, Any]) -> _T:
        """
        :param data: what :meth:`to_json` made
        :raises ValueError: when a field is missing or unknown (the two sides disagree), or a value has another shape
        """
        try:
            with collector_paused():
                return _decoder(cls)(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a {cls.__name__} of the probe's report: {exc}") from None


class DecodedOnAccess(collections.abc.Mapping):  # type: ignore[type-arg]
    """
    A mapping of report objects, each kept as its JSON text and read when first looked up: a kept graph's records
    are looked up a few at a time (most of its jobs are compared by their content keys), and reading all of them
    took a tenth of a dry run.

    :param kind: the type of the values
    :param texts: key -> the value's JSON text (:meth:`JsonForm.to_json_text`)
    :param source: the file they were read from (for the message when one cannot be read)
    """

    def __init__(self, kind: Type[JsonForm], texts: Mapping[str, str], source: str) -> None:
        self._kind, self._texts, self._source = kind, texts, source
        self._decoded: Dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._decoded:
            try:
                self._decoded[key] = self._kind.from_json(read_json(self._texts[key]))
            except ValueError as exc:  # damaged since it was written, by hand: said, never taken for a missing value
                raise FileSystemError(f"{self._source}: {key}: cannot be read ({exc}); remove the file") from None
        return self._decoded[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


def read_json(text: Union[str, bytes]) -> Any:
    """:return: the JSON data of a report's text (or of what holds one), read with the cyclic collector paused"""
    with collector_paused():
        return json.loads(text)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """
    While the block runs, Python's cyclic garbage collector does not. It starts after every so many containers made,
    and each of its full runs walks every live object: reading or making a report of a large graph (a container per
    job, record and leaf, none of them in a cycle) spent a third of its time there.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def report_form(value: Any) -> Any:
    """json's hook (``default``) for what it cannot encode itself: a report object is the object of its fields"""
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
    if _is_row(kind):
        return lambda data: _rows(kind, [data])[0]
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
    if origin in (dict, collections.abc.Mapping) and _is_row(args[1]):
        return lambda data: dict(zip(data, _rows(args[1], data.values())))
    if origin in (dict, collections.abc.Mapping):
        value_of = _decoder(args[1])
        if value_of is _same:
            return _a_dict  # JSON's own dict (a graph's jobs, a key's leaves): nothing to make of it
        return lambda data: {key: value_of(value) for key, value in data.items()}
    return _same


def _a_dict(data: Any) -> Any:
    """:raises TypeError: unless data is a JSON object"""
    if type(data) is not dict:
        raise TypeError(f"{type(data).__name__} where an object belongs")
    return data


def _is_row(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")


def _rows(kind: Type[tuple], data: Collection[Any]) -> List[Any]:
    """
    :return: the rows of type ``kind`` (a named tuple) that the JSON arrays hold, in order
    :raises KeyError: unless each array has the row's fields (one too many or too few: the two sides disagree)
    """
    fields: Tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
    if set(map(type, data)) - {list} or set(map(len, data)) - {len(fields)}:  # one pass each in C: no call per row
        wrong = next(row for row in data if type(row) is not list or len(row) != len(fields))
        raise KeyError(f"{kind.__name__}: {wrong!r} is not an array of its fields {list(fields)}")
    # tuple's own constructor mapped in C: the named tuple's __new__ is a Python function, a call per row
    return list(map(functools.partial(tuple.__new__, kind), data))


def _fixed(items: List[Callable[[Any], Any]], data: Any) -> List[Callable[[Any], Any]]:
    """:raises TypeError: unless a fixed-length tuple's data has its length (zip would cut it short)"""
    if len(data) != len(items):
        raise TypeError(f"{len(data)} values for a tuple of {len(items)}")
    return items


def _dataclass_decoder(kind: Type[JsonForm]) -> Callable[[Any], Any]:
    hints = get_type_hints(kind)
    parts = {field.name: _decoder(hints[field.name]) for field in dataclasses.fields(kind)}
    if all(part in (_same, _a_dict) for part in parts.values()):
        # every field as JSON has it (a RecordedOutput: a report holds one per output): no decoder per field, and the
        # fields set as a whole (a frozen dataclass's __init__ sets each through object.__setattr__, 4x slower)
        names, objects = parts.keys(), [name for name, part in parts.items() if part is _a_dict]

        def plain(data: Mapping[str, Any]) -> Any:
            if data.keys() != names:
                _fields_match(kind, parts, data)
            for name in objects:
                _a_dict(data[name])
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
