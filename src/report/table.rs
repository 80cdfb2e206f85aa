//! The live table printed to stdout while a sweep runs, in the style of nccl-tests: one
//! right-aligned row per point under two `#` comment lines of titles and units.

use crate::model::record::PointRecord;

/// Title, unit and width of each column, in order.
const COLUMNS: [(&str, &str, usize); 15] = [
    ("size", "(B)", 12),
    ("count", "(elements)", 12),
    ("type", "", 6),
    ("redop", "", 6),
    ("root", "", 4),
    ("op", "", 14),
    ("algo", "", 18),
    ("world", "", 6),
    ("nodes", "", 5),
    ("place", "", 6),
    ("time", "(us)", 11),
    ("p95", "(us)", 11),
    ("algbw", "(GB/s)", 8),
    ("busbw", "(GB/s)", 8),
    ("wrong", "", 7),
];

/// Joins cells right-aligned to the column widths, after a leading `#` or space so that header
/// and rows line up.
fn line(lead: char, cells: &[String]) -> String {
    let mut out = String::from(lead);
    for (cell, (_, _, width)) in cells.iter().zip(COLUMNS) {
        out.push_str(&format!(" {cell:>width$}"));
    }
    out
}

/// The two comment lines above the rows: column titles, then units.
pub fn header() -> String {
    let titles: Vec<String> = COLUMNS.iter().map(|c| c.0.to_string()).collect();
    let units: Vec<String> = COLUMNS.iter().map(|c| c.1.to_string()).collect();
    // The last unit is blank; trim so the line carries no trailing spaces.
    let units = line('#', &units);
    format!("{}\n{}", line('#', &titles), units.trim_end())
}

/// One point as a table row: the median time and the bandwidths derived from it, like the
/// summary; `redop` is `none` for ops that do not reduce and `root` -1 for ops without a root,
/// as in nccl-tests.
pub fn row(rec: &PointRecord) -> String {
    let k = &rec.key;
    let redop = if k.op.reduces() {
        k.redop.name()
    } else {
        "none"
    };
    let cells = [
        k.bytes.to_string(),
        k.count.to_string(),
        k.dtype.to_string(),
        redop.to_string(),
        k.root.map_or("-1".into(), |r| r.to_string()),
        k.op.to_string(),
        k.algo.to_string(),
        k.world.to_string(),
        k.nodes.to_string(),
        if k.in_place { "in" } else { "out" }.to_string(),
        format!("{:.2}", rec.time_us_median),
        format!("{:.2}", rec.time_us_p95),
        format!("{:.2}", rec.algbw_gbps),
        format!("{:.2}", rec.busbw_gbps),
        rec.wrong.to_string(),
    ];
    line(' ', &cells)
}

/// A remark between rows, e.g. that a requested size was rounded down.
pub fn note(msg: &str) -> String {
    format!("# note: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Op;
    use crate::report::summary_csv::tests::awkward_record;

    #[test]
    fn header_and_row_line_up() {
        let head = header();
        let lines: Vec<&str> = head.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.starts_with('#')));
        let mut rec = awkward_record();
        rec.wrong = 0;
        let r = row(&rec);
        assert_eq!(lines[0].len(), r.len());
        assert!(lines[1].len() <= r.len() && !lines[1].ends_with(' '));
        // Each title ends where its values end.
        for title in ["size", "time", "busbw", "wrong"] {
            let end = lines[0].find(title).unwrap() + title.len();
            assert_ne!(r.as_bytes()[end - 1], b' ', "{title}\n{}\n{r}", lines[0]);
        }
    }

    #[test]
    fn row_contents() {
        let mut rec = awkward_record();
        let r = row(&rec);
        let cells: Vec<&str> = r.split_whitespace().collect();
        let want = [
            "8",
            "3",
            "bf16",
            "max",
            "-1",
            "reducescatter",
            "ring",
            "3",
            "1",
            "in",
            "0.29",
        ];
        assert_eq!(&cells[..11], want);
        assert_eq!(cells[11], "0.33");
        rec.key.op = Op::AllGather;
        rec.key.in_place = false;
        let r = row(&rec);
        assert!(r.contains(" none ") && r.contains(" out "), "{r}");
        rec.key.op = Op::Gather;
        rec.key.root = Some(3);
        let cells: Vec<String> = row(&rec).split_whitespace().map(String::from).collect();
        assert_eq!((cells[3].as_str(), cells[4].as_str()), ("none", "3"));
    }

    #[test]
    fn note_is_a_comment() {
        assert_eq!(note("size 10 rounded to 8"), "# note: size 10 rounded to 8");
    }
}
