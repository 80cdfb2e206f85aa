//! Writers and readers of a results folder (see docs/FORMATS.md) and the live stdout table.

pub(crate) mod csvio;
pub mod nccl_tests_json;
pub mod nccl_tests_text;
pub mod pairs_csv;
pub mod prometheus;
pub mod ranks_csv;
pub mod run_dir;
pub mod run_reader;
pub mod samples_csv;
pub mod sink;
pub mod soak;
pub mod straggler;
pub mod summary_csv;
pub mod table;
pub mod telemetry_csv;

pub use run_dir::{default_run_id, RunDir};
