//! The seam for the files of a results folder that take every finished point: summary.csv,
//! samples.csv and ranks.csv today. A new per-point format is one writer implementing
//! [`PointSink`] plus its line in `RunDir::create`; the drivers only call
//! `RunDir::append_point`. (pairs.csv and telemetry.csv take rows of their own, written just
//! before the point they belong to, only in the runs that have them.)

use crate::error::Result;
use crate::model::record::{IterSample, PointRecord, RankSummary};

/// One finished point, as every sink sees it.
#[derive(Clone, Copy, Debug)]
pub struct FinishedPoint<'a> {
    /// The point's index in the run (0 for the first point appended).
    pub index: usize,
    pub record: &'a PointRecord,
    pub samples: &'a [IterSample],
    pub ranks: &'a [RankSummary],
}

/// A file that records each finished point before the next one starts.
pub trait PointSink: std::fmt::Debug {
    /// The file's name and the schema id meta.json's `files` lists for it.
    fn file(&self) -> (&'static str, &'static str);

    /// Appends `point`; when this returns the bytes are in the kernel and survive a crash of
    /// this process.
    fn append(&mut self, point: &FinishedPoint<'_>) -> Result<()>;
}
