//! `ranks.csv`: each rank's own view of every point (schema `collbench.ranks/v1`), for skew and
//! slow-rank analysis. The `point` column is the 0-based row of summary.csv.

use std::path::Path;

use super::csvio::{self, push_row, CsvFile, Row};
use super::sink::{FinishedPoint, PointSink};
use crate::error::Result;
use crate::model::record::{PointKey, RankSummary};

/// Schema id of ranks.csv.
pub const RANKS_SCHEMA: &str = "collbench.ranks/v1";

/// File name of the per-rank summaries inside a results folder.
pub const RANKS_FILE: &str = "ranks.csv";

/// The columns of ranks.csv, in order.
pub const RANKS_COLUMNS: [&str; 14] = [
    "point",
    "op",
    "algo",
    "dtype",
    "world",
    "bytes",
    "in_place",
    "rank",
    "time_us_median",
    "time_us_mean",
    "time_us_max",
    "wrong",
    "global_rank",
    "node",
];

/// The columns every ranks.csv has: all but `global_rank` and `node`, which came later.
const REQUIRED: usize = 12;

/// What errors call a file that should hold rank summaries.
const WHAT: &str = "collbench ranks.csv (collbench.ranks/v1)";

/// Appends per-rank summaries to ranks.csv.
#[derive(Debug)]
pub struct RanksWriter {
    csv: CsvFile,
}

impl RanksWriter {
    /// Creates `dir/ranks.csv` with its header; refuses an existing one.
    pub fn create(dir: &Path) -> Result<Self> {
        let csv = CsvFile::create(dir, RANKS_FILE, &RANKS_COLUMNS)?;
        Ok(RanksWriter { csv })
    }

    /// Appends the rank summaries of point `point` in one write, so when this returns they are
    /// in the kernel and survive a crash of this process.
    pub fn append(&mut self, point: usize, key: &PointKey, ranks: &[RankSummary]) -> Result<()> {
        let prefix = csvio::point_fields(point, key);
        let mut lines = String::new();
        for r in ranks {
            let mut fields = prefix.clone();
            fields.extend([
                r.rank.to_string(),
                csvio::float(r.time_us_median),
                csvio::float(r.time_us_mean),
                csvio::float(r.time_us_max),
                r.wrong.to_string(),
                r.global_rank.to_string(),
                r.node.to_string(),
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

impl PointSink for RanksWriter {
    fn file(&self) -> (&'static str, &'static str) {
        (RANKS_FILE, RANKS_SCHEMA)
    }

    fn append(&mut self, p: &FinishedPoint<'_>) -> Result<()> {
        RanksWriter::append(self, p.index, &p.record.key, p.ranks)
    }
}

/// Reads ranks.csv back as (point index, rank summary) pairs in file order. Errors name the
/// file and line.
pub fn read_ranks(path: &Path) -> Result<Vec<(usize, RankSummary)>> {
    csvio::read_rows(path, WHAT, &RANKS_COLUMNS[..REQUIRED], parse_rank)
}

/// One row as a rank summary.
fn parse_rank(row: &Row) -> Result<(usize, RankSummary)> {
    let group_rank = row.parse("rank")?;
    let rank = RankSummary {
        rank: group_rank,
        global_rank: row.parse_or("global_rank", group_rank)?,
        node: row.parse_or("node", 0)?,
        time_us_median: row.float("time_us_median")?,
        time_us_mean: row.float("time_us_mean")?,
        time_us_max: row.float("time_us_max")?,
        wrong: row.parse("wrong")?,
    };
    Ok((row.parse("point")?, rank))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::report::summary_csv::tests::awkward_record;

    fn ranks() -> Vec<RankSummary> {
        (0..3)
            .map(|rank| RankSummary {
                rank,
                global_rank: rank + 4,
                node: rank / 2,
                time_us_median: 0.1 * rank as f64 + 1e-9,
                time_us_mean: 1.0 / 3.0,
                time_us_max: 1e6 + 0.5,
                wrong: rank as u64 * 7,
            })
            .collect()
    }

    #[test]
    fn round_trip_with_point_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RanksWriter::create(dir.path()).unwrap();
        let key = awkward_record().key;
        w.append(0, &key, &ranks()).unwrap();
        w.append(1, &key, &ranks()[..1]).unwrap();
        let back = read_ranks(w.path()).unwrap();
        let r = ranks();
        let want = vec![(0, r[0]), (0, r[1]), (0, r[2]), (1, r[0])];
        assert_eq!(back, want);
    }

    fn read_err(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RANKS_FILE);
        std::fs::write(&path, text).unwrap();
        let err = read_ranks(&path).unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("ranks.csv"), "{msg}");
        msg
    }

    #[test]
    fn malformed_files_name_file_and_line() {
        let header = RANKS_COLUMNS.join(",");
        let row = "0,allreduce,tree,f64,4,64,false,3,2.5,2.75,9,0,3,0";
        assert!(read_err("").contains("empty file"));
        let neg = row.replace(",3,2.5,", ",-3,2.5,");
        assert!(read_err(&format!("{header}\n{neg}\n")).contains("line 2: column rank"));
        let inf = row.replace(",9,", ",inf,");
        assert!(read_err(&format!("{header}\n{inf}\n")).contains("line 2: column time_us_max"));
        assert!(read_err("a,b\n1,2\n").contains("line 1: header lacks"));
    }

    #[test]
    fn files_from_before_global_rank_and_node_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RANKS_FILE);
        let old = format!(
            "{}\n0,allreduce,tree,f64,4,64,false,3,2.5,2.75,9,0\n",
            RANKS_COLUMNS[..REQUIRED].join(",")
        );
        std::fs::write(&path, old).unwrap();
        let (_, r) = read_ranks(&path).unwrap()[0];
        assert_eq!((r.rank, r.global_rank, r.node), (3, 3, 0));
    }
}
