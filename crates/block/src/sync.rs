//! Lock helpers shared by the server's crates.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning: every critical section in the server's crates
/// leaves its data consistent at each step, so a panic elsewhere must not
/// turn every later request into a second panic.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
