//! An imported nccl-tests log and a collbench sweep of the same `-b -e -f` at the log's world
//! key the same points: a real nccl-tests 2.17.8 log of 80 ranks (not a power of two, where
//! nccl-tests' 16-byte block rule and whole elements differ) against collbench's plan.

mod common;

use common::imports::{data, import, ok, path, sorted_dirs};
use common::summary;

use collbench::sweep::args::parse_sweep_line;

/// The sizes collbench plans for `op` in f64 at 80 ranks from `-b 32M -e 16G -f 2` (the log's
/// `minBytes 33554432`, factor 2, and the 16 GiB its reduced maxBytes reaches).
fn planned_sizes(op: &str) -> Vec<usize> {
    let argv = [
        "collbench",
        "sweep",
        "--op",
        op,
        "--dtype",
        "f64",
        "--ranks",
        "80",
        "-b",
        "32M",
        "-e",
        "16G",
        "-f",
        "2",
        "--in-place",
        "both",
    ];
    let req = parse_sweep_line(argv)
        .unwrap()
        .into_request(vec![])
        .unwrap();
    let plan = req.opts.plan();
    let mut sizes: Vec<usize> = plan.points.iter().map(|p| p.call.shape.bytes).collect();
    sizes.sort_unstable();
    sizes
}

#[test]
fn imported_80_rank_sizes_are_the_sizes_collbench_sweeps() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("h100");
    let log = data("nccl-tests/all_gather_reduce_scatter_v2.17.8_10node_80rank_h100.log");
    ok(import(&["nccl-tests", &log, "--out", path(&out)]));
    let dirs = sorted_dirs(&out);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for dir in dirs {
        let points = summary(&dir);
        let op = points[0].key.op.to_string();
        let mut imported: Vec<usize> = points.iter().map(|r| r.key.bytes).collect();
        imported.sort_unstable();
        assert_eq!(planned_sizes(&op), imported, "{op}");
        // 64 MiB: 104857.6 doubles per rank, 104856 kept (whole elements alone: 104857).
        assert!(imported.contains(&67_107_840), "{op}: {imported:?}");
        assert!(points.iter().all(|r| r.key.world == 80));
    }
}
