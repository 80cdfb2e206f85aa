//! Rank 0's side of an NCCL sweep: every member's part of a point as gathered through the
//! store (per-iteration times, wrong count, NCCL's estimate), the slowest-rank rule applied
//! ([`summarize`]) and the point written before the ranks go on.

use crate::backend::nccl::measure::Measured;
use crate::backend::nccl::profiler::Ran;
use crate::backend::nccl::tuning::{self, Stage};
use crate::error::{Error, Result};
use crate::model::call::BackendKind;
use crate::model::plan::Point;
use crate::model::record::PointKey;
use crate::model::topology::Topology;
use crate::stats::loop_time_of;
use crate::sweep::lead::Lead;
use crate::sweep::summarize::{summarize_members, Summarized};

/// Rank 0's side: the run's lead and where each rank runs.
pub struct PointWriter {
    pub lead: Lead,
    pub topo: Topology,
}

impl PointWriter {
    /// Applies the slowest-rank rule to the members' parts of `p` (every rank's, in rank
    /// order, in `all`) and writes the point: one row, or with `--split` one per running group.
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
        if let Some(note) = ran.and_then(|r| tuning::ignored(stage.algo, stage.proto, &r)) {
            self.lead.console.note(&format!("{}: {note}", p.describe()));
        }
        let rows = (p.rows(BackendKind::Nccl.name()).into_iter())
            .map(|(_, members, key)| {
                let mut row = self.row_of(p, (all, &members), key, stage)?;
                row.0.nccl_call = Some(call.to_string());
                if let Some(ran) = ran {
                    row.0.nccl_algo = Some(ran.algo_name().to_string());
                    row.0.nccl_proto = Some(ran.proto_name().to_string());
                }
                Ok(row)
            })
            .collect::<Result<Vec<_>>>()?;
        // Settled as the host's rows are: a point beside a compute load or other groups gets
        // its slowdown against the same point alone, written just before it.
        self.lead.point_rows(rows)
    }

    /// The row of global ranks `members` of `p`.
    fn row_of(
        &self,
        p: &Point,
        (all, members): (&[Vec<u8>], &[usize]),
        mut key: PointKey,
        stage: &Stage,
    ) -> Result<Summarized> {
        let parts = members_samples(members.iter().filter_map(|&r| all.get(r)));
        if parts.times.len() != members.len() {
            return Err(Error::Rank(format!(
                "a member of {} sent no samples (its communicator is missing)",
                p.describe()
            )));
        }
        key.proto = Some(stage.proto);
        key.comm = stage.setup;
        let mut row = summarize_members(key, p, (&self.topo, members), &parts.times, &parts.wrong)?;
        let rec = &mut row.0;
        rec.nccl_estimate_us = parts.estimates.iter().flatten().copied().reduce(f64::max);
        rec.loop_time_us = loop_time_of(&parts.loops, p.timing.rank);
        if p.compute.is_some() {
            rec.compute_slowdown = median_compute(&parts.compute_slowdowns);
        }
        Ok(row)
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
pub fn members_samples<'a>(all: impl IntoIterator<Item = &'a Vec<u8>>) -> MembersParts {
    let words = |b: &Vec<u8>| -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect()
    };
    let mut out = MembersParts::default();
    for w in all
        .into_iter()
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

    /// Rank 0's writer of a one-stage NCCL run of `ranks` ranks with `more` flags, its points
    /// and where it writes.
    fn writer(ranks: &str, more: &[&str]) -> (PointWriter, Stage, tempfile::TempDir) {
        use crate::model::call::BackendKind;
        let argv = [
            "collbench",
            "sweep",
            "--backend",
            "nccl",
            "--ranks",
            ranks,
            "--op",
        ];
        let plain = [
            "allreduce",
            "-b",
            "1M",
            "-e",
            "1M",
            "-n",
            "3",
            "--no-progress",
        ];
        let args = argv.iter().chain(&plain).chain(more);
        let req = (crate::sweep::args::parse_sweep_line(args).unwrap())
            .into_request(vec![])
            .unwrap();
        let plan = req.opts.plan_for(BackendKind::Nccl);
        let mut stages = tuning::stages(&plan.points, &req.protos, &req.comm.setups());
        let tmp = tempfile::tempdir().unwrap();
        let n = req.opts.ranks;
        let meta = crate::meta::Meta::new(vec![], "nccl", "nccl", n, 1, serde_json::json!({}));
        let lead = Lead::open(tmp.path().join("run"), &meta, &plan, &req.view).unwrap();
        let topo = Topology::single("gpu-node", n);
        (PointWriter { lead, topo }, stages.remove(0), tmp)
    }

    /// A member's gathered part: three iterations of `us`, with a compute load's rates.
    fn part(us: f64, compute: Option<(f64, f64)>) -> Vec<u8> {
        let m = Measured {
            times: vec![us; 3],
            wrong: 0,
            estimate_us: None,
            loop_us: us,
            ran: None,
            compute,
        };
        bytes(&encode_part(&m))
    }

    fn rows_of(tmp: &tempfile::TempDir) -> Vec<crate::model::record::PointRecord> {
        let path = tmp.path().join("run/summary.csv");
        crate::report::summary_csv::read_summary(&path).unwrap()
    }

    #[test]
    fn a_point_beside_gemms_is_written_with_both_slowdowns_against_the_point_alone() {
        let (mut writer, stage, tmp) = writer("1", &["--with-compute", "gemm"]);
        let points = &stage.groups[0].1;
        assert_eq!(points.len(), 2, "alone, then beside the GEMMs");
        let call = "ncclAllReduce";
        let alone = [part(10.0, None)];
        writer
            .write(&points[0], &stage, &alone, call, None)
            .unwrap();
        // Beside the GEMMs: the call 1.5x its time alone, the GEMMs at half their rate alone.
        let beside = [part(15.0, Some((50.0, 100.0)))];
        writer
            .write(&points[1], &stage, &beside, call, None)
            .unwrap();
        let rows = rows_of(&tmp);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].slowdown, rows[0].compute_slowdown), (None, None));
        assert_eq!(rows[1].key.concurrent.as_deref(), Some("compute gemm"));
        assert_eq!(
            (rows[1].slowdown, rows[1].compute_slowdown),
            (Some(1.5), Some(2.0))
        );
    }

    #[test]
    fn split_groups_get_a_row_each_alone_and_at_once_with_their_global_ranks() {
        let (mut writer, stage, tmp) = writer("4", &["--split", "%2"]);
        // Group sized worlds: groups {0, 2} and {1, 3} alone, then both at once.
        assert_eq!(stage.groups[0].0, 2);
        let points = &stage.groups[0].1;
        assert_eq!(points.len(), 3);
        let idle = bytes(&[0]);
        let ran = |us: f64, on: &[usize]| -> Vec<Vec<u8>> {
            (0..4)
                .map(|r| match on.contains(&r) {
                    true => part(us + r as f64, None),
                    false => idle.clone(),
                })
                .collect()
        };
        let call = "ncclAllReduce";
        writer
            .write(&points[0], &stage, &ran(10.0, &[0, 2]), call, None)
            .unwrap();
        writer
            .write(&points[1], &stage, &ran(10.0, &[1, 3]), call, None)
            .unwrap();
        writer
            .write(&points[2], &stage, &ran(20.0, &[0, 1, 2, 3]), call, None)
            .unwrap();
        let rows = rows_of(&tmp);
        let groups: Vec<_> = (rows.iter())
            .map(|r| {
                (
                    r.key.group.clone().unwrap_or_default(),
                    r.key.concurrent.is_some(),
                )
            })
            .collect();
        let g = |t: &str, at_once| (t.to_string(), at_once);
        assert_eq!(
            groups,
            [
                g("0 2", false),
                g("1 3", false),
                g("0 2", true),
                g("1 3", true)
            ]
        );
        // The slowest member sets each iteration: 12 alone, 22 at once for {0, 2}.
        assert_eq!(rows[0].time_us_median, 12.0);
        assert_eq!(rows[0].slowest_rank, 2);
        assert_eq!(rows[2].slowdown, Some(22.0 / 12.0));
        assert_eq!(rows[3].slowdown, Some(23.0 / 13.0));
        let sum = rows[2].busbw_gbps + rows[3].busbw_gbps;
        assert_eq!(rows[2].aggregate_busbw_gbps, Some(sum));
        // A member whose part is missing is an error naming the point, not a short row.
        let lost = ran(10.0, &[0]);
        let e = writer
            .write(&points[0], &stage, &lost, call, None)
            .unwrap_err();
        assert!(e.to_string().contains("sent no samples"), "{e}");
    }
}
