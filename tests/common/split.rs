//! The rows a `--split` or `--concurrent` sweep writes, checked alike on every backend.

use std::path::Path;

use collbench::model::record::PointRecord;

/// The rows of one size: every group alone, then every group at once.
pub fn check_size(rows: &[PointRecord], groups: &[&str], split: &str) {
    let n = groups.len();
    assert_eq!(rows.len(), 2 * n, "{rows:?}");
    let (alone, together) = rows.split_at(n);
    for (i, g) in groups.iter().enumerate() {
        assert_eq!(alone[i].key.group.as_deref(), Some(*g));
    }
    check_at_once(alone, together, split);
}

/// The rows of one `--concurrent` point set on `backend` at world 2: `expected` (op, group)
/// each alone, then the same at once under `label`.
pub fn check_point_set(
    backend: &str,
    rows: &[PointRecord],
    expected: &[(&str, &str)],
    label: &str,
) {
    let n = expected.len();
    assert_eq!(rows.len(), 2 * n, "{rows:?}");
    for (r, (op, group)) in rows.iter().zip(expected.iter().cycle()) {
        assert_eq!(
            (r.key.op.name(), r.key.group.as_deref()),
            (*op, Some(*group))
        );
        assert_eq!((r.key.backend.as_str(), r.key.world), (backend, 2), "{r:?}");
    }
    check_at_once(&rows[..n], &rows[n..], label);
}

/// The rows of `allreduce@/2,allgather@%2` at 4 ranks over 2 dtypes, both placements and 2
/// sizes on `backend`: each set of one dtype, placement and size its 4 groups alone, then at
/// once, exact, with slowdowns and aggregates from the rows themselves.
pub fn check_pairs_beside_every_other(backend: &str, points: &[PointRecord]) {
    assert_eq!(points.len(), 2 * 2 * 2 * 8, "{points:?}");
    let expected = [
        ("allreduce", "0-1"),
        ("allreduce", "2-3"),
        ("allgather", "0 2"),
        ("allgather", "1 3"),
    ];
    for rows in points.chunks(8) {
        check_point_set(backend, rows, &expected, "allreduce@/2 + allgather@%2 of 4");
        let first = &rows[0].key;
        assert!(rows.iter().all(|r| r.key.dtype == first.dtype
            && r.key.in_place == first.in_place
            && r.key.bytes == first.bytes));
    }
    assert!(points.iter().any(|p| p.key.in_place) && points.iter().any(|p| !p.key.in_place));
}

/// Rows `together[i]` ran at once under `label` and `alone[i]` is the same call (op, group)
/// alone: exact, each at-once row's slowdown its median over the alone row's, and its
/// aggregate the busbw of every row at once summed.
pub fn check_at_once(alone: &[PointRecord], together: &[PointRecord], label: &str) {
    assert_eq!(alone.len(), together.len(), "{alone:?} {together:?}");
    let aggregate: f64 = together.iter().map(|r| r.busbw_gbps).sum();
    for (a, t) in alone.iter().zip(together) {
        assert_eq!((&a.key.op, &a.key.group), (&t.key.op, &t.key.group));
        assert_eq!((a.key.concurrent.as_deref(), a.slowdown), (None, None));
        assert_eq!(t.key.concurrent.as_deref(), Some(label));
        assert_eq!((a.wrong, t.wrong), (0, 0), "{a:?} {t:?}");
        let slowdown = t.time_us_median / a.time_us_median;
        let got = t.slowdown.unwrap();
        assert!(
            (got - slowdown).abs() <= 1e-12 * slowdown,
            "{got} vs {slowdown}"
        );
        let all = t.aggregate_busbw_gbps.unwrap();
        assert!(
            (all - aggregate).abs() <= 1e-12 * aggregate,
            "{all} vs {aggregate}"
        );
    }
}

/// The global ranks ranks.csv lists for point `k` (summary.csv's row `k`, from 0).
pub fn global_ranks(out: &Path, k: usize) -> Vec<String> {
    let ranks = super::csv_rows(&out.join("ranks.csv"));
    (ranks.iter().filter(|r| r["point"] == k.to_string()))
        .map(|r| r["global_rank"].clone())
        .collect()
}
