//! Hand-made runs for tests: points whose times follow exact alpha-beta lines, one line per
//! protocol, as an NCCL sweep with `--proto` would record them.

use std::path::PathBuf;

use super::input::{MeasuredPoint, Run};
use crate::collective::{Algo, DType, Op, Proto, ReduceOp};
use crate::meta::Meta;
use crate::model::record::{PointKey, PointRecord};

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
    let algbw = bytes as f64 / time_us / 1e3;
    let busbw = algbw * Op::AllReduce.busbw_factor(world);
    PointRecord {
        key: PointKey {
            backend: if proto.is_some() { "nccl" } else { "host" }.into(),
            op: Op::AllReduce,
            algo: Algo::Ring,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            world,
            nodes: 1,
            bytes,
            count: bytes / 4,
            in_place: false,
            proto,
        },
        iters: 5,
        warmup: 1,
        time_us_mean: time_us,
        time_us_median: time_us,
        time_us_min: time_us,
        time_us_p95: time_us,
        time_us_p99: time_us,
        time_us_max: time_us,
        time_us_stddev: 0.0,
        time_cv: 0.0,
        time_us_mad: 0.0,
        algbw_gbps: algbw,
        busbw_gbps: busbw,
        busbw_gbps_mean: busbw,
        wrong: 0,
        slowest_rank: 0,
        skew_us_median: 0.0,
        nccl_estimate_us: None,
    }
}

/// A run measuring every truth at every world, 1 KiB .. 64 MiB by 4, five exact samples each.
pub fn run(truths: &[Truth], worlds: &[usize]) -> Run {
    let mut points = Vec::new();
    for &world in worlds {
        for t in truths {
            for i in 0..9 {
                let bytes = 1024usize << (2 * i);
                let time = t.time_us(bytes);
                points.push(MeasuredPoint {
                    record: record(t.proto, world, bytes, time),
                    samples: vec![time; 5],
                });
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
        gpu_power: None,
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
