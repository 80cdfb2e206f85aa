//! The stall watchdog's sign of progress on an MPI rank (`crate::sweep::mpi`): every call it
//! makes, blocking or started, counts.

use std::sync::atomic::{AtomicU64, Ordering};

/// Calls this rank has made (every warm-up, timed, loop and checked call, and every point): the
/// stall watchdog's sign of progress (`crate::sweep::mpi`).
pub static PROGRESS: AtomicU64 = AtomicU64::new(0);

pub(super) fn progressed() {
    PROGRESS.fetch_add(1, Ordering::Relaxed);
}
