//! `collbench project` flags (clap derive), kept beside the module so that src/cli.rs only names
//! the subcommand, and their parsing into a [`ProjectRequest`].

use std::path::PathBuf;

use clap::Args;

use super::calibrated::CalibrationChoice;
use super::command::ProjectRequest;
use super::overlap::OverlapSource;
use super::plan::Batch;
use super::step::StepOptions;
use crate::error::{Error, Result};
use crate::physical::{Count, WORLD};

/// `collbench project`.
#[derive(Args, Debug)]
#[command(
    about = "Project FSDP (+TP/PP/EP) training steps from a fit.json or a bundled network profile",
    after_help = "Examples:\n  \
collbench project --profile h100-ib400 --model llama2-7b --world-sizes 8,16,...,2048 --tp 1,2,4 --pp 1,2\n  \
collbench project --profile a100-ib200 --model llama2-70b --tp 4,8 --pp 1,2,4 --reshard --out results/proj\n  \
collbench project --fit fit.json --hardware h100 --model my-model.toml --global-batch 1024 --world-sizes 8,16,...,1024\n  \
collbench project --fit host-fit.json --hardware bench-configs/hardware/host-replay.toml --model bench-configs/models/tiny-replay.toml --world-sizes 2 --replay\n  \
collbench project --fit fit.json --hardware h100 --model mixtral-8x7b --seq-len 4096 --ep 1,8 --pp 1,2 --reshard\n  \
collbench project --profile h100-ib400 --model llama2-7b --world-sizes 8,128 --calibration pytorch-fsdp\n\n\
Profiles: v100-ib100, a100-ib200, h100-ib400 (hardware defaults to the profile's GPU).\n\
Models: llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, mixtral-8x7b (MoE), or a TOML file.\n\
Hardware: v100, a100, h100, h200, or a TOML file. The model is in docs/METHODOLOGY.md (Projection).\n\
Kernel times are calibrated to published runs on the GPU where that lands closer to them held out\n\
(stderr says which calibration and how close; collbench anchors --calibrate)."
)]
pub struct ProjectArgs {
    /// A fit.json written by `collbench fit` (the network's collective models).
    #[arg(long, value_name = "FILE")]
    pub fit: Option<PathBuf>,
    /// A bundled network profile instead of --fit: v100-ib100, a100-ib200, h100-ib400.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Model: a preset name or a TOML file (fields of docs/FORMATS.md; base = "llama2-7b").
    #[arg(long, value_name = "NAME|FILE")]
    pub model: String,
    /// GPU and node: v100, a100, h100, h200 or a TOML file [default: the profile's GPU].
    #[arg(long, value_name = "NAME|FILE")]
    pub hardware: Option<String>,
    /// World sizes (GPUs); `a,b,...,c` continues the ratio b/a up to c.
    #[arg(long, value_name = "LIST", default_value = "8,16,...,2048")]
    pub world_sizes: String,
    /// Tensor-parallel degrees to try.
    #[arg(long, value_name = "LIST", default_value = "1")]
    pub tp: String,
    /// Pipeline-parallel degrees to try.
    #[arg(long, value_name = "LIST", default_value = "1")]
    pub pp: String,
    /// Expert-parallel degrees to try (mixture-of-experts models): each must divide the
    /// model's experts and a layout's data-parallel degree, from which it takes its ranks.
    #[arg(long, value_name = "LIST", default_value = "1")]
    pub ep: String,
    /// Sequence length [default: the model's].
    #[arg(long, value_name = "N")]
    pub seq_len: Option<usize>,
    /// Weak scaling (the default): sequences per GPU, i.e. per data-parallel rank of an
    /// FSDP-only layout; every layout at a world size trains the same global batch [default: 1].
    #[arg(long, value_name = "N", conflicts_with = "global_batch")]
    pub local_batch: Option<usize>,
    /// Strong scaling: the same global batch (sequences) at every world size.
    #[arg(long, value_name = "N")]
    pub global_batch: Option<usize>,
    /// Microbatches per step [default: one per sequence when pp > 1, else 1].
    #[arg(long, value_name = "N")]
    pub microbatches: Option<usize>,
    /// Re-shard parameters after forward (AllGather them again in backward).
    #[arg(long)]
    pub reshard: bool,
    /// Hybrid sharding: shard within a node, replicate across nodes (AllReduce of shards).
    #[arg(long)]
    pub hybrid: bool,
    /// Full activation recomputation: layers keep only their input and run forward again
    /// before backward (less memory, one more forward of compute).
    #[arg(long)]
    pub recompute: bool,
    /// Interleaved pipeline schedule: V model chunks per stage (Megatron-LM's virtual pipeline
    /// stages): the bubble shrinks V times; the V times as many sends are taken as overlapped
    /// with compute, as Megatron-LM overlaps them (1 to 64).
    #[arg(long, value_name = "V", default_value = "1")]
    pub virtual_stages: usize,
    /// Every compute kernel at this fraction of peak FLOP/s (the flat rule) instead of the
    /// default roofline per part of a layer (docs/METHODOLOGY.md, Projection).
    #[arg(long, value_name = "F")]
    pub compute_efficiency: Option<f64>,
    /// Kernel times fitted to the bundled published runs on the GPU (collbench anchors
    /// --calibrate): `auto` (fitted to every run on the GPU, used only where, held out a series
    /// at a time, it lands closer to them than the roofline, and only on a bundled profile),
    /// `all` (that fit regardless), a framework's name (its runs only: megatron-lm,
    /// megatron-deepspeed, pytorch-fsdp, ...) or `none` (the roofline as it is). None applies
    /// with --compute-efficiency, --replay or a hardware file that is not a preset.
    #[arg(long, value_name = "auto|all|none|FRAMEWORK", default_value = "auto")]
    pub calibration: String,
    /// How much slower compute runs while communication overlaps it (0.19 = 19%)
    /// [default: 0.19; 0 with --replay].
    #[arg(long, value_name = "F")]
    pub overlap_slowdown: Option<f64>,
    /// Mixture of experts: the busiest expert-parallel rank's tokens over the mean, as a
    /// router logs it (1 to 1024): every MoE AllToAll moves that many times the mean bytes at
    /// the busiest rank, which sets its time [default: the load of the fit's alltoallv router
    /// (sweep --op alltoallv --traffic moe=...) at each layout's --ep, else 1, a balanced
    /// router].
    #[arg(long, value_name = "R")]
    pub ep_load: Option<f64>,
    /// Also run the projected step's collective schedule on this machine's host backend (one
    /// world of 2 to 2×cores ranks, FSDP only, compute as busy-waits) and print measured
    /// against projected step time; with --out, also replay.csv.
    #[arg(long)]
    pub replay: bool,
    /// Timed steps of --replay (after 3 untimed ones).
    #[arg(long, value_name = "N", default_value = "20", requires = "replay")]
    pub replay_steps: usize,
    /// With --replay: a rank that finishes no step for this long (or for ten projected steps,
    /// if longer) stops the replay, and is named.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        requires = "replay"
    )]
    pub replay_timeout: String,
    /// Write projection.csv and projection.json into this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace the files of an earlier --out (outputs are never overwritten otherwise).
    #[arg(long, requires = "out")]
    pub force: bool,
}

impl ProjectArgs {
    /// Parses every value into a typed request; the first bad value is the error.
    pub fn into_request(self, command_line: Vec<String>) -> Result<ProjectRequest> {
        let batch = match (self.local_batch, self.global_batch) {
            (_, Some(0)) | (Some(0), _) => {
                return Err(Error::usage(
                    "--local-batch/--global-batch must be at least 1",
                ))
            }
            (_, Some(global)) => Batch::Strong { global },
            (local, None) => Batch::Weak {
                local: local.unwrap_or(1),
            },
        };
        if self.seq_len == Some(0) || self.microbatches == Some(0) {
            return Err(Error::usage(
                "--seq-len and --microbatches must be at least 1",
            ));
        }
        let overlap_slowdown = match (self.replay, self.overlap_slowdown) {
            (true, Some(s)) if s != 0.0 => {
                return Err(Error::usage(format!(
                    "--overlap-slowdown {s} with --replay: the replay's compute stand-in is \
                     wall-clock time, which overlap cannot slow; leave it out (the replay \
                     projects with 0)"
                )))
            }
            (true, _) => 0.0,
            (false, s) => s.unwrap_or(super::overlap::DEFAULT_SIGMA),
        };
        if self.replay_steps == 0 {
            return Err(Error::usage("--replay-steps must be at least 1"));
        }
        self.check_bounds()?;
        if !(1..=64).contains(&self.virtual_stages) {
            return Err(Error::usage(format!(
                "--virtual-stages {}: give 1 (no interleaving) to 64 chunks per stage",
                self.virtual_stages
            )));
        }
        Ok(ProjectRequest {
            fit: self.fit,
            profile: self.profile,
            model: self.model,
            hardware: self.hardware,
            worlds: parse_worlds(&self.world_sizes)?,
            tps: counts("--tp", &self.tp)?,
            pps: counts("--pp", &self.pp)?,
            eps: counts("--ep", &self.ep)?,
            seq_len: self.seq_len,
            batch,
            microbatches: self.microbatches,
            opts: StepOptions {
                reshard: self.reshard,
                hybrid: self.hybrid,
                recompute: self.recompute,
                virtual_stages: self.virtual_stages,
                compute_efficiency: self.compute_efficiency,
                overlap_slowdown,
                // A replay's 0 is its own (its compute stand-in cannot be slowed), not the
                // default's.
                overlap_source: match (self.overlap_slowdown, self.replay) {
                    (None, false) => OverlapSource::Default,
                    _ => OverlapSource::Given,
                },
                ep_load: self.ep_load.map_or(Ok(1.0), ep_load)?,
                ..StepOptions::default()
            },
            ep_load_given: self.ep_load.is_some(),
            calibration: CalibrationChoice::parse(&self.calibration)?,
            replay: self.replay.then_some(self.replay_steps),
            replay_timeout: crate::units::parse_duration(&self.replay_timeout)
                .map_err(|e| Error::usage(format!("--replay-timeout: {e}")))
                .and_then(|t| crate::model::limits::check_timeout_flag("--replay-timeout", t))?,
            out: self.out,
            force: self.force,
            command_line,
        })
    }
}

/// Sequence length: up to 16 Mi tokens.
const SEQ_LEN: Count = Count {
    min: 1,
    max: 1 << 24,
};
/// Global batch (sequences per step): up to 1 Mi sequences.
const GLOBAL_BATCH: Count = Count {
    min: 1,
    max: 1 << 20,
};
/// Sequences per GPU per step, and microbatches per step: up to 64 Ki.
const PER_GPU: Count = Count {
    min: 1,
    max: 1 << 16,
};
/// Timed steps of a replay (each holds three stamps per rank in shared memory).
const REPLAY_STEPS: Count = Count {
    min: 1,
    max: 100_000,
};

impl ProjectArgs {
    /// Every count that sizes memory or a loop, within its range.
    fn check_bounds(&self) -> Result<()> {
        let optional = [
            ("--seq-len", self.seq_len, SEQ_LEN),
            ("--global-batch", self.global_batch, GLOBAL_BATCH),
            ("--local-batch", self.local_batch, PER_GPU),
            ("--microbatches", self.microbatches, PER_GPU),
        ];
        for (flag, value, range) in optional {
            if let Some(n) = value {
                bounded(flag, range, n)?;
            }
        }
        bounded("--replay-steps", REPLAY_STEPS, self.replay_steps)?;
        Ok(())
    }
}

/// A comma list of positive whole numbers.
fn counts(flag: &str, s: &str) -> Result<Vec<usize>> {
    crate::units::parse_list_with(s, |item| positive(flag, item)).map_err(|e| match e {
        Error::Usage(m) if !m.starts_with(flag) => Error::Usage(format!("{flag}: {m}")),
        other => other,
    })
}

fn positive(flag: &str, item: &str) -> Result<usize> {
    match item.parse::<u64>() {
        Ok(n) if n > 0 => bounded(flag, WORLD, n as usize),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(Error::usage(format!(
            "{flag}: '{item}' is beyond {}; give at most that",
            WORLD.max
        ))),
        _ => Err(Error::usage(format!(
            "{flag}: '{item}' is not a positive whole number"
        ))),
    }
}

/// `n` within `range`, else a usage error naming the flag, the value and the range.
fn bounded(flag: &str, range: Count, n: usize) -> Result<usize> {
    range
        .check_usize(flag, n)
        .map_err(|m| Error::usage(m.replacen(" = ", " ", 1)))
}

/// World sizes: a comma list where `a,b,...,c` continues the ratio b/a (8,16,...,2048 doubles);
/// sorted, duplicates dropped.
pub fn parse_worlds(s: &str) -> Result<Vec<usize>> {
    const FLAG: &str = "--world-sizes";
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        if items[i] != "..." {
            out.push(positive(FLAG, items[i])?);
            i += 1;
            continue;
        }
        let end = items.get(i + 1).ok_or_else(|| dots(s))?;
        let end = positive(FLAG, end)?;
        let [.., a, b] = out[..] else {
            return Err(dots(s));
        };
        if b <= a || b % a != 0 {
            return Err(dots(s));
        }
        // Every item is at most WORLD.max and the ratio at least 2: a few dozen items at most.
        let ratio = b / a;
        let mut next = b.checked_mul(ratio);
        while let Some(n) = next.filter(|&n| n < end) {
            out.push(n);
            next = n.checked_mul(ratio);
        }
        out.push(end);
        i += 2;
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(Error::usage("--world-sizes: empty list"));
    }
    Ok(out)
}

fn dots(s: &str) -> Error {
    Error::usage(format!(
        "--world-sizes '{s}': '...' needs two sizes with a whole ratio before it and an end \
         after it, e.g. 8,16,...,2048"
    ))
}

/// `--ep-load`: a finite ratio from 1 (balanced) to 1024.
fn ep_load(r: f64) -> Result<f64> {
    match r.is_finite() && (1.0..=1024.0).contains(&r) {
        true => Ok(r),
        false => Err(Error::usage(format!(
            "--ep-load {r}: give the busiest rank's load over the mean, from 1 (balanced) to 1024"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ep_load_is_a_ratio_from_1_to_1024() {
        assert_eq!(ep_load(1.0).unwrap(), 1.0);
        assert_eq!(ep_load(2.5).unwrap(), 2.5);
        for bad in [0.5, 0.0, -1.0, 1025.0, f64::NAN, f64::INFINITY] {
            let e = ep_load(bad).unwrap_err().to_string();
            assert!(e.contains("--ep-load") && e.contains("1 (balanced)"), "{e}");
        }
    }

    #[test]
    fn world_lists_expand() {
        assert_eq!(
            parse_worlds("8,16,...,2048").unwrap(),
            vec![8, 16, 32, 64, 128, 256, 512, 1024, 2048]
        );
        assert_eq!(parse_worlds("64, 8,16").unwrap(), vec![8, 16, 64]);
        assert_eq!(parse_worlds("8,32,...,100").unwrap(), vec![8, 32, 100]);
        assert!(parse_worlds("8,...,64")
            .unwrap_err()
            .to_string()
            .contains("'...'"));
        assert!(parse_worlds("8,12,...,64").is_err());
        assert!(parse_worlds("8,x").unwrap_err().to_string().contains("'x'"));
        assert!(parse_worlds("0").is_err());
    }

    #[test]
    fn world_lists_are_bounded_before_expanding() {
        assert_eq!(parse_worlds("1,2,...,1048576").unwrap().len(), 21);
        for huge in [
            "1,2,...,18446744073709551615",
            "1073741824",
            "2,4,...,1048577",
        ] {
            let e = parse_worlds(huge).unwrap_err().to_string();
            assert!(e.contains("1048576") && !e.contains('\n'), "{huge}: {e}");
        }
        let e = parse_worlds("99999999999999999999999")
            .unwrap_err()
            .to_string();
        assert!(e.contains("beyond 1048576"), "{e}");
    }

    #[test]
    fn degree_lists_name_the_flag() {
        assert_eq!(counts("--tp", "1,2,4").unwrap(), vec![1, 2, 4]);
        let e = counts("--tp", "1,two").unwrap_err().to_string();
        assert_eq!(e, "--tp: 'two' is not a positive whole number");
    }
}
