//! Hand-made runs for tests: points whose times follow exact alpha-beta lines, one line per
//! protocol, as an NCCL sweep with `--proto` would record them.

use std::path::PathBuf;

use crate::collective::{Op, Proto};
use crate::meta::Meta;
use crate::model::record::PointRecord;
use crate::report::run_reader::{MeasuredPoint, Run};

/// One protocol's truth: `T(S) = alpha_us + beta_ns_per_byte · S / 1000`.
#[derive(Clone, Copy, Debug)]
pub struct Truth {
    pub proto: Option<Proto>,
    pub alpha_us: f64,
    pub beta_ns_per_byte: f64,
}

impl Truth {
    pub fn time_us(&self, bytes: usize) -> f64 {
        self.alpha_us + self.beta_ns_per_byte * bytes as f64 / 1e3
    }
}

/// A summary row of a ring AllReduce in f32 at `world`, `bytes`, with median `time_us`.
pub fn record(proto: Option<Proto>, world: usize, bytes: usize, time_us: f64) -> PointRecord {
    let backend = if proto.is_some() { "nccl" } else { "host" };
    PointRecord::example(Op::AllReduce, bytes, world)
        .with_backend(backend)
        .with_proto(proto)
        .with_time_us(time_us)
}

/// A run measuring every truth at every world, 1 KiB .. 64 MiB by 4, five exact samples each.
pub fn run(truths: &[Truth], worlds: &[usize]) -> Run {
    let mut points = Vec::new();
    for &world in worlds {
        for t in truths {
            for i in 0..9 {
                let bytes = 1024usize << (2 * i);
                let time = t.time_us(bytes);
                points.push(MeasuredPoint::with_times(
                    record(t.proto, world, bytes, time),
                    &[time; 5],
                ));
            }
        }
    }
    let backend = if truths.iter().any(|t| t.proto.is_some()) {
        "nccl"
    } else {
        "host"
    };
    let ranks = worlds.iter().copied().max().unwrap_or(1);
    Run {
        dir: PathBuf::from(format!("/runs/{backend}")),
        meta: Meta::new(vec![], backend, "test", ranks, 1, serde_json::json!({})),
        points,
        telemetry: Vec::new(),
    }
}

/// LL fast for small messages (alpha 5 µs, 0.5 ns/B), Simple for large ones (20 µs, 0.05 ns/B).
pub fn ll_and_simple() -> [Truth; 2] {
    [
        Truth {
            proto: Some(Proto::Ll),
            alpha_us: 5.0,
            beta_ns_per_byte: 0.5,
        },
        Truth {
            proto: Some(Proto::Simple),
            alpha_us: 20.0,
            beta_ns_per_byte: 0.05,
        },
    ]
}
