//! The sweep: the plan of points, the rank-side timing protocol, the launcher-side supervision,
//! and the records each point produces.

pub mod args;
pub mod bisect;
pub mod bisect_run;
pub mod blame;
pub mod cluster;
pub mod console;
pub mod distributed;
pub mod distributed_point;
pub mod execute;
pub mod lead;
pub mod links;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "nccl")]
pub mod nccl;
pub mod nccl_flags;
pub mod nccl_tables;
pub mod rank;
pub mod request;
pub mod roles;
pub mod run;
pub mod summarize;
pub mod watchdog;
pub mod whereabouts;
