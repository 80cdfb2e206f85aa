//! The rows a `--split` sweep writes, checked alike on every backend.

use collbench::model::record::PointRecord;

/// The rows of one size: every group alone, then every group at once.
pub fn check_size(rows: &[PointRecord], groups: &[&str], split: &str) {
    let n = groups.len();
    assert_eq!(rows.len(), 2 * n, "{rows:?}");
    let (alone, together) = rows.split_at(n);
    let aggregate: f64 = together.iter().map(|r| r.busbw_gbps).sum();
    for (i, g) in groups.iter().enumerate() {
        let (a, t) = (&alone[i], &together[i]);
        assert_eq!(a.key.group.as_deref(), Some(*g));
        assert_eq!(t.key.group.as_deref(), Some(*g));
        assert_eq!((a.key.concurrent.as_deref(), a.slowdown), (None, None));
        assert_eq!(t.key.concurrent.as_deref(), Some(split));
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
