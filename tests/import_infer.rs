//! `collbench import` of an nccl-tests table that does not name its test: the collective read
//! from its bus factor and columns (src/import/infer.rs), and `--test` without `_perf`.

mod common;

use std::fs;

use common::imports::{data, import, ok, path};
use common::meta;

/// A pasted table without the lines that name its test: the collective is read from its bus
/// factor and columns, and meta.json says so; `--test all_reduce` (no `_perf`) names it too.
#[test]
fn an_unnamed_table_is_read_from_its_columns_and_a_bare_test_name_is_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let log = data("nccl-tests/all_reduce_v2.17.8_10node_80rank_h100.log");
    let text = fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = (text.lines())
        .filter(|l| !l.contains("Collective test") && !l.contains("_perf"))
        .collect();
    let pasted = tmp.path().join("pasted.txt");
    fs::write(&pasted, kept.join("\n") + "\n").unwrap();
    let out = tmp.path().join("inferred");
    let r = ok(import(&["nccl-tests", path(&pasted), "--out", path(&out)]));
    assert!(r.stdout.contains("allreduce world 80"), "{}", r.stdout);
    let info = meta(&out).import.unwrap();
    assert!(
        info.notes[0].contains("allreduce read from its columns (busbw/algbw 1.975 at 80 ranks"),
        "{:?}",
        info.notes
    );
    let named = tmp.path().join("named");
    let r = ok(import(&[
        "nccl-tests",
        path(&pasted),
        "--test",
        "all_reduce",
        "--out",
        path(&named),
    ]));
    assert!(r.stdout.contains("allreduce world 80"), "{}", r.stdout);
    assert!(meta(&named)
        .import
        .unwrap()
        .notes
        .iter()
        .all(|n| !n.contains("read from its columns")));
}
