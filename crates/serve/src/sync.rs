//! Lock helpers shared by the crate's modules.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning: every critical section in this crate
/// leaves its data consistent at each step, so a panic elsewhere must not
/// turn every later request into a second panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
