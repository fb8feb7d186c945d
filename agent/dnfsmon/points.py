"""Points: what dnfsmon publishes, and their InfluxDB line protocol.

Line protocol per the InfluxDB reference ("Line protocol" syntax): the
measurement escapes commas and spaces; tag keys, tag values and field keys
escape commas, equals signs and spaces; string field values are quoted with
backslash and double quote escaped; integers carry an `i` suffix; tags with
an empty value are left out (InfluxDB rejects them); timestamps are integer
nanoseconds since the Unix epoch (precision "ns").

Backslashes in names and tag values are NOT escaped: InfluxDB's parser
(models/points.go, shared by 1.x and 2.x) keeps a backslash as it is unless
it precedes a comma, equals sign or space, and rejects "\\," as an invalid
tag (checked against a real 1.8 server in tests/test_influx.py). A name or
tag value that ends in a backslash, or has one before an escaped character,
cannot be written at all: to_line raises ValueError and the point is
quarantined with that reason rather than silently altered.

from_line reads back the lines to_line writes (the store keeps points as
line protocol): it is not a parser for line protocol from elsewhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import NamedTuple, Union

FieldValue = Union[int, float, str, bool]


class Point(NamedTuple):
    """One point of one series. A NamedTuple (dnfsmon.records): read-only, no __dict__ per
    point (a sample at 1000 NFS mounts publishes some 35 000), and no dataclasses to import."""

    measurement: str
    tags: tuple[tuple[str, str], ...]
    fields: Mapping[str, FieldValue]
    # Nanoseconds since the Unix epoch.
    time_ns: int

    def to_json(self) -> dict:
        return {"m": self.measurement, "t": [list(p) for p in self.tags], "f": dict(self.fields), "ns": self.time_ns}

    @classmethod
    def from_json(cls, data: dict) -> Point:
        return cls(data["m"], tuple((str(k), str(v)) for k, v in data["t"]), dict(data["f"]), int(data["ns"]))


def epoch_ns(wall_time: float) -> int:
    """A point's timestamp from seconds since the Unix epoch."""
    return round(wall_time * 1e9)


# Any character _escape has to look at; most names and tags have none, and
# are written as they are after this one search.
_NEEDS_CARE = re.compile(r"[\\\n\r, =]")


def _escape(text: str, specials: str) -> str:
    if _NEEDS_CARE.search(text) is None:
        return text
    if "\n" in text or "\r" in text:
        raise ValueError(f"line protocol cannot carry a newline in {text!r}")
    if text.endswith("\\") or any(f"\\{char}" in text for char in specials):
        raise ValueError(f"line protocol cannot carry a backslash at the end or before {specials!r} in {text!r}")
    for char in specials:
        text = text.replace(char, "\\" + char)
    return text


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _field_value(value: FieldValue) -> str:
    if type(value) is float:  # the common case first; subclasses take the checks below
        if not math.isfinite(value):
            raise ValueError(f"line protocol cannot carry {value}")
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # InfluxDB docs, "Line protocol", Integer: signed 64-bit; it refuses the line of a larger one.
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"an integer of {value.bit_length()} bits, beyond line protocol's signed 64-bit integers")
        return f"{value}i"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"line protocol cannot carry {value}")
        return repr(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Tag keys, tag values and field keys as escaped, by their text: a store holds
# the same few hundred names over and over. Bounded; names that cannot be
# written raise and are never remembered.
_ESCAPED_NAMES: dict[str, str] = {}
_ESCAPED_NAMES_MAX = 20_000


def _name(text: str) -> str:
    """A tag key, tag value or field key escaped (commas, equals signs, spaces)."""
    escaped = _ESCAPED_NAMES.get(text)
    if escaped is None:
        escaped = _escape(text, ",= ")
        if len(_ESCAPED_NAMES) < _ESCAPED_NAMES_MAX:
            _ESCAPED_NAMES[text] = escaped
    return escaped


# Each tag as written, ",key=value" ("" for an empty value, which is left out), by its (key,
# value) pair: the points of one store or one sample repeat the same few thousand tags (a
# mount's tags are on each of its 34 op points). Bounded like _ESCAPED_NAMES.
_TAG_TEXTS: dict[tuple[str, str], str] = {}


def _tag_text(pair: tuple[str, str]) -> str:
    text = _TAG_TEXTS.get(pair)
    if text is None:
        key, value = pair
        text = f",{_name(key)}={_name(value)}" if value != "" else ""
        if len(_TAG_TEXTS) < _ESCAPED_NAMES_MAX:
            _TAG_TEXTS[pair] = text
    return text


def to_line(point: Point) -> str:
    """One line of line protocol (no newline); ValueError when it cannot be written."""
    if not point.fields:
        raise ValueError(f"point of {point.measurement} has no fields")
    head = _escape(point.measurement, ", ")
    tags = "".join(map(_tag_text, sorted(point.tags)))
    body = ",".join([f"{_name(k)}={_field_value(v)}" for k, v in sorted(point.fields.items())])
    return f"{head}{tags} {body} {point.time_ns}"


# from_line's pieces. A backslash before a comma, equals sign or space is an
# escape (to_line never writes one otherwise); the series key ends at the
# first unescaped space; a string field value is quoted, with backslash and
# double quote escaped (InfluxDB reference, "Line protocol", special characters).
_UNESCAPED_SPACE = re.compile(r"(?<!\\) ")
_UNESCAPED_COMMA = re.compile(r"(?<!\\),")
_UNESCAPED_EQUALS = re.compile(r"(?<!\\)=")
_NAME_ESCAPE = re.compile(r"\\([,= ])")
_STRING_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_FIELD = re.compile(r'((?:\\[,= ]|[^,= ])+)=("(?:[^"\\]|\\.)*"|[^,"]*)(?:,|$)', re.DOTALL)


def _unescape_name(text: str) -> str:
    return _NAME_ESCAPE.sub(r"\1", text) if "\\" in text else text


def _parse_value(text: str) -> FieldValue:
    if text.startswith('"'):
        inner = text[1:-1]
        return _STRING_ESCAPE.sub(r"\1", inner) if "\\" in inner else inner
    if text == "true":
        return True
    if text == "false":
        return False
    if text.endswith("i"):
        return int(text[:-1])
    return float(text)


def name_text(text: str) -> str:
    """A tag key, tag value or field key as to_line writes it; ValueError when it cannot be written."""
    return _name(text)


def measurement_head(line: str) -> str:
    """The measurement of a line to_line wrote, as written (escaped), without decoding the rest."""
    end = len(line)
    for char in ", ":
        found = line.find(char)
        if found != -1 and found < end:
            end = found
    if "\\" not in line[:end]:  # the common case: nothing escaped before the first comma or space
        return line[:end]
    return _UNESCAPED_COMMA.split(series_key(line), 1)[0]


def measurement_of(line: str) -> str:
    """The measurement of a line to_line wrote, without decoding the rest."""
    head = measurement_head(line)
    return head.replace("\\,", ",").replace("\\ ", " ") if "\\" in head else head


def _from_plain_line(line: str) -> Point:
    """from_line of the common line: nothing escaped, no string field, so every comma,
    equals sign and space is a separator."""
    parts = line.split(" ")
    if len(parts) != 3:
        raise ValueError("line protocol without fields or timestamp")
    names = parts[0].split(",")
    tags = []
    for pair in names[1:]:
        key, equals, value = pair.partition("=")
        if not equals:
            raise ValueError(f"bad tag {pair!r}")
        tags.append((key, value))
    fields: dict[str, FieldValue] = {}
    for pair in parts[1].split(","):
        key, equals, value = pair.partition("=")
        if not equals:
            raise ValueError(f"bad field {pair!r}")
        fields[key] = _parse_value(value)
    return Point(names[0], tuple(tags), fields, int(parts[2]))


def series_key(line: str) -> str:
    """A line's measurement and tags as written (the text before its first unescaped space)."""
    space = line.find(" ")
    if space > 0 and line[space - 1] != "\\":  # the common case: the first space is not escaped
        return line[:space]
    return _UNESCAPED_SPACE.split(line, 1)[0]


def from_line(line: str) -> Point:
    """The Point of a line to_line wrote (tags with an empty value are not in it); ValueError otherwise."""
    if "\\" not in line and '"' not in line:
        return _from_plain_line(line)
    parts = _UNESCAPED_SPACE.split(line, 1)
    if len(parts) != 2:
        raise ValueError("line protocol without fields")
    key, rest = parts
    body, _, stamp = rest.rpartition(" ")
    names = _UNESCAPED_COMMA.split(key)
    tags = []
    for pair in names[1:]:
        tag = _UNESCAPED_EQUALS.split(pair)
        if len(tag) != 2:
            raise ValueError(f"bad tag {pair!r}")
        tags.append((_unescape_name(tag[0]), _unescape_name(tag[1])))
    fields: dict[str, FieldValue] = {}
    position = 0
    while position < len(body):
        match = _FIELD.match(body, position)
        if match is None or match.end() == position:
            raise ValueError(f"bad field at {body[position : position + 40]!r}")
        fields[_unescape_name(match.group(1))] = _parse_value(match.group(2))
        position = match.end()
    if not fields or (not stamp.isdigit() and not (stamp.startswith("-") and stamp[1:].isdigit())):
        raise ValueError("line protocol without fields or timestamp")
    return Point(names[0].replace("\\,", ",").replace("\\ ", " "), tuple(tags), fields, int(stamp))
