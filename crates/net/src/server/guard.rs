//! The server's two small synchronisation helpers: [`lock`] (a mutex
//! whose holder panicked is still used) and [`CountGuard`]. A leaf: every
//! part of the server uses them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Locks `m`, also when it is poisoned (a thread panicked holding it).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Decrements a counter when dropped.
pub(super) struct CountGuard<'a>(pub(super) &'a AtomicUsize);
impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
