//! The vocabulary every layer shares and no I/O: what one measured point is (its key, its
//! summary, its iterations, each rank's view).

pub mod record;
