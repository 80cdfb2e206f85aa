//! `collbench import` of an nccl-tests log run with `-N N`: nccl-tests prints its rows N times
//! over in one table (src/common.cu, `do { for each size ... } while (--repeat)`), and each
//! repeat of a point becomes its cycle, as in collbench's own soaks.

mod common;

use std::fs;

use common::imports::{data, import, ok, path};
use common::summary;

#[test]
fn an_nccl_tests_log_of_three_cycles_imports_as_a_soak() {
    let tmp = tempfile::tempdir().unwrap();
    let log = data("nccl-tests/all_reduce_v2.17.8_10node_80rank_h100.log");
    let text = fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let is_row = |l: &&str| l.trim_start().starts_with(|c: char| c.is_ascii_digit());
    let first = lines.iter().position(is_row).unwrap();
    let end = first + lines[first..].iter().take_while(|l| is_row(l)).count();
    let rows = &lines[first..end];
    let mut cycled: Vec<&str> = lines[..end].to_vec();
    cycled.extend(rows);
    cycled.extend(rows);
    cycled.extend(&lines[end..]);
    let three = tmp.path().join("three.log");
    fs::write(&three, cycled.join("\n") + "\n").unwrap();
    let out = tmp.path().join("run");
    ok(import(&["nccl-tests", path(&three), "--out", path(&out)]));
    let points = summary(&out);
    let per_cycle = 2 * rows.len();
    assert_eq!(points.len(), 3 * per_cycle);
    for (i, p) in points.iter().enumerate() {
        assert_eq!(p.cycle, (i / per_cycle) as u64, "point {i}");
        assert_eq!(p.key, points[i % per_cycle].key, "point {i}");
        assert_eq!(p.ended_utc, None);
    }
}
