//! Soak runs: the plan measured again and again, each pass a *cycle*, for a number of cycles
//! (`--cycles N`, nccl-tests' `-N N`), for a wall-clock time (`--duration 8h`), or until
//! Ctrl-C (`-N 0`). Every rank expands the same plan; only the lead knows the clock, so where
//! the end depends on it, the lead decides at every cycle's end and tells the other ranks
//! through its driver's own channel ([`Soak::lead_decides`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Beside, Point};

/// How many times the plan is measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Soak {
    /// Cycles at most; `None` is unbounded (until `duration_s`, or Ctrl-C). The default, no
    /// soak at all, is one cycle.
    #[serde(default = "one_cycle")]
    pub cycles: Option<u64>,
    /// Start no cycle after this many seconds from the first point's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
}

fn one_cycle() -> Option<u64> {
    Some(1)
}

/// Cycles a soak may run at most, so that a cycle index always fits the counters that carry
/// it (a point index of the host launcher is 32 bits).
pub const MAX_CYCLES: u64 = 1_000_000;

/// The longest `--duration` taken: a year.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

impl Default for Soak {
    fn default() -> Self {
        Soak::once()
    }
}

impl Soak {
    /// One cycle: a plain sweep.
    pub fn once() -> Soak {
        Soak {
            cycles: Some(1),
            duration_s: None,
        }
    }

    /// Whether the plan runs more than once (or may).
    pub fn is_soak(&self) -> bool {
        !self.is_plain()
    }

    /// One cycle, no duration: what every sweep before soaks was.
    pub fn is_plain(&self) -> bool {
        *self == Soak::once()
    }

    /// Whether only the lead can tell whether another cycle starts: the end depends on its
    /// clock (`--duration`) or on Ctrl-C (`-N 0`). Otherwise every rank counts the cycles.
    pub fn lead_decides(&self) -> bool {
        self.duration_s.is_some() || self.cycles.is_none()
    }

    /// Whether a cycle may follow `done` finished cycles, `elapsed` after the first point
    /// began (the lead's decision; with neither bound the answer is always yes and the run
    /// ends on Ctrl-C).
    pub fn another(&self, done: u64, elapsed: Duration) -> bool {
        let by_count = self
            .cycles
            .map_or(done < MAX_CYCLES, |n| done < n.min(MAX_CYCLES));
        let by_time = self.duration_s.map_or(true, |d| elapsed.as_secs_f64() < d);
        by_count && by_time
    }

    /// [`Soak::another`] for a driver that counts points in `bits`-bit words: also no cycle
    /// whose points' indices would not fit (with one value to spare for a stop word).
    pub fn another_counted(
        &self,
        done: u64,
        elapsed: Duration,
        per_cycle: usize,
        bits: u32,
    ) -> bool {
        let most = (1u64 << bits.min(63)) - 2;
        let next_end = (done + 1).saturating_mul(per_cycle as u64);
        self.another(done, elapsed) && next_end <= most
    }

    /// A short description for the console: "cycles: 3", "for 8h", "until Ctrl-C".
    pub fn describe(&self) -> String {
        let time = self
            .duration_s
            .map(|d| humantime::format_duration(Duration::from_secs_f64(d.max(0.0))).to_string());
        match (self.cycles, time) {
            (Some(n), None) => format!("{n} cycles"),
            (Some(n), Some(t)) => format!("up to {n} cycles within {t}"),
            (None, Some(t)) => format!("cycles for {t}"),
            (None, None) => "cycles until Ctrl-C".into(),
        }
    }
}

impl Point {
    /// This point as measured in cycle `cycle` of a soak.
    pub fn in_cycle(&self, cycle: u64) -> Point {
        let mut p = self.clone();
        p.cycle = cycle;
        // The calls at once of a `--concurrent` point are in the cycle with it.
        if let Some(beside) = p.split.as_mut().and_then(|s| s.beside.as_mut()) {
            let mut each = Beside::clone(beside);
            each.calls.iter_mut().for_each(|c| c.cycle = cycle);
            *beside = std::sync::Arc::new(each);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_sweep_is_one_cycle_decided_by_every_rank() {
        let s = Soak::default();
        assert_eq!(s, Soak::once());
        assert!(!s.is_soak() && !s.lead_decides());
        assert!(s.another(0, Duration::ZERO));
        assert!(!s.another(1, Duration::ZERO));
    }

    #[test]
    fn counted_cycles_end_at_their_count_whatever_the_clock() {
        let s = Soak {
            cycles: Some(3),
            duration_s: None,
        };
        assert!(s.is_soak() && !s.lead_decides());
        let long = Duration::from_secs(1 << 30);
        assert!(s.another(2, long));
        assert!(!s.another(3, Duration::ZERO));
    }

    #[test]
    fn a_duration_ends_at_the_first_cycle_boundary_past_it() {
        let s = Soak {
            cycles: None,
            duration_s: Some(10.0),
        };
        assert!(s.lead_decides());
        assert!(s.another(500, Duration::from_secs_f64(9.999)));
        assert!(!s.another(1, Duration::from_secs(10)));
        let both = Soak {
            cycles: Some(2),
            duration_s: Some(10.0),
        };
        assert!(!both.another(2, Duration::from_secs(1)));
    }

    #[test]
    fn a_cycle_whose_point_indices_would_overflow_does_not_start() {
        let s = Soak {
            cycles: None,
            duration_s: None,
        };
        // 8-bit counters with one stop word: points 0..=253 fit.
        assert!(s.another_counted(0, Duration::ZERO, 127, 8));
        assert!(s.another_counted(1, Duration::ZERO, 127, 8));
        assert!(!s.another_counted(2, Duration::ZERO, 127, 8));
    }

    #[test]
    fn unbounded_cycles_still_stop_at_the_cap() {
        let s = Soak {
            cycles: None,
            duration_s: None,
        };
        assert!(s.lead_decides());
        assert!(s.another(MAX_CYCLES - 1, Duration::ZERO));
        assert!(!s.another(MAX_CYCLES, Duration::ZERO));
    }

    #[test]
    fn the_default_reads_back_from_options_written_before_soaks() {
        let s: Soak = serde_json::from_str("{}").unwrap();
        assert_eq!(s, Soak::once());
        let unbounded: Soak = serde_json::from_str(r#"{"cycles":null}"#).unwrap();
        assert_eq!(unbounded.cycles, None);
    }
}
