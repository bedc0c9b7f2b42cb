"""Typed configuration: dataclasses read from and written to JSON / YAML, with dotted command-line overrides.

Every config in seq2bert is a plain dataclass whose fields carry type hints. This module turns nested dicts
(from a JSON or YAML file) into those dataclasses, checking every key and value on the way:

* an unknown key is an error that names the closest valid keys (``train.lrr`` → "did you mean train.lr?");
* a value of the wrong type is an error that names the key and the expected type;
* each dataclass may define ``validate(self)`` raising :class:`ConfigError` for values that are of the right
  type but wrong (a negative learning rate, heads not dividing the hidden size, a missing file); the error is
  re-raised with the full dotted key, at load time, before any work starts.

Overrides come from the command line as ``key=value`` with dotted keys (``train.lr=3e-4``); the value is
parsed as YAML (so ``true``, ``3e-4``, ``[1, 2]`` and ``null`` work) and then type-checked like a file value.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import types
import typing
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import yaml

from seq2bert.errors import ConfigError
from seq2bert.io import atomic_write_text

T = TypeVar("T")


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _closest(key: str, valid: list[str], prefix: str) -> str:
    """The valid keys nearest ``key`` — those about as near as the nearest (train.lrr: train.lr, not also
    train.lora) — or all of them."""
    close = difflib.get_close_matches(key, valid, n=3, cutoff=0.5)
    if close:
        nearest = difflib.SequenceMatcher(None, key, close[0]).ratio()
        close = [c for c in close if difflib.SequenceMatcher(None, key, c).ratio() >= nearest - 0.1]
        return "did you mean " + " or ".join(prefix + c for c in close) + "?"
    return "valid keys: " + ", ".join(prefix + v for v in valid)


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if get_origin(tp) in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in get_args(tp))
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


TAG = "model_type"


@dataclasses.dataclass(frozen=True)
class Tagged:
    """The mark of a *tagged* section, ``Annotated[Any, Tagged(...)]``: its class is the one its ``model_type``
    names among ``arms()`` — a function called each time a configuration is read, so that choices added at
    run time (a family a plugin registers) are read from a file and from ``--set`` like the others. A mapping
    that names no ``model_type`` is read as ``default``'s; where an update switches the ``model_type``, the
    section restarts from ``defaults(model_type)()`` (a named size, say) or, when that gives None, from the
    class's own defaults."""

    arms: Callable[[], dict[str, type]]
    default: str
    defaults: Callable[[str], Callable[[], Any] | None] = lambda tag: None


def _tagged(tp: Any) -> Tagged | None:
    if get_origin(tp) is Annotated:
        return next((m for m in tp.__metadata__ if isinstance(m, Tagged)), None)
    return None


def tagged_arms(tp: Any) -> dict[str, type] | None:
    """For a tagged section, {model_type: class}, its default first: an ``Annotated[…, Tagged]`` field (its
    choices looked up now), or a union of dataclasses that each have a ``model_type`` field with a default.
    A mapping is read as the arm its ``model_type`` names (the first when it names none). Anything else: None.
    """
    tagged = _tagged(tp)
    if tagged is not None:
        arms = tagged.arms()
        first = {tagged.default: arms[tagged.default]} if tagged.default in arms else {}
        return {**first, **arms}
    if get_origin(tp) not in (Union, types.UnionType):
        return None
    arms = {}
    for arm in get_args(tp):
        if not dataclasses.is_dataclass(arm) or TAG not in field_names(arm):
            return None
        arms[arm.__dataclass_fields__[TAG].default] = arm
    return arms


def _tagged_arm(arms: dict[str, type], value: dict[str, Any], key: str) -> type:
    tag = value.get(TAG, next(iter(arms)))
    if tag not in arms:
        raise ConfigError(f"{key}.{TAG}: expected one of {', '.join(map(repr, arms))}, got {tag!r}")
    return arms[tag]


def _convert(value: Any, tp: Any, key: str) -> Any:
    """Check ``value`` against the type hint ``tp`` and convert where lossless (int → float, dict → dataclass)."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if get_origin(tp) is Annotated and _tagged(tp) is None:
        return _convert(value, get_args(tp)[0], key)
    arms = tagged_arms(tp)
    if arms is not None:
        if isinstance(value, tuple(arms.values())):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping with a {TAG} ({', '.join(arms)}), got {value!r}")
        return from_dict(_tagged_arm(arms, value, key), value, prefix=key + ".")
    if origin in (Union, types.UnionType):
        for arm in get_args(tp):
            try:
                return _convert(value, arm, key)
            except ConfigError:
                continue
        raise ConfigError(f"{key}: expected {_type_name(tp)}, got {value!r}")
    if tp is type(None):
        if value is None:
            return None
        raise ConfigError(f"{key}: expected null, got {value!r}")
    if origin is Literal:
        if value in get_args(tp):
            return value
        raise ConfigError(f"{key}: expected one of {_type_name(tp)}, got {value!r}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of {tp.__name__} fields, got {value!r}")
        return from_dict(tp, value, prefix=key + ".")
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        args = get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(f"{key}: expected {len(args)} values, got {len(value)}")
            return tuple(
                _convert(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True))
            )
        item = args[0] if args else Any
        out = [_convert(v, item, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(out) if origin is tuple else out
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        k_tp, v_tp = get_args(tp) or (Any, Any)
        if k_tp is int:  # JSON and YAML keys may come as strings: "0" → 0
            try:
                value = {int(k) if isinstance(k, str) else k: v for k, v in value.items()}
            except ValueError:
                raise ConfigError(f"{key}: expected integer keys, got {list(value)!r}") from None
        return {_convert(k, k_tp, key): _convert(v, v_tp, f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if tp is float:
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):  # YAML reads "1e-4" (no dot) as a string
            try:
                number = float(value)
            except ValueError:
                pass
        if number is None:
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        if not math.isfinite(number):  # .inf, .nan: a run would train to NaN weights
            raise ConfigError(f"{key}: expected a finite number, got {value!r}")
        return number
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise ConfigError(f"{key}: expected {_type_name(tp)}, got {value!r}")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def shared_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the values of its keys that are fields of dataclass ``cls`` checked against their
    annotations and converted as ``from_dict`` converts them, ``cls`` not built: the keys a foreign file
    shares with our config (a Hugging Face config.json) are checked, its other keys kept as they are. A value
    of the wrong type is a ConfigError naming the key and the type expected."""
    hints = _hints(cls)
    return {k: _convert(v, hints[k], k) if k in hints else v for k, v in data.items()}


def from_dict(cls: type[T], data: dict[str, Any], prefix: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, checking keys, types and ``validate()``; errors name dotted keys."""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: expected a mapping, got {data!r}")
    names = field_names(cls)
    hints = _hints(cls)
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            raise ConfigError(f"unknown key {prefix}{key}: {_closest(str(key), names, prefix)}")
        kwargs[key] = _convert(value, hints[key], prefix + key)
    try:
        obj = cls(**kwargs)  # dataclasses of seq2bert validate themselves in __post_init__
        validate = getattr(obj, "validate", None)
        if validate is not None:
            validate()
    except ConfigError as e:
        msg = str(e)
        raise ConfigError(prefix + msg if prefix and not msg.startswith(prefix) else msg) from None
    return obj


def former_defaults(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as read from a file a run saved (every field written), with each key that ``cls`` gained later
    — its class attribute ``FORMER_DEFAULTS`` — set to the value the code had before, where the file lacks it:
    a checkpoint keeps training as it was trained, not with a default that changed since."""
    return {**getattr(cls, "FORMER_DEFAULTS", {}), **data}


def to_dict(obj: Any) -> dict[str, Any]:
    """The plain-dict form of a (nested) config dataclass, ready for JSON / YAML."""

    def plain(v: Any) -> Any:
        if dataclasses.is_dataclass(v):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, Path):
            return str(v)
        return v

    return plain(obj)


class DuplicateKey(yaml.YAMLError):
    """A key given twice in one YAML mapping, on ``line`` (1-based)."""

    def __init__(self, key: Any, line: int, first: int):
        super().__init__(f"duplicate key {key!r} (first given on line {first}; each key once)")
        self.key, self.line = key, line


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, Hashable) and key in seen:
                raise DuplicateKey(key, line, seen[key])
            if isinstance(key, Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _unique_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's ``object_pairs_hook``: an object naming a key twice is refused (json keeps the last one)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} (each key once)")
        out[key] = value
    return out


def read_mapping(path: str | Path) -> dict[str, Any]:
    """Read a JSON or YAML file (by extension; YAML otherwise) into a dict, with a one-line error if malformed."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: a folder, expected a YAML or JSON config file")
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: invalid UTF-8 (expected a UTF-8 JSON or YAML file)") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text, object_pairs_hook=_unique_json_keys)
        else:
            data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except ValueError as e:  # _unique_json_keys
        raise ConfigError(f"{path}: invalid JSON ({e})") from None
    except DuplicateKey as e:
        raise ConfigError(f"{path}:{e.line}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: invalid YAML ({getattr(e, 'problem', None) or e})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys at the top level")
    return data


def load(cls: type[T], path: str | Path) -> T:
    """Load dataclass ``cls`` from a JSON or YAML file; errors name the file and the dotted key."""
    data = read_mapping(path)
    try:
        return from_dict(cls, data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def save(obj: Any, path: str | Path) -> None:
    """Write a config dataclass to JSON or YAML (by extension), atomically."""
    path = Path(path)
    data = to_dict(obj)
    if path.suffix == ".json":
        text = json.dumps(data, indent=2) + "\n"
    else:
        text = yaml.safe_dump(data, sort_keys=False)
    atomic_write_text(path, text)


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"train.lr=3e-4"`` → ``(["train", "lr"], 0.0003)``; the value is parsed as YAML."""
    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected key=value, e.g. train.lr=3e-4")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {item!r}: expected a dotted key such as train.lr")
    try:
        value = yaml.load(raw, Loader=UniqueKeyLoader) if raw.strip() else ""  # noqa: S506 (a SafeLoader)
    except DuplicateKey as e:
        raise ConfigError(f"override {item!r}: {e}") from None
    except yaml.YAMLError:
        value = raw
    return key.split("."), value


def _section_fields(tp: Any) -> dict[str, Any] | None:
    """The keys of a section and their types: a dataclass's fields, or for a tagged union the union of its
    arms' fields (each model's own keys are checked when the section is read as that model); else None."""
    if dataclasses.is_dataclass(tp):
        return _hints(tp)
    arms = tagged_arms(tp)
    if arms is None:
        return None
    out: dict[str, Any] = {}
    for arm in arms.values():
        for name, hint in _hints(arm).items():
            out.setdefault(name, hint)
    return out


def _free_keys(tp: Any) -> Any:
    """The value type of a ``dict[str, V]`` field — a section whose keys are free (a model's own fields,
    checked by the code that reads them) — else None."""
    if get_origin(tp) is not dict or (get_args(tp) or (str,))[0] is not str:
        return None
    return (get_args(tp) or (str, Any))[1]


def _set_dotted(data: dict[str, Any], cls: type, parts: list[str], value: Any, source: Any = None) -> None:
    """Set ``data[parts[0]][parts[1]]… = value``, checking each key against dataclass ``cls`` and its sections
    (under a ``dict[str, V]`` field, any one key, with a value of type V); ``source``: the file ``data`` came
    from, named when a section of it is not a mapping."""
    node, fields, prefix = data, _section_fields(cls), ""
    for i, part in enumerate(parts[:-1]):
        names = list(fields)
        if part not in names:
            raise ConfigError(f"unknown key {prefix}{part}: {_closest(part, names, prefix)}")
        if not isinstance(node.get(part, {}), dict):  # `train: 5` in the file
            where = f"{source}: " if source is not None else ""
            raise ConfigError(f"{where}{prefix}{part}: expected a mapping of its keys, got {node[part]!r}")
        free = _free_keys(fields[part])
        if free is not None and i == len(parts) - 2:  # e.g. model_config.hidden_size=128
            key = f"{prefix}{part}.{parts[-1]}"
            node.setdefault(part, {})[parts[-1]] = to_dict(_convert(value, free, key))
            return
        sub = _section_fields(fields[part])
        if sub is None:
            raise ConfigError(f"{prefix}{part} is a {_type_name(fields[part])}, not a section with keys")
        node = node.setdefault(part, {})
        fields, prefix = sub, prefix + part + "."
    last = parts[-1]
    names = list(fields)
    if last not in names:
        raise ConfigError(f"unknown key {prefix}{last}: {_closest(last, names, prefix)}")
    if tagged_arms(fields[last]) is not None and isinstance(value, dict):
        node[last] = dict(value)  # merged with the base's section and checked as its model at the end
        return
    node[last] = to_dict(_convert(value, fields[last], prefix + last))


def _restart_retagged(base: dict[str, Any], update: dict[str, Any], cls: type) -> dict[str, Any]:
    """Where ``update`` switches a tagged section to another ``model_type``, the base's keys for that section
    (another model's settings) are dropped: the new model starts from its own defaults — or from those the
    section names for it (``Tagged.defaults``)."""
    out = dict(base)
    for name, tp in _hints(cls).items():
        if not isinstance(update.get(name), dict) or not isinstance(out.get(name), dict):
            continue
        if tagged_arms(tp) is not None:
            if TAG in update[name] and update[name][TAG] != out[name].get(TAG):
                tagged = _tagged(tp)
                defaults = tagged.defaults(update[name][TAG]) if tagged is not None else None
                out[name] = to_dict(defaults()) if defaults is not None else {}
        elif dataclasses.is_dataclass(tp):
            out[name] = _restart_retagged(out[name], update[name], tp)
    return out


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge: sections merge key by key, other values are replaced."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def build(
    cls: type[T], *, base: T | None = None, file: str | Path | None = None, overrides: list[str] = ()
) -> T:
    """``base`` (default: ``cls()``) ← the keys of ``file`` ← dotted ``overrides``, validated once at the end.

    Keys a file leaves out keep the base's values, and checks that involve several keys (or files that an
    override supplies) see the final configuration.
    """
    data = to_dict(base if base is not None else cls())
    update = read_mapping(file) if file is not None else {}
    for item in overrides:
        parts, value = parse_override(item)
        _set_dotted(update, cls, parts, value, source=file)
    data = _merge(_restart_retagged(data, update, cls), update)
    try:
        return from_dict(cls, data)
    except ConfigError as e:
        if file is None:
            raise
        raise ConfigError(f"{file}{' with --set overrides' if overrides else ''}: {e}") from None


def apply_overrides(obj: T, overrides: list[str]) -> T:
    """Return a copy of config ``obj`` with dotted ``key=value`` overrides applied, type-checked and validated."""
    return build(type(obj), base=obj, overrides=list(overrides))
