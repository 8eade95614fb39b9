//! Replacement rules written in Python: a subclass of `ssdcache.Policy`,
//! registered by name (`ssdcache.register_policy`), runs as a core
//! [`Replacement`] through the registry's extension point
//! ([`registry::register_external`]), so every write mode, admission layer,
//! tier and device model takes it as it takes a built-in rule.
//!
//! The rule keeps the resident set itself (a hashbrown set), so Python is
//! asked only what Python decides: `on_hit` on a hit, `on_miss` (admit?) on a
//! miss the mode caches, `evict` only when the cache is full, `on_remove` on a
//! trim or invalidation of a resident page, `on_access` on every access the
//! rule sees. A hook the class does not override is never called (the Python
//! side hands over only the overridden ones).
//!
//! A policy that raises or breaks a rule cannot return an error through the
//! [`Replacement`] interface: the rule records what happened in the running
//! call's [`CallScope`] and unwinds (`resume_unwind`: no panic message) to the
//! `_core` function, which raises it as `ssdcache.PolicyError` chained to the
//! policy's own exception.

use hashbrown::HashSet;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString, PyTuple};
use ssdcache::policy::registry;
use ssdcache::policy::{Access, BuildCtx, Replacement, Spec, SpecError};
use ssdcache::trace::Op;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

/// The Python module that holds the registered classes and builds them.
const MODULE: &str = "ssdcache._policy";

/// Why a call that ran Python policies failed.
pub enum Broken {
    /// Raised as it is: bad parameters (a ValueError), or an exception that
    /// is no `Exception` (KeyboardInterrupt).
    Raise(PyErr),
    /// A policy broke a rule: raised as `PolicyError`, chained to `cause`.
    Rule {
        policy: String,
        class: String,
        seq: Option<u64>,
        /// `seq` is the last access the rule saw, not the one that failed
        /// (a trim or an invalidation reaches `on_remove` with no access).
        after: bool,
        key: Option<u64>,
        rule: String,
        cause: Option<PyErr>,
    },
}

type Slot = Arc<Mutex<Option<Broken>>>;

thread_local! {
    /// The slot of the `_core` call running on this thread, if any: rules
    /// built during the call report into it, from whichever thread runs them.
    static CALL: RefCell<Option<Slot>> = const { RefCell::new(None) };
}

/// Unwinds a run whose policy broke; the payload carries nothing (the slot does).
struct Abort;

/// A `_core` call's failure slot, current on this thread while it lives.
pub struct CallScope {
    slot: Slot,
    outer: Option<Slot>,
}

impl CallScope {
    pub fn enter() -> CallScope {
        let slot: Slot = Arc::default();
        let outer = CALL.with(|c| c.replace(Some(slot.clone())));
        CallScope { slot, outer }
    }

    /// The first failure of a Python policy during the call, if any.
    pub fn take(&self) -> Option<Broken> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        CALL.with(|c| *c.borrow_mut() = self.outer.take());
    }
}

/// Keeps the first failure (later ones, from other minis of an `mrc`, follow from it or add nothing).
fn record(slot: &Slot, broken: Broken) {
    let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
    if s.is_none() {
        *s = Some(broken);
    }
}

impl Broken {
    /// The page access at which the rule was broken, if during a run.
    pub fn seq(&self) -> Option<u64> {
        match self {
            Broken::Rule { seq, .. } => *seq,
            Broken::Raise(_) => None,
        }
    }

    /// The exception to raise; `request` is the request the failing access
    /// belonged to, when the caller could tell; `context` follows the page access.
    pub fn into_err(self, py: Python<'_>, request: Option<u64>, context: &str) -> PyErr {
        let (policy, class, seq, after, key, rule, cause) = match self {
            Broken::Raise(e) => return e,
            Broken::Rule { policy, class, seq, after, key, rule, cause } => {
                (policy, class, seq, after, key, rule, cause)
            }
        };
        // (Ctrl-C in a hook, SystemExit: not the policy's fault, raised as they are)
        if let Some(c) = cause.as_ref().filter(|c| !c.is_instance_of::<PyException>(py)) {
            return c.clone_ref(py);
        }
        let verb = if after { "after" } else { "at" };
        let mut details = Vec::new();
        let at = match (request, seq) {
            (Some(r), Some(s)) => {
                details.push(format!("page access {s}{context}"));
                format!(" {verb} request {r}")
            }
            (None, Some(s)) => format!(" {verb} page access {s}{context}"),
            _ => String::new(),
        };
        details.extend(key.map(|k| format!("key {k}")));
        let details = if details.is_empty() { String::new() } else { format!(" ({})", details.join(", ")) };
        let msg = format!("policy {policy} ({class}){at}{details}: {rule}");
        let err = match py.import(MODULE).and_then(|m| m.getattr("PolicyError")).and_then(|c| c.call1((msg.clone(),))) {
            Ok(e) => PyErr::from_value(e),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(msg),
        };
        err.set_cause(py, cause);
        err
    }
}

/// The class's overridden hooks, bound to its instance (`None`: not overridden).
struct Hooks {
    on_hit: Option<Py<PyAny>>,
    on_miss: Option<Py<PyAny>>,
    evict: Py<PyAny>,
    on_remove: Option<Py<PyAny>>,
    on_access: Option<Py<PyAny>>,
}

/// A Python policy as a replacement rule.
pub struct PyRule {
    /// The spec it was built from and the class, for messages.
    policy: String,
    class: String,
    hooks: Hooks,
    resident: HashSet<u64>,
    capacity: usize,
    /// The page access being served, or (`removing`) the last one seen: a
    /// removal comes with no access.
    seq: u64,
    removing: bool,
    slot: Slot,
    /// Keeps the instance alive (the hooks are bound to it anyway).
    _instance: Py<PyAny>,
}

impl PyRule {
    /// Records the broken rule and stops the run.
    fn fail(&self, key: Option<u64>, rule: String, cause: Option<PyErr>) -> ! {
        let broken = Broken::Rule {
            policy: self.policy.clone(),
            class: self.class.clone(),
            seq: Some(self.seq),
            after: self.removing,
            key,
            rule,
            cause,
        };
        record(&self.slot, broken);
        std::panic::resume_unwind(Box::new(Abort))
    }

    /// `hook(*args)`; its exception stops the run.
    fn call<'py, A>(&self, py: Python<'py>, hook: &Py<PyAny>, name: &str, key: u64, args: A) -> Bound<'py, PyAny>
    where
        A: pyo3::call::PyCallArgs<'py>,
    {
        match hook.bind(py).call1(args) {
            Ok(v) => v,
            Err(e) => {
                let what = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "an exception".into());
                self.fail(Some(key), format!("{name}() raised {what}: {}", e.value(py)), Some(e))
            }
        }
    }
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    let text = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

impl Replacement for PyRule {
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        (self.seq, self.removing) = (a.seq, false);
        let hit = self.resident.contains(&a.key);
        let hook = if hit { self.hooks.on_hit.as_ref() } else { None };
        if hook.is_none() && self.hooks.on_access.is_none() {
            return hit;
        }
        Python::attach(|py| {
            if let Some(f) = &self.hooks.on_access {
                self.call(py, f, "on_access", a.key, (a.key, a.op == Op::Write, a.time));
            }
            if let Some(f) = hook {
                self.call(py, f, "on_hit", a.key, (a.key,));
            }
        });
        hit
    }

    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        (self.seq, self.removing) = (a.seq, false);
        let key = a.key;
        let full = self.resident.len() >= self.capacity;
        if self.hooks.on_miss.is_none() && !full {
            self.resident.insert(key);
            return true;
        }
        let victim = Python::attach(|py| {
            if let Some(f) = &self.hooks.on_miss {
                let answer = self.call(py, f, "on_miss", key, (key,));
                let admit = if answer.is_none() {
                    true
                } else if let Ok(b) = answer.cast::<PyBool>() {
                    b.is_true()
                } else {
                    let r = repr(&answer);
                    self.fail(
                        Some(key),
                        format!("on_miss() returned {r}: it answers True, False or None (admit)"),
                        None,
                    )
                };
                if !admit {
                    return Err(());
                }
            }
            if !full {
                return Ok(None);
            }
            let v = self.call(py, &self.hooks.evict, "evict", key, ());
            if v.is_none() {
                let rule = format!(
                    "evict() returned None while the cache is full ({} pages): admitting key {key} without a \
                     victim would grow the cache past its capacity",
                    self.capacity
                );
                self.fail(Some(key), rule, None)
            }
            match v.extract::<u64>() {
                Ok(k) if !v.is_instance_of::<PyBool>() => Ok(Some(k)),
                _ => {
                    let r = repr(&v);
                    self.fail(Some(key), format!("evict() returned {r}, which is not a key (an int from 0)"), None)
                }
            }
        });
        let victim = match victim {
            Err(()) => return false,
            Ok(v) => v,
        };
        if let Some(v) = victim {
            if v == key || !self.resident.remove(&v) {
                let why = if v == key { "the key being admitted, which is not resident yet" } else { "not resident" };
                self.fail(Some(key), format!("evict() returned key {v}, a key it does not hold ({why})"), None)
            }
            evicted.push(v);
        }
        self.resident.insert(key);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        if !self.resident.remove(&key) {
            return false;
        }
        if let Some(f) = &self.hooks.on_remove {
            self.removing = true;
            Python::attach(|py| {
                self.call(py, f, "on_remove", key, (key,));
            });
        }
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.resident.contains(&key)
    }
    fn len(&self) -> usize {
        self.resident.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

/// The registry's builder for every Python rule: `ssdcache._policy._build`
/// checks the spec's parameters against the class and makes the instance.
fn build(spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Replacement>, SpecError> {
    let Some(slot) = CALL.with(|c| c.borrow().clone()) else {
        // (only a `_core` call builds policies in this process)
        return Err(SpecError::UnknownName { kind: "policy", name: spec.name.clone(), known: "(none here)".into() });
    };
    let failed = |why: String| SpecError::BadValue {
        kind: "policy",
        name: spec.name.clone(),
        param: "class".into(),
        value: spec.name.clone(),
        why,
    };
    Python::attach(|py| {
        let made = (|| -> PyResult<Bound<'_, PyAny>> {
            let params = PyList::empty(py);
            for (k, v) in &spec.params {
                params.append((k, v))?;
            }
            py.import(MODULE)?.getattr("_build")?.call1((&spec.name, ctx.capacity, params))
        })();
        let made = match made {
            Ok(m) => m,
            Err(e) => {
                // (a ValueError for parameters the class does not take, a
                // PolicyError chained to what its constructor raised: raised as they are)
                let why = e.to_string();
                record(&slot, Broken::Raise(e));
                return Err(failed(why));
            }
        };
        let parts = made.cast::<PyTuple>().map_err(|_| failed("_build returned no tuple".into()))?;
        let get =
            |i: usize| -> Option<Py<PyAny>> { parts.get_item(i).ok().filter(|v| !v.is_none()).map(Bound::unbind) };
        let class = get(0)
            .and_then(|c| c.bind(py).cast::<PyString>().ok().map(|s| s.to_string()))
            .unwrap_or_else(|| "?".into());
        let (Some(instance), Some(evict)) = (get(1), get(4)) else {
            return Err(failed("_build returned no instance or no evict".into()));
        };
        let hooks = Hooks { on_hit: get(2), on_miss: get(3), evict, on_remove: get(5), on_access: get(6) };
        Ok(Box::new(PyRule {
            policy: spec.canonical(),
            class,
            hooks,
            resident: HashSet::with_capacity(ctx.capacity.min(1 << 20)),
            capacity: ctx.capacity,
            seq: 0,
            removing: false,
            slot,
            _instance: instance,
        }) as Box<dyn Replacement>)
    })
}

/// Registers `name` in the core's registry as a Python rule.
#[pyfunction]
pub fn register_policy(name: &str) -> PyResult<()> {
    registry::register_external(name, build).map_err(pyo3::exceptions::PyValueError::new_err)
}

/// Forgets the Python rule `name`; whether there was one.
#[pyfunction]
pub fn unregister_policy(name: &str) -> bool {
    registry::unregister_external(name)
}

/// Whether a policy spec names a Python rule anywhere (`admit(rule=mylru)`):
/// a run of one holds the GIL throughout instead of taking it per call. A
/// parameter value that happens to equal a registered name only costs that.
pub fn names_python(spec: &str) -> bool {
    let names = registry::external_names();
    !names.is_empty()
        && spec
            .split(|c: char| "(),=".contains(c))
            .map(|t| t.trim().to_ascii_lowercase())
            .any(|t| names.contains(&t.as_str()))
}
