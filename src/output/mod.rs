//! Where command output goes: standard output that never panics, and output files that are
//! written atomically and never replace an earlier file unless the user asked (`--force`).

pub mod file;
pub mod stderr;
pub mod stdout;
