//! Figures of measured points against message size: bus bandwidth (log x) and latency
//! (log-log), one figure per op, one line per algorithm, protocol and world size (and per dtype,
//! placement, node count or run where those differ), points at the median time.

use std::collections::BTreeMap;

use super::figure::{Axis, Figure, Legend, Scale, Series, Style, TickFormat};
use crate::collective::{Algo, DType, Op, Proto, ReduceOp};
use crate::fit::schema::{algo_label, CurveKey};
use crate::model::comm_setup::CommSetup;
use crate::model::record::PointRecord;
use crate::report::run_reader::Run;

/// Everything that tells two lines of one op apart.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineKey {
    pub algo: Algo,
    /// The NCCL protocol; None for backends without protocols.
    pub proto: Option<Proto>,
    pub world: usize,
    pub nodes: usize,
    pub dtype: DType,
    /// The reduction (sum for the ops that do not reduce).
    pub redop: ReduceOp,
    pub in_place: bool,
    /// The root of a rooted op; None for the others.
    pub root: Option<usize>,
    /// The NCCL communicators' registration and CTA settings (the default elsewhere).
    pub comm: CommSetup,
    /// An alltoallv line's traffic; None for the other ops.
    pub traffic: Option<String>,
    /// A `--split` line's group and what ran beside it ([`PointKey::group_label`]).
    pub group: Option<String>,
    pub backend: String,
    /// Index of the run among the inputs.
    pub run: usize,
}

impl LineKey {
    /// The fit curve this line corresponds to.
    pub fn curve_key(&self, op: Op) -> CurveKey {
        CurveKey {
            backend: self.backend.clone(),
            op,
            algo: self.algo,
            dtype: self.dtype,
            world: self.world,
            nodes: self.nodes.max(1),
            in_place: self.in_place,
            proto: self.proto,
            comm: self.comm,
            traffic: self.traffic.clone(),
        }
    }
}

/// The measured points of one op, grouped into lines (points ascending in size).
pub type OpLines<'a> = BTreeMap<LineKey, Vec<&'a PointRecord>>;

/// Groups every correct point of `runs` by op and line. Points with wrong elements are left
/// out (a figure must not show a broken measurement as a speed); each gets a note.
pub fn group<'a>(runs: &'a [Run], notes: &mut Vec<String>) -> BTreeMap<Op, OpLines<'a>> {
    let mut ops: BTreeMap<Op, OpLines<'a>> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        for p in &run.points {
            let r = &p.record;
            let k = &r.key;
            if r.wrong > 0 {
                notes.push(format!(
                    "{}: {} {} world {} {} B left out of the figures ({} wrong elements)",
                    run.dir.display(),
                    k.op,
                    algo_label(k.algo, k.proto),
                    k.world,
                    k.bytes,
                    r.wrong
                ));
                continue;
            }
            let key = LineKey {
                algo: k.algo,
                proto: k.proto,
                world: k.world,
                nodes: k.nodes,
                dtype: k.dtype,
                redop: k.redop,
                in_place: k.in_place,
                root: k.root,
                comm: k.comm,
                traffic: k.traffic.clone(),
                group: k.group_label(),
                backend: k.backend.clone(),
                run: i,
            };
            ops.entry(k.op).or_default().entry(key).or_default().push(r);
        }
    }
    for lines in ops.values_mut() {
        for pts in lines.values_mut() {
            pts.sort_by_key(|r| r.key.bytes);
        }
    }
    ops
}

/// Names lines by what differs between them: always the algorithm and world size, the protocol
/// where one was forced or several occur, then dtype, reduction, placement, root, nodes,
/// alltoallv traffic, backend and run where more than one occurs.
pub struct Labeler {
    proto: bool,
    dtype: bool,
    redop: bool,
    in_place: bool,
    root: bool,
    comm: bool,
    traffic: bool,
    group: bool,
    nodes: bool,
    backend: bool,
    runs: Option<Vec<String>>,
}

impl Labeler {
    pub fn new<'k>(keys: impl Iterator<Item = &'k LineKey> + Clone, runs: &[Run]) -> Labeler {
        let varies = |f: &dyn Fn(&LineKey) -> String| {
            let mut it = keys.clone().map(f);
            let first = it.next();
            it.any(|v| Some(v) != first)
        };
        let forced = keys
            .clone()
            .any(|k| k.proto.is_some_and(|p| p != Proto::Auto));
        Labeler {
            proto: forced || varies(&|k| format!("{:?}", k.proto)),
            dtype: varies(&|k| k.dtype.to_string()),
            redop: varies(&|k| k.redop.to_string()),
            in_place: varies(&|k| k.in_place.to_string()),
            root: varies(&|k| format!("{:?}", k.root)),
            comm: varies(&|k| k.comm.label()),
            traffic: varies(&|k| format!("{:?}", k.traffic)),
            group: varies(&|k| format!("{:?}", k.group)),
            nodes: varies(&|k| k.nodes.to_string()),
            backend: varies(&|k| k.backend.clone()),
            runs: (runs.len() > 1).then(|| runs.iter().map(run_name).collect()),
        }
    }

    /// E.g. `ring, world 4`, `tree, world 2, bf16, in place`, `ring/ll128, world 8`.
    pub fn label(&self, k: &LineKey) -> String {
        let mut parts = vec![self.algo(k), format!("world {}", k.world)];
        parts.extend(self.extras(k));
        parts.join(", ")
    }

    /// The algorithm, with the protocol when lines need it (`ring/ll128`).
    pub fn algo(&self, k: &LineKey) -> String {
        if self.proto {
            algo_label(k.algo, k.proto)
        } else {
            k.algo.to_string()
        }
    }

    /// What tells lines apart besides the algorithm and world size.
    pub fn extras(&self, k: &LineKey) -> Vec<String> {
        let mut parts = Vec::new();
        if self.nodes {
            parts.push(format!("{} nodes", k.nodes));
        }
        if self.dtype {
            parts.push(k.dtype.to_string());
        }
        if self.redop {
            parts.push(k.redop.to_string());
        }
        if self.in_place {
            parts.push(
                if k.in_place {
                    "in place"
                } else {
                    "out of place"
                }
                .into(),
            );
        }
        if let (true, Some(root)) = (self.root, k.root) {
            parts.push(format!("root {root}"));
        }
        if self.comm {
            let label = k.comm.label();
            parts.push(match label.trim() {
                "" => "NCCL defaults".into(),
                l => l.to_string(),
            });
        }
        if let (true, Some(t)) = (self.traffic, &k.traffic) {
            parts.push(t.clone());
        }
        if let (true, Some(g)) = (self.group, &k.group) {
            parts.push(g.clone());
        }
        if self.backend {
            parts.push(k.backend.clone());
        }
        if let Some(names) = &self.runs {
            parts.push(names[k.run].clone());
        }
        parts
    }
}

/// A run's folder name, for legends and captions.
pub fn run_name(run: &Run) -> String {
    run.dir.file_name().map_or_else(
        || run.dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The x axis of every size figure.
pub fn size_axis() -> Axis {
    Axis::new(
        "message size S (bytes, nccl-tests semantics)",
        Scale::Log2,
        TickFormat::Bytes,
    )
}

/// The y axis of every latency figure.
pub fn latency_axis() -> Axis {
    Axis::new(
        "time per call (µs, median of iterations)",
        Scale::Log10,
        TickFormat::Number,
    )
}

/// The y axis of every bandwidth figure.
pub fn busbw_axis() -> Axis {
    Axis::new(
        "bus bandwidth (GB/s, from the median time)",
        Scale::Linear,
        TickFormat::Number,
    )
}

/// One measured series per line, coloured by its position.
fn measured_series(
    lines: &OpLines<'_>,
    labeler: &Labeler,
    y: impl Fn(&PointRecord) -> f64,
) -> Vec<Series> {
    lines
        .iter()
        .enumerate()
        .map(|(i, (k, pts))| Series {
            label: labeler.label(k),
            color: i,
            style: Style::Measured,
            points: pts.iter().map(|r| (r.key.bytes as f64, y(r))).collect(),
        })
        .collect()
}

/// busbw against size for one op.
pub fn busbw_vs_size(op: Op, lines: &OpLines<'_>, labeler: &Labeler) -> Figure {
    Figure {
        name: format!("busbw-{op}"),
        title: format!("{} bus bandwidth by message size", op.title()),
        x: size_axis(),
        y: busbw_axis(),
        series: measured_series(lines, labeler, |r| r.busbw_gbps),
        legend: Legend::UpperLeft,
        note: Some("busbw = S / median time × nccl-tests bus factor; 1 GB/s = 1e9 B/s".into()),
        y_from_zero: true,
    }
}

/// Median time against size (log-log) for one op; fitted lines are added by
/// [`super::fitlines::overlay_sizes`].
pub fn latency_vs_size(op: Op, lines: &OpLines<'_>, labeler: &Labeler) -> Figure {
    Figure {
        name: format!("latency-{op}"),
        title: format!("{} time per call by message size", op.title()),
        x: size_axis(),
        y: latency_axis(),
        series: measured_series(lines, labeler, |r| r.time_us_typical()),
        legend: Legend::UpperLeft,
        note: Some(
            "points: median over timed iterations (each the slowest rank's time); the mean \
             for points imported from logs that print only a mean"
                .into(),
        ),
        y_from_zero: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::testrun::{ll_and_simple, run, Truth};

    /// The legend labels of the AllReduce lines of `runs`, in drawing order.
    fn labels(runs: &[Run]) -> Vec<String> {
        let mut notes = Vec::new();
        let ops = group(runs, &mut notes);
        let lines = &ops[&Op::AllReduce];
        let labeler = Labeler::new(lines.keys(), runs);
        lines.keys().map(|k| labeler.label(k)).collect()
    }

    fn truth(proto: Option<Proto>) -> Truth {
        Truth {
            proto,
            alpha_us: 1.0,
            beta_ns_per_byte: 0.1,
        }
    }

    #[test]
    fn each_protocol_is_a_line_named_in_the_legend() {
        let [ll, simple] = ll_and_simple();
        let ll128 = truth(Some(Proto::Ll128));
        let r = [run(&[simple, ll, ll128], &[8])];
        assert_eq!(
            labels(&r),
            [
                "ring/ll, world 8",
                "ring/ll128, world 8",
                "ring/simple, world 8"
            ]
        );
        let mut notes = Vec::new();
        let key = group(&r, &mut notes)[&Op::AllReduce]
            .keys()
            .next()
            .unwrap()
            .curve_key(Op::AllReduce);
        assert_eq!(key.proto, Some(Proto::Ll));
    }

    #[test]
    fn lines_without_a_forced_protocol_are_named_as_before() {
        assert_eq!(
            labels(&[run(&[truth(None)], &[2, 4])]),
            ["ring, world 2", "ring, world 4"]
        );
        // NCCL's own choice alone says nothing new; beside a forced one it is named.
        let auto = truth(Some(Proto::Auto));
        assert_eq!(labels(&[run(&[auto], &[8])]), ["ring, world 8"]);
        let ll = truth(Some(Proto::Ll));
        assert_eq!(
            labels(&[run(&[auto, ll], &[8])]),
            ["ring/ll, world 8", "ring/auto, world 8"]
        );
    }

    #[test]
    fn each_reduction_is_a_line_of_its_own() {
        let mut r = run(&[truth(None)], &[4]);
        let prods: Vec<_> = (r.points.iter())
            .map(|p| crate::report::run_reader::MeasuredPoint {
                record: p.record.clone().with_redop(ReduceOp::Prod),
                samples: p.samples.clone(),
            })
            .collect();
        r.points.extend(prods);
        assert_eq!(labels(&[r]), ["ring, world 4, sum", "ring, world 4, prod"]);
    }
}
