//! The vocabulary every layer shares and no I/O: what one measured point is (its key, its
//! summary, its iterations, each rank's view).

pub mod call;
pub mod comm_setup;
pub mod concurrent;
pub mod limits;
pub mod plan;
pub mod record;
pub mod split;
pub mod topology;
