"""Your own replacement policy, in Python: subclass :class:`Policy`, register it with
:func:`register_policy`, and name it in any policy spec (``simulate``, ``sweep``, ``mrc``,
every write mode, ``admit(rule=…)``, the device models).

The simulator keeps the set of resident pages itself and calls the class only where
the class decides (crates/py/src/policy.rs). This module needs no extension until a
class is registered."""

from __future__ import annotations

import inspect
import pickle
import re
from typing import Any

__all__ = ["Policy", "PolicyError", "register_policy", "unregister_policy", "registered_policies"]

# The hooks the simulator may call, in the order `_build` hands them to it.
_HOOKS = ("on_hit", "on_miss", "evict", "on_remove", "on_access")
_NAME = re.compile(r"[A-Za-z0-9_-]+")


class PolicyError(RuntimeError):
    """A Python policy raised or broke a rule: the message names the policy, the request
    and the rule; ``__cause__`` is the policy's own exception, if it raised one."""


class Policy:
    """Base class of a replacement policy written in Python.

    The simulator builds it as ``Cls(capacity, **params)`` (``capacity`` in pages; the
    spec's parameters, ``mylru(k=3)``, as keyword arguments: ints, floats, ``true``/
    ``false`` as bools, anything else as a str) and keeps the resident set itself:

    - ``on_hit(key)``: a resident page was accessed.
    - ``on_miss(key)``: a page that is not resident is about to be cached; return False
      to decline it (``None`` or True admits). Only misses the write mode caches come here.
    - ``evict()``: the cache is full and a page admitted by ``on_miss`` needs room:
      return a resident key (not the one being admitted), which leaves the cache.
    - ``on_remove(key)``: a resident page was dropped without ``evict`` (a trim, or a
      write invalidating it in read-only mode).
    - ``on_access(key, write, time)``: before ``on_hit``/``on_miss``, for every read or
      write the policy sees, cached or not (``time`` in ns of trace time).

    Only ``evict`` is required; a hook the class does not override is never called.
    Keys are ints (the page number, with the device in the high bits). A hook that
    raises, or an answer that breaks these rules, stops the run with :class:`PolicyError`
    (docs/python.md).
    """

    def __init__(self, capacity: int, **params: Any) -> None:
        self.capacity = capacity
        self.params = params

    def on_hit(self, key: int) -> None:
        """A resident page was accessed."""

    def on_miss(self, key: int) -> bool | None:
        """A page is about to be cached; False declines it."""
        return None

    def evict(self) -> int:
        """The resident key to evict to make room (called only when the cache is full)."""
        raise NotImplementedError

    def on_remove(self, key: int) -> None:
        """A resident page was dropped (trim, invalidation)."""

    def on_access(self, key: int, write: bool, time: int) -> None:
        """Every access the policy sees, before on_hit / on_miss."""


_registered: dict[str, type[Policy]] = {}


def _builtin_names() -> set[str]:
    from . import _core

    return {p["name"] for p in _core.policies()}


def register_policy(name: str, cls: type[Policy]) -> None:
    """Makes ``cls`` usable under ``name`` wherever a built-in policy name is:
    ``simulate(trace, "mylru")``, ``"mylru(mode=wt,k=3)"``, ``"admit(by=nhit(n=2),rule=mylru)"``,
    ``sweep``, ``mrc(sample=…)``. Registering a name again replaces its class.

    Runs on other processes (``executor="ray"``) ship the class with each task: a class
    of an importable module travels by reference (the module must be importable on the
    workers); one defined in ``__main__`` (a script, a notebook) or inside a function
    travels by value through cloudpickle (installed with Ray).

    Raises
    ------
    TypeError
        ``cls`` is not a class, not a subclass of :class:`Policy`, or does not override ``evict``.
    ValueError
        ``name`` is not a valid policy name or is a built-in policy's.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_policy({name!r}, …): expected a class (a subclass of ssdcache.Policy), "
                        f"got {type(cls).__name__}")
    if not issubclass(cls, Policy):
        raise TypeError(f"register_policy({name!r}, {cls.__name__}): the class must subclass ssdcache.Policy")
    if cls.evict is Policy.evict:
        raise TypeError(f"register_policy({name!r}, {cls.__name__}): the class must override evict()")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"register_policy({name!r}, …): a policy name has only letters, digits, '-' and '_'")
    key = name.lower()
    if key in _builtin_names():
        raise ValueError(f"register_policy({name!r}, …): {key!r} is a built-in policy; choose another name")
    from . import _core

    _core.register_policy(key)
    _registered[key] = cls


def unregister_policy(name: str) -> None:
    """Forgets a registered policy (KeyError if none is registered under ``name``)."""
    key = name.lower()
    del _registered[key]
    from . import _core

    _core.unregister_policy(key)


def registered_policies() -> dict[str, type[Policy]]:
    """The registered policies, by name."""
    return dict(_registered)


def catalogue() -> list[dict[str, Any]]:
    """The registered policies as ``ssdcache.policies()`` lists policies."""
    out = []
    for name, cls in _registered.items():
        params = [{"name": p.name, "default": "" if p.default is p.empty else repr(p.default), "about": ""}
                  for p in list(inspect.signature(cls).parameters.values())[1:]
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        doc = (inspect.getdoc(cls) or "").strip().splitlines()
        about = f"Python class {cls.__module__}.{cls.__name__}" + (f": {doc[0]}" if doc else "")
        out.append({"name": name, "about": about, "params": params + [{"name": "mode", "default": "(from --mode)",
                                                                        "about": "write mode"}]})
    return out


def _value(text: str) -> Any:
    """A spec value as a keyword argument: int, float, bool (true/false), else the text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _overridden(cls: type) -> set[str]:
    return {h for h in _HOOKS if getattr(cls, h) is not getattr(Policy, h)}


def _build(name: str, capacity: int, params: list[tuple[str, str]]) -> tuple[Any, ...]:
    """Called by the extension to build a registered policy for ``capacity`` pages:
    ``(class name, instance, on_hit, on_miss, evict, on_remove, on_access)``, a hook
    ``None`` where the class does not override it."""
    cls = _registered.get(name)
    spec = name + (f"({','.join(f'{k}={v}' for k, v in params)})" if params else "")
    if cls is None:  # unregistered in Python but not in the extension: cannot happen through the API
        raise ValueError(f"policy {spec}: no Python class is registered under {name!r}")
    kwargs = {k: _value(v) for k, v in params}
    try:
        inspect.signature(cls).bind(capacity, **kwargs)
    except TypeError as e:
        err = ValueError(f"policy {spec}: the parameters do not match {cls.__name__}"
                         f"{inspect.signature(cls)}: {e}")
        raise err from None
    try:
        instance = cls(capacity, **kwargs)
    except Exception as e:
        raise PolicyError(f"policy {spec} ({cls.__name__}): its constructor raised "
                          f"{type(e).__name__}: {e}") from e
    hooks = _overridden(cls)
    return (cls.__name__, instance, *(getattr(instance, h) if h in hooks else None for h in _HOOKS))


# --- shipping registrations to other processes (Ray workers) --------------------------------


def export() -> bytes | None:
    """The registrations, as bytes another process installs with :func:`install`; None
    if there are none. Classes of ``__main__`` or local ones go by value (cloudpickle),
    the others by reference."""
    if not _registered:
        return None
    items = []
    for name, cls in _registered.items():
        if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
            by_value = _cloudpickle()
            if by_value is None:
                raise ValueError(f"policy {name}: {cls.__name__} is defined in __main__ (or in a function), "
                                 "so it can travel to other processes only by value: pip install cloudpickle, "
                                 "or define it in an importable module")
            items.append((name, "value", by_value.dumps(cls)))
        else:
            items.append((name, "ref", pickle.dumps(cls)))
    return pickle.dumps(items)


def _cloudpickle() -> Any:
    """cloudpickle, or the copy Ray ships (Ray is where classes travel); None without either."""
    try:
        import cloudpickle

        return cloudpickle
    except ImportError:
        pass
    try:
        from ray import cloudpickle as ray_cloudpickle

        return ray_cloudpickle
    except ImportError:
        return None


def install(payload: bytes | None) -> None:
    """Registers in this process what :func:`export` shipped (a Ray worker does, per task)."""
    if payload is None:
        return
    for name, _how, data in pickle.loads(payload):
        cls = pickle.loads(data)
        if _registered.get(name) is not cls:
            register_policy(name, cls)
