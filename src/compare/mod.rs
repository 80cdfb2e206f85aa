//! `collbench compare A B`: the points two results folders have in common, side by side, with
//! the ratios B/A of median time and bus bandwidth, and the regressions beyond a threshold.
//!
//! [`diff`] matches and judges (pure); [`command`] reads the folders and prints. The rule is
//! described in docs/ACCEPTANCE.md ("Compare").

pub mod args;
pub mod command;
pub mod diff;
