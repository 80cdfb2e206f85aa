//! A results folder as an NCCL run with several protocols would leave it, written by hand
//! through the sweep's own writer: for tests of the readers of results, with no GPU.

use std::path::Path;

use collbench::meta::Meta;
use collbench::model::record::PointRecord;

/// One protocol of a hand-written NCCL run: every point takes `alpha_us + beta_ns_per_byte ·
/// S / 1000` µs.
#[derive(Clone, Copy, Debug)]
pub struct ProtoLine {
    pub proto: &'static str,
    pub alpha_us: f64,
    pub beta_ns_per_byte: f64,
}

impl ProtoLine {
    pub fn time_us(&self, bytes: usize) -> f64 {
        self.alpha_us + self.beta_ns_per_byte * bytes as f64 / 1e3
    }
}

/// Sizes of [`write_proto_run`]: 1 KiB to 1 MiB by 4 (6 sizes).
pub const PROTO_SIZES: [usize; 6] = [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20];

/// Writes `dir` as `collbench sweep --backend nccl --proto ...` would, through the sweep's own
/// writer: ring AllReduce in f32 at each of `worlds`, every protocol of `lines` at every size
/// of [`PROTO_SIZES`], five iterations at exactly the line's time, status complete. No GPU is
/// involved: the folder is made by hand to test the readers of results.
pub fn write_proto_run(dir: &Path, lines: &[ProtoLine], worlds: &[usize]) {
    use collbench::collective::Op;
    use collbench::meta::RunStatus;
    use collbench::model::record::{IterSample, RankSummary};
    use collbench::report::run_dir::RunDir;
    let ranks = worlds.iter().copied().max().unwrap();
    let meta = Meta::new(
        vec!["collbench".into()],
        "nccl",
        "nvlink",
        ranks,
        1,
        serde_json::json!({}),
    );
    let mut out = RunDir::create(dir, &meta).unwrap();
    for &world in worlds {
        for line in lines {
            for bytes in PROTO_SIZES {
                let t = line.time_us(bytes);
                let rec = PointRecord::example(Op::AllReduce, bytes, world)
                    .with_backend("nccl")
                    .with_proto(Some(line.proto.parse().unwrap()))
                    .with_time_us(t);
                let sample = IterSample {
                    time_us: t,
                    slowest_rank: 0,
                    fastest_us: t,
                };
                let per_rank: Vec<RankSummary> = (0..world)
                    .map(|rank| RankSummary {
                        rank,
                        global_rank: rank,
                        node: 0,
                        time_us_median: t,
                        time_us_mean: t,
                        time_us_max: t,
                        wrong: 0,
                    })
                    .collect();
                out.append_point(&rec, &[sample; 5], &per_rank).unwrap();
            }
        }
    }
    out.finish(RunStatus::Complete, None).unwrap();
}
