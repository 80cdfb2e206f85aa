//! A soak's points over its cycles (summary.csv's `cycle` column): per point, its typical time
//! in each cycle, the drift from the first quarter of the cycles to the last
//! ([`crate::stats::drift`]), the cycles that were **spikes** (typical time over [`SPIKE`] times
//! the point's median over the cycles), the cycles that held a **stall** (slowest iteration
//! over [`STALL`] times that median), and the cycles with wrong elements. Pure.

use std::collections::HashMap;

use crate::model::record::{PointKey, PointRecord};

/// A cycle whose typical time exceeds this multiple of the point's median over cycles.
pub const SPIKE: f64 = 2.0;
/// A cycle whose slowest iteration exceeds this multiple of the point's median over cycles.
pub const STALL: f64 = 10.0;

/// One point of the plan over every cycle that measured it.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakPoint {
    /// Its first cycle's row (the key, for labels).
    pub first: PointRecord,
    /// Cycles that measured it.
    pub cycles: usize,
    /// Median over the cycles of its typical time (µs).
    pub median_us: f64,
    /// Last quarter over first quarter, minus one; `None` below two cycles.
    pub drift: Option<f64>,
    pub spikes: usize,
    pub stalls: usize,
    /// Cycles in which some element was wrong.
    pub wrong_cycles: usize,
    /// The slowest cycle and its typical time over the median.
    pub worst: (u64, f64),
}

/// The soak of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Soak {
    /// Cycles measured (the last may be cut short by Ctrl-C).
    pub cycles: u64,
    /// Per point, in the order of the first cycle.
    pub points: Vec<SoakPoint>,
    /// The first and last row's `ended_utc`, where written.
    pub span: Option<(String, String)>,
}

/// The soak of `rows` (a run's summary.csv rows in file order); `None` where every row is of
/// one cycle.
pub fn analyze(rows: &[PointRecord]) -> Option<Soak> {
    let cycles = rows.iter().map(|r| r.cycle).max()?.checked_add(1)?;
    if cycles < 2 {
        return None;
    }
    let mut index: HashMap<&PointKey, usize> = HashMap::new();
    let mut series: Vec<Vec<&PointRecord>> = Vec::new();
    for r in rows {
        let at = *index.entry(&r.key).or_insert(series.len());
        if at == series.len() {
            series.push(Vec::new());
        }
        series[at].push(r);
    }
    let times = |r: &PointRecord| r.ended_utc.clone();
    let span = rows
        .first()
        .and_then(times)
        .zip(rows.last().and_then(times));
    Some(Soak {
        cycles,
        points: series.iter().map(|s| point(s)).collect(),
        span,
    })
}

fn point(rows: &[&PointRecord]) -> SoakPoint {
    let typical: Vec<f64> = rows.iter().map(|r| r.time_us_typical()).collect();
    let median = crate::stats::median_of(&mut typical.clone());
    let over = |x: f64, k: f64| x.is_finite() && median > 0.0 && x > k * median;
    let worst = rows
        .iter()
        .zip(&typical)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or((0, f64::NAN), |(r, t)| (r.cycle, t / median));
    SoakPoint {
        first: rows[0].clone(),
        cycles: rows.len(),
        median_us: median,
        drift: crate::stats::drift(&typical),
        spikes: typical.iter().filter(|&&t| over(t, SPIKE)).count(),
        stalls: rows.iter().filter(|r| over(r.time_us_max, STALL)).count(),
        wrong_cycles: rows.iter().filter(|r| r.wrong > 0).count(),
        worst,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Op;

    fn row(bytes: usize, cycle: u64, time_us: f64) -> PointRecord {
        let mut r = PointRecord::example(Op::AllReduce, bytes, 2).with_time_us(time_us);
        r.cycle = cycle;
        r.ended_utc = Some(format!("2026-11-28T05:30:{:02}Z", cycle));
        r
    }

    #[test]
    fn one_cycle_is_no_soak() {
        assert_eq!(analyze(&[row(8, 0, 1.0), row(16, 0, 1.0)]), None);
        assert_eq!(analyze(&[]), None);
    }

    #[test]
    fn each_point_gets_its_drift_spikes_stalls_and_wrong_cycles() {
        let mut rows = Vec::new();
        for c in 0..8 {
            // 8 B: 10 µs, then 12 µs in the last two cycles; cycle 3 a spike of 25.
            let t = match c {
                3 => 25.0,
                6 | 7 => 12.0,
                _ => 10.0,
            };
            rows.push(row(8, c, t));
            // 16 B: steady, but cycle 5 holds one iteration of 500 µs and a wrong element.
            let mut r = row(16, c, 20.0);
            if c == 5 {
                r.time_us_max = 500.0;
                r.wrong = 3;
            }
            rows.push(r);
        }
        let s = analyze(&rows).unwrap();
        assert_eq!(s.cycles, 8);
        let span = ("2026-11-28T05:30:00Z".into(), "2026-11-28T05:30:07Z".into());
        assert_eq!(s.span, Some(span));
        let (a, b) = (&s.points[0], &s.points[1]);
        assert_eq!((a.first.key.bytes, a.cycles, a.median_us), (8, 8, 10.0));
        assert_eq!(a.drift, Some(12.0 / 10.0 - 1.0));
        assert_eq!((a.spikes, a.stalls, a.wrong_cycles), (1, 0, 0));
        assert_eq!(a.worst, (3, 2.5));
        assert_eq!(
            (b.drift, b.spikes, b.stalls, b.wrong_cycles),
            (Some(0.0), 0, 1, 1)
        );
    }

    #[test]
    fn a_cycle_cut_short_leaves_its_points_fewer_cycles() {
        let rows = [row(8, 0, 1.0), row(16, 0, 1.0), row(8, 1, 1.0)];
        let s = analyze(&rows).unwrap();
        assert_eq!(
            (s.cycles, s.points[0].cycles, s.points[1].cycles),
            (2, 2, 1)
        );
        assert_eq!(s.points[1].drift, None);
    }
}
