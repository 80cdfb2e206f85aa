//! Rank 0's side of an NCCL sweep: every member's part of a point as gathered through the
//! store (per-iteration times, wrong count, NCCL's estimate), the slowest-rank rule applied
//! ([`summarize`]) and the point written before the ranks go on.

use crate::backend::nccl::measure::Measured;
use crate::backend::nccl::profiler::Ran;
use crate::backend::nccl::tuning::{self, Stage};
use crate::error::Result;
use crate::model::call::BackendKind;
use crate::model::plan::Point;
use crate::model::topology::Topology;
use crate::stats::loop_time_of;
use crate::sweep::lead::Lead;
use crate::sweep::summarize::summarize_first_ranks;

/// Rank 0's side: the run's lead and where each rank runs.
pub struct PointWriter {
    pub lead: Lead,
    pub topo: Topology,
}

impl PointWriter {
    /// Applies the slowest-rank rule to the members' parts of `p` and writes the point.
    /// `call` is what ran the point ([`crate::backend::nccl::loader::Nccl::call_name`]).
    /// `ran` is what NCCL told rank 0's profiler it ran; a forced algorithm or protocol it did
    /// not run is said on the console.
    pub fn write(
        &mut self,
        p: &Point,
        stage: &Stage,
        all: &[Vec<u8>],
        call: &str,
        ran: Option<Ran>,
    ) -> Result<()> {
        let (rank_times, wrongs, estimates, loops) = members_samples(all);
        let mut key = p.key(BackendKind::Nccl.name());
        key.proto = Some(stage.proto);
        key.comm = stage.setup;
        let (mut rec, samples, per_rank) =
            summarize_first_ranks(key, p, &self.topo, &rank_times, &wrongs)?;
        rec.nccl_estimate_us = estimates.into_iter().flatten().reduce(f64::max);
        rec.loop_time_us = loop_time_of(&loops, p.timing.rank);
        rec.nccl_call = Some(call.to_string());
        if let Some(ran) = ran {
            rec.nccl_algo = Some(ran.algo_name().to_string());
            rec.nccl_proto = Some(ran.proto_name().to_string());
            if let Some(note) = tuning::ignored(stage.algo, stage.proto, &ran) {
                self.lead.console.note(&format!("{}: {note}", p.describe()));
            }
        }
        self.lead.point(&rec, &samples, &per_rank)
    }
}

/// A member's part of a point as gathered: `[1, wrong, estimate bits, loop bits, time
/// bits...]`, the estimate NaN where there is none. Non-members send `[0]`.
pub fn encode_part(m: &Measured) -> Vec<u64> {
    let estimate = m.estimate_us.unwrap_or(f64::NAN);
    let mut words = vec![1, m.wrong, estimate.to_bits(), m.loop_us.to_bits()];
    words.extend(m.times.iter().map(|t| t.to_bits()));
    words
}

/// Every member's part, in rank order: per-iteration times, wrong counts, estimates and loop
/// times.
pub fn members_samples(all: &[Vec<u8>]) -> MembersParts {
    let words = |b: &Vec<u8>| -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect()
    };
    let mut out = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in all.iter().map(words).filter(|w| w.len() >= 4 && w[0] == 1) {
        out.0
            .push(w[4..].iter().map(|&b| f64::from_bits(b)).collect());
        out.1.push(w[1]);
        out.2
            .push(Some(f64::from_bits(w[2])).filter(|x| !x.is_nan()));
        out.3.push(f64::from_bits(w[3]));
    }
    out
}

/// Per-iteration times, wrong counts, estimates and loop times of every member, rank order.
pub type MembersParts = (Vec<Vec<f64>>, Vec<u64>, Vec<Option<f64>>, Vec<f64>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LoopRank;

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn gathered_parts_keep_members_in_rank_order() {
        let a = Measured {
            times: vec![2.5, 3.0],
            wrong: 0,
            estimate_us: Some(7.5),
            loop_us: 2.0,
            ran: None,
        };
        let b = Measured {
            times: vec![4.0, 1.0],
            wrong: 7,
            estimate_us: None,
            loop_us: 4.0,
            ran: None,
        };
        let all = vec![
            bytes(&encode_part(&a)),
            bytes(&[0]),
            bytes(&encode_part(&b)),
        ];
        let (times, wrong, est, loops) = members_samples(&all);
        assert_eq!(loops, vec![2.0, 4.0]);
        assert_eq!(loop_time_of(&loops, LoopRank::Avg), Some(3.0));
        assert_eq!(times, vec![vec![2.5, 3.0], vec![4.0, 1.0]]);
        assert_eq!(wrong, vec![0, 7]);
        assert_eq!(est, vec![Some(7.5), None]);
    }
}
