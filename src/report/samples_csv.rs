//! `samples.csv`: one row per timed iteration of every point (schema `collbench.samples/v1`).
//!
//! The `point` column is the 0-based row of summary.csv the iteration belongs to; the other key
//! columns repeat part of that row so the file can be read on its own.

use std::path::Path;

use super::csvio::{self, push_row, CsvFile, Row};
use super::sink::{FinishedPoint, PointSink};
use crate::error::Result;
use crate::model::record::{IterSample, PointKey};

/// Schema id of samples.csv.
pub const SAMPLES_SCHEMA: &str = "collbench.samples/v1";

/// File name of the samples inside a results folder.
pub const SAMPLES_FILE: &str = "samples.csv";

/// The columns of samples.csv, in order.
pub const SAMPLES_COLUMNS: [&str; 11] = [
    "point",
    "op",
    "algo",
    "dtype",
    "world",
    "bytes",
    "in_place",
    "iter",
    "time_us",
    "slowest_rank",
    "fastest_us",
];

/// What errors call a file that should hold samples.
const WHAT: &str = "collbench samples.csv (collbench.samples/v1)";

/// Appends per-iteration samples to samples.csv.
#[derive(Debug)]
pub struct SamplesWriter {
    csv: CsvFile,
}

impl SamplesWriter {
    /// Creates `dir/samples.csv` with its header; refuses an existing one.
    pub fn create(dir: &Path) -> Result<Self> {
        let csv = CsvFile::create(dir, SAMPLES_FILE, &SAMPLES_COLUMNS)?;
        Ok(SamplesWriter { csv })
    }

    /// Appends the samples of point `point` (iterations numbered from 0) in one write, so when
    /// this returns they are in the kernel and survive a crash of this process.
    pub fn append(&mut self, point: usize, key: &PointKey, samples: &[IterSample]) -> Result<()> {
        let prefix = csvio::point_fields(point, key);
        let mut lines = String::new();
        for (iter, s) in samples.iter().enumerate() {
            let mut fields = prefix.clone();
            fields.extend([
                iter.to_string(),
                csvio::float(s.time_us),
                s.slowest_rank.to_string(),
                csvio::float(s.fastest_us),
            ]);
            push_row(&mut lines, &fields);
        }
        self.csv.append(&lines)
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        self.csv.path()
    }
}

impl PointSink for SamplesWriter {
    fn file(&self) -> (&'static str, &'static str) {
        (SAMPLES_FILE, SAMPLES_SCHEMA)
    }

    fn append(&mut self, p: &FinishedPoint<'_>) -> Result<()> {
        SamplesWriter::append(self, p.index, &p.record.key, p.samples)
    }
}

/// Reads samples.csv back as (point index, sample) pairs in file order. Errors name the file
/// and line.
pub fn read_samples(path: &Path) -> Result<Vec<(usize, IterSample)>> {
    csvio::read_rows(path, WHAT, &SAMPLES_COLUMNS, parse_sample)
}

/// One row of samples.csv: the point's index and the sample.
pub type Sample = (usize, IterSample);

/// The point of a cut-off samples.csv line, when the line still tells it.
pub type CutPoint = Option<usize>;

/// [`read_samples`], plus the point whose rows were cut off when the file ends in half a line
/// (a crash or a full disk): `Some(None)` when the cut line does not tell its point.
pub fn read_samples_until_cut(path: &Path) -> Result<(Vec<Sample>, Option<CutPoint>)> {
    let (rows, cut) = csvio::read_rows_until_cut(path, WHAT, &SAMPLES_COLUMNS, parse_sample)?;
    let cut_point = cut.map(|c| {
        c.text
            .split_once(',')
            .and_then(|(point, _)| point.parse::<usize>().ok())
    });
    Ok((rows, cut_point))
}

/// One row as a sample.
fn parse_sample(row: &Row) -> Result<(usize, IterSample)> {
    let sample = IterSample {
        time_us: row.float("time_us")?,
        slowest_rank: row.parse("slowest_rank")?,
        fastest_us: row.float("fastest_us")?,
    };
    Ok((row.parse("point")?, sample))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::report::summary_csv::tests::awkward_record;

    fn samples() -> Vec<IterSample> {
        vec![
            IterSample {
                time_us: 0.1 + 0.2,
                slowest_rank: 2,
                fastest_us: 1e-7,
            },
            IterSample {
                time_us: 123_456.789_012_345,
                slowest_rank: 0,
                fastest_us: 1.0 / 3.0,
            },
        ]
    }

    #[test]
    fn round_trip_with_point_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SamplesWriter::create(dir.path()).unwrap();
        let key = awkward_record().key;
        w.append(0, &key, &samples()).unwrap();
        w.append(1, &key, &[]).unwrap();
        w.append(2, &key, &samples()[..1]).unwrap();
        let back = read_samples(w.path()).unwrap();
        let s = samples();
        assert_eq!(back, vec![(0, s[0]), (0, s[1]), (2, s[0])]);
        let text = std::fs::read_to_string(w.path()).unwrap();
        let row = text.lines().nth(2).unwrap();
        assert!(
            row.starts_with("0,reducescatter,ring,bf16,3,8,true,1,"),
            "{row}"
        );
    }

    fn read_err(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SAMPLES_FILE);
        std::fs::write(&path, text).unwrap();
        let err = read_samples(&path).unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("samples.csv"), "{msg}");
        msg
    }

    #[test]
    fn malformed_files_name_file_and_line() {
        let header = SAMPLES_COLUMNS.join(",");
        let row = "0,allgather,ring,f32,2,8,false,0,1.5,1,1.25";
        assert!(read_err("").contains("empty file"));
        let nan = row.replace(",1.5,", ",nan,");
        assert!(read_err(&format!("{header}\n{nan}\n")).contains("line 2: column time_us"));
        let summary = crate::report::summary_csv::SUMMARY_COLUMNS.join(",");
        assert!(read_err(&format!("{summary}\n")).contains("line 1: header lacks"));
    }
}
