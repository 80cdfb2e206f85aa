//! `pairs.csv` (schema `collbench.pairs/v1`): which two nodes each point of a `--pairs` run
//! measured. The `point` column is the 0-based row of summary.csv, where the timings are.

use std::path::Path;

use super::csvio::{self, push_row, CsvFile, Row};
use crate::error::Result;

/// Schema id of pairs.csv.
pub const PAIRS_SCHEMA: &str = "collbench.pairs/v1";

/// File name of the node pairs inside a results folder.
pub const PAIRS_FILE: &str = "pairs.csv";

/// The columns of pairs.csv, in order.
pub const PAIRS_COLUMNS: [&str; 7] = [
    "point", "node_a", "node_b", "host_a", "host_b", "rank_a", "rank_b",
];

const WHAT: &str = "collbench pairs.csv (collbench.pairs/v1)";

/// The two nodes (and the rank on each) that one point measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairRow {
    pub point: usize,
    pub node_a: usize,
    pub node_b: usize,
    pub host_a: String,
    pub host_b: String,
    pub rank_a: usize,
    pub rank_b: usize,
}

/// Appends pair rows to pairs.csv.
#[derive(Debug)]
pub struct PairsWriter {
    csv: CsvFile,
}

impl PairsWriter {
    /// Creates `dir/pairs.csv` with its header; refuses an existing one.
    pub fn create(dir: &Path) -> Result<Self> {
        Ok(PairsWriter {
            csv: CsvFile::create(dir, PAIRS_FILE, &PAIRS_COLUMNS)?,
        })
    }

    /// Appends one row in one write.
    pub fn append(&mut self, row: &PairRow) -> Result<()> {
        let fields = [
            row.point.to_string(),
            row.node_a.to_string(),
            row.node_b.to_string(),
            csvio::text("host name", &row.host_a)?,
            csvio::text("host name", &row.host_b)?,
            row.rank_a.to_string(),
            row.rank_b.to_string(),
        ];
        let mut line = String::new();
        push_row(&mut line, &fields);
        self.csv.append(&line)
    }
}

/// Reads pairs.csv back in file order; errors name the file and line.
pub fn read_pairs(path: &Path) -> Result<Vec<PairRow>> {
    csvio::read_rows(path, WHAT, &PAIRS_COLUMNS, parse_pair)
}

fn parse_pair(row: &Row) -> Result<PairRow> {
    Ok(PairRow {
        point: row.parse("point")?,
        node_a: row.parse("node_a")?,
        node_b: row.parse("node_b")?,
        host_a: row.get("host_a")?.to_string(),
        host_b: row.get("host_b")?.to_string(),
        rank_a: row.parse("rank_a")?,
        rank_b: row.parse("rank_b")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let row = PairRow {
            point: 3,
            node_a: 0,
            node_b: 2,
            host_a: "gpu-a01".into(),
            host_b: "gpu-a03.cluster".into(),
            rank_a: 0,
            rank_b: 16,
        };
        let mut w = PairsWriter::create(dir.path()).unwrap();
        w.append(&row).unwrap();
        assert_eq!(read_pairs(&dir.path().join(PAIRS_FILE)).unwrap(), vec![row]);
        let mut bad = read_pairs(&dir.path().join(PAIRS_FILE)).unwrap()[0].clone();
        bad.host_a = "a,b".into();
        assert!(w.append(&bad).is_err());
    }
}
