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
        let parts = members_samples(all);
        let mut key = p.key(BackendKind::Nccl.name());
        key.proto = Some(stage.proto);
        key.comm = stage.setup;
        let (mut rec, samples, per_rank) =
            summarize_first_ranks(key, p, &self.topo, &parts.times, &parts.wrong)?;
        rec.nccl_estimate_us = parts.estimates.iter().flatten().copied().reduce(f64::max);
        rec.loop_time_us = loop_time_of(&parts.loops, p.timing.rank);
        if p.compute.is_some() {
            rec.compute_slowdown = median_compute(&parts.compute_slowdowns);
        }
        rec.nccl_call = Some(call.to_string());
        if let Some(ran) = ran {
            rec.nccl_algo = Some(ran.algo_name().to_string());
            rec.nccl_proto = Some(ran.proto_name().to_string());
            if let Some(note) = tuning::ignored(stage.algo, stage.proto, &ran) {
                self.lead.console.note(&format!("{}: {note}", p.describe()));
            }
        }
        // Settled as the host's rows are: a point beside a compute load gets its slowdown
        // against the same point alone, written just before it.
        self.lead.point_rows(vec![(rec, samples, per_rank)])
    }
}

/// Words of a member's part before its times.
const HEAD_WORDS: usize = 6;

/// A member's part of a point as gathered: `[1, wrong, estimate bits, loop bits, compute rate
/// beside bits, compute rate alone bits, time bits...]`, the estimate and rates NaN where there
/// are none. Non-members send `[0]`.
pub fn encode_part(m: &Measured) -> Vec<u64> {
    let estimate = m.estimate_us.unwrap_or(f64::NAN);
    let (beside, alone) = m.compute.unwrap_or((f64::NAN, f64::NAN));
    let mut words = vec![1, m.wrong, estimate.to_bits(), m.loop_us.to_bits()];
    words.extend([beside.to_bits(), alone.to_bits()]);
    words.extend(m.times.iter().map(|t| t.to_bits()));
    words
}

/// Every member's part, in rank order: per-iteration times, wrong counts, estimates, loop
/// times and compute slowdowns (the load's rate alone over its rate beside the calls).
pub fn members_samples(all: &[Vec<u8>]) -> MembersParts {
    let words = |b: &Vec<u8>| -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect()
    };
    let mut out = MembersParts::default();
    for w in all
        .iter()
        .map(words)
        .filter(|w| w.len() >= HEAD_WORDS && w[0] == 1)
    {
        let float = |i: usize| f64::from_bits(w[i]);
        out.times
            .push(w[HEAD_WORDS..].iter().map(|&b| f64::from_bits(b)).collect());
        out.wrong.push(w[1]);
        out.estimates.push(Some(float(2)).filter(|x| !x.is_nan()));
        out.loops.push(float(3));
        let slowdown = float(5) / float(4);
        out.compute_slowdowns
            .push(Some(slowdown).filter(|x| x.is_finite() && *x > 0.0));
    }
    out
}

/// Every member's part of a point, rank order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MembersParts {
    pub times: Vec<Vec<f64>>,
    pub wrong: Vec<u64>,
    pub estimates: Vec<Option<f64>>,
    pub loops: Vec<f64>,
    /// `--with-compute`: the load's rate alone over its rate beside the calls.
    pub compute_slowdowns: Vec<Option<f64>>,
}

/// The median of the members' compute slowdowns; `None` where none has one.
fn median_compute(slowdowns: &[Option<f64>]) -> Option<f64> {
    let mut known: Vec<f64> = slowdowns.iter().flatten().copied().collect();
    (!known.is_empty()).then(|| crate::stats::median_of(&mut known))
}

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
            compute: Some((50.0, 100.0)),
        };
        let b = Measured {
            times: vec![4.0, 1.0],
            wrong: 7,
            estimate_us: None,
            loop_us: 4.0,
            ran: None,
            compute: None,
        };
        let all = vec![
            bytes(&encode_part(&a)),
            bytes(&[0]),
            bytes(&encode_part(&b)),
        ];
        let parts = members_samples(&all);
        assert_eq!(parts.loops, vec![2.0, 4.0]);
        assert_eq!(loop_time_of(&parts.loops, LoopRank::Avg), Some(3.0));
        assert_eq!(parts.times, vec![vec![2.5, 3.0], vec![4.0, 1.0]]);
        assert_eq!(parts.wrong, vec![0, 7]);
        assert_eq!(parts.estimates, vec![Some(7.5), None]);
        // Rank 0's load ran at half its rate alone beside the calls; rank 2 had none.
        assert_eq!(parts.compute_slowdowns, vec![Some(2.0), None]);
        assert_eq!(median_compute(&parts.compute_slowdowns), Some(2.0));
        assert_eq!(median_compute(&[None, None]), None);
    }

    #[test]
    fn a_point_beside_gemms_is_written_with_both_slowdowns_against_the_point_alone() {
        use crate::model::call::BackendKind;
        let argv = [
            "collbench",
            "sweep",
            "--backend",
            "nccl",
            "--ranks",
            "1",
            "--op",
        ];
        let more = [
            "allreduce",
            "-b",
            "1M",
            "-e",
            "1M",
            "-n",
            "3",
            "--no-progress",
        ];
        let args = argv.iter().chain(&more).chain(&["--with-compute", "gemm"]);
        let req = (crate::sweep::args::parse_sweep_line(args).unwrap())
            .into_request(vec![])
            .unwrap();
        let plan = req.opts.plan_for(BackendKind::Nccl);
        let stages = tuning::stages(&plan.points, &req.protos, &req.comm.setups());
        let stage = &stages[0];
        let points = &stage.groups[0].1;
        assert_eq!(points.len(), 2, "alone, then beside the GEMMs");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let meta = crate::meta::Meta::new(vec![], "nccl", "nccl", 1, 1, serde_json::json!({}));
        let lead = Lead::open(dir.clone(), &meta, &plan, &req.view).unwrap();
        let topo = Topology::single("gpu-node", 1);
        let mut writer = PointWriter { lead, topo };
        let part = |us: f64, compute| {
            let m = Measured {
                times: vec![us; 3],
                wrong: 0,
                estimate_us: None,
                loop_us: us,
                ran: None,
                compute,
            };
            vec![bytes(&encode_part(&m))]
        };
        let call = "ncclAllReduce";
        writer
            .write(&points[0], stage, &part(10.0, None), call, None)
            .unwrap();
        // Beside the GEMMs: the call 1.5x its time alone, the GEMMs at half their rate alone.
        let beside = part(15.0, Some((50.0, 100.0)));
        writer
            .write(&points[1], stage, &beside, call, None)
            .unwrap();
        let rows = crate::report::summary_csv::read_summary(&dir.join("summary.csv")).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].slowdown, rows[0].compute_slowdown), (None, None));
        assert_eq!(rows[1].key.concurrent.as_deref(), Some("compute gemm"));
        assert_eq!(
            (rows[1].slowdown, rows[1].compute_slowdown),
            (Some(1.5), Some(2.0))
        );
    }
}
