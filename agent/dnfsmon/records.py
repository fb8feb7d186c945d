"""Record: the base of the agent's plain data classes on a collect's path.

Why not dataclasses: `import dataclasses` loads inspect (and with it ast, dis,
tokenize and linecache), and each decorated class compiles its generated
methods when its module is imported. Every cron run paid both, some 15 to
25 ms of CPU of a run of about 150 (bench/RESULTS.md), to make a few dozen
classes. So the agent's records are:

- read-only records (settings, points, intervals): typing.NamedTuple, which is
  read-only, typed and compared by value, with `_replace` and `_asdict`;
- records that are filled in as a run goes (an outcome, a reading, a finding):
  a plain class that names its fields in __slots__ and writes its __init__
  out, with equality and a repr from this base, as a dataclass had them.

Code that is never on a collect's path (the wire decoder, check, top, the
simulator) keeps its dataclasses.
"""

from __future__ import annotations

# A record class -> its fields: the __slots__ of the class and of every class above it (those
# not starting with _). A subclass's __slots__ names only the fields it adds (mountstats'
# MountOps adds `layout` to Sample's), so reading `self.__slots__` alone compared a subclass's
# records by their added fields only.
_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def fields_of(record_class: type) -> tuple[str, ...]:
    """The fields a record of this class is compared and shown by, the base class's first."""
    found = _FIELDS_OF.get(record_class)
    if found is None:
        names = [name for klass in reversed(record_class.__mro__) for name in klass.__dict__.get("__slots__", ())]
        found = _FIELDS_OF[record_class] = tuple(name for name in names if not name.startswith("_"))
    return found


class Record:
    """Equality and a repr from the fields named in __slots__ by the class and the classes above it
    (those not starting with _)."""

    __slots__ = ()

    def _fields(self) -> tuple[str, ...]:
        return fields_of(self.__class__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields())

    # Filled in as a run goes, so not hashable (as a dataclass with eq and without frozen).
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{self.__class__.__name__}({fields})"
