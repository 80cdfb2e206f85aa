//! `collbench project --replay`: runs the projected step's collective schedule on the host
//! backend and sets the measured step time beside the projected one.
//!
//! The projection of one FSDP layout (tp 1, pp 1) on one node is turned into the actions one
//! rank takes ([`schedule`]): per microbatch, AllGathers of each unit's parameters, prefetched
//! one unit ahead behind the current unit's compute, the first exposed; ReduceScatters of the
//! gradients in backward, each behind the next unit's compute, the last exposed. Each rank
//! process ([`rank`]) replays them with compute stood in by wall-clock busy-waits of the
//! projected duration and the collectives run by the host backend's own ring algorithms on a
//! second thread (the communication stream). The launcher ([`launch`]) starts the ranks as a
//! sweep does and takes each step as first start to last end across ranks.
//!
//! The projection the replay is compared with uses `overlap_slowdown` 0: the stand-in for
//! compute is wall-clock time, which communication beside it cannot slow.

pub mod launch;
pub mod rank;
pub mod run;
pub mod schedule;

use serde::{Deserialize, Serialize};

use launch::MeasuredStep;
use schedule::{Action, Split};

/// Environment variable carrying the replay plan (JSON) to the rank processes.
pub const REPLAY_ENV: &str = "COLLBENCH_REPLAY_PLAN";

/// Schema id of replay.csv.
pub const REPLAY_SCHEMA: &str = "collbench.replay/v1";

/// Untimed steps before the timed ones (first-touch of buffers, thread start-up).
pub const WARMUP_STEPS: usize = 3;

/// What every rank of a replay runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayPlan {
    pub world: usize,
    pub steps: usize,
    pub warmup: usize,
    pub actions: Vec<Action>,
}

/// The largest world a replay runs on a machine of `cores` cores: two threads per rank, at
/// most twice as many ranks as cores.
pub fn max_world(cores: usize) -> usize {
    (2 * cores).max(2)
}

/// Measured steps against the projection.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub projected: Split,
    /// The timed steps, in order.
    pub steps: Vec<MeasuredStep>,
}

impl Comparison {
    /// The median of one measured quantity over the steps.
    fn median(&self, of: fn(&MeasuredStep) -> f64) -> f64 {
        let mut s: Vec<f64> = self.steps.iter().map(of).collect();
        s.sort_by(f64::total_cmp);
        crate::stats::median(&s)
    }

    pub fn median_s(&self) -> f64 {
        self.median(|m| m.step_s)
    }

    /// Median measured over projected step time.
    pub fn ratio(&self) -> f64 {
        self.median_s() / self.projected.step_s
    }

    /// The summary printed after the projection's table.
    pub fn summary(&self, world: usize) -> String {
        let ms = |s: f64| format!("{:.3} ms", s * 1e3);
        let p = &self.projected;
        let times = self.steps.iter().map(|m| m.step_s);
        let min = times.clone().fold(f64::INFINITY, f64::min);
        let max = times.fold(f64::NEG_INFINITY, f64::max);
        format!(
            "# replay: {} steps on {world} rank processes (host backend, shared memory)\n\
             #   projected  step {} = compute {} + exposed comm {} (overlapped comm {})\n\
             #   measured   median {}, min {}, max {}; inside collectives {} per rank\n\
             #   measured/projected {:.3}\n",
            self.steps.len(),
            ms(p.step_s),
            ms(p.compute_s),
            ms(p.exposed_comm_s),
            ms(p.overlapped_comm_s),
            ms(self.median_s()),
            ms(min),
            ms(max),
            ms(self.median(|m| m.comm_s)),
            self.ratio()
        )
    }
}

/// Columns of replay.csv, in order.
pub const CSV_COLUMNS: [&str; 13] = [
    "model",
    "hardware",
    "world",
    "step",
    "measured_s",
    "last_rank",
    "measured_comm_s",
    "projected_s",
    "projected_compute_s",
    "projected_exposed_comm_s",
    "projected_overlapped_comm_s",
    "ratio",
    "median_ratio",
];

/// replay.csv: one row per timed step.
pub fn csv(model: &str, hardware: &str, world: usize, c: &Comparison) -> String {
    let clean = |s: &str| s.replace([',', '\n', '\r'], " ");
    let p = &c.projected;
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for (k, m) in c.steps.iter().enumerate() {
        let row = [
            clean(model),
            clean(hardware),
            world.to_string(),
            k.to_string(),
            m.step_s.to_string(),
            m.last_rank.to_string(),
            m.comm_s.to_string(),
            p.step_s.to_string(),
            p.compute_s.to_string(),
            p.exposed_comm_s.to_string(),
            p.overlapped_comm_s.to_string(),
            (m.step_s / p.step_s).to_string(),
            c.ratio().to_string(),
        ];
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_csv_carry_the_median_ratio() {
        let c = Comparison {
            projected: Split {
                step_s: 0.010,
                compute_s: 0.008,
                exposed_comm_s: 0.002,
                overlapped_comm_s: 0.001,
            },
            steps: [(0.012, 0), (0.011, 1), (0.030, 1)]
                .iter()
                .map(|&(step_s, last_rank)| MeasuredStep {
                    step_s,
                    last_rank,
                    comm_s: 0.003,
                })
                .collect(),
        };
        assert!((c.ratio() - 1.2).abs() < 1e-12);
        let s = c.summary(2);
        assert!(
            s.contains("median 12.000 ms, min 11.000 ms, max 30.000 ms"),
            "{s}"
        );
        assert!(s.contains("inside collectives 3.000 ms per rank"), "{s}");
        assert!(s.contains("measured/projected 1.200"), "{s}");
        let text = csv("tiny", "host", 2, &c);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[1],
            "tiny,host,2,0,0.012,0,0.003,0.01,0.008,0.002,0.001,1.2,1.2"
        );
        assert_eq!(max_world(2), 4);
    }
}
