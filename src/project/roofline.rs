//! Compute time per part of a unit as a roofline: each part takes
//! `max(FLOPs / (eff(size) · peak), bytes / (hbm_eff(size) · HBM bandwidth))`.
//!
//! A layer's forward, per microbatch of `T` tokens on one GPU of a tensor-parallel group of `tp`
//! (bf16 tensors, 2 bytes an element):
//!
//! - GEMMs `M×K·K×N` (FLOPs `2MNK`, bytes `2(MK + KN + MN)`): QKV (`T × h × (h + 2·kv·d)/tp`),
//!   attention output (`T × h/tp × h`), MLP gate and up (`T × h × f/tp` each), down
//!   (`T × f/tp × h`);
//! - attention scores and context, one fused kernel (FlashAttention): FLOPs `4·T·s·h/tp`,
//!   bytes reading Q, K, V and writing the output; the softmax stays on chip;
//! - memory-bound work, no FLOPs counted: two RMSNorms (read and write `T·h`), two residual adds
//!   (read two, write one `T·h`), rotary embedding of Q and K (read and write), SwiGLU (read gate
//!   and up, write `T·f/tp`). Norms and residuals are not split by tensor parallelism.
//!
//! A MoE layer (`E` experts, top-k routing, expert-parallel degree `ep`) replaces the MLP by
//! the router GEMM `T × h × E` (not split by TP), the token permutation into expert order
//! before the dispatch AllToAll and back after the combine (memory-bound: read and write
//! `T·k·h` each), and the MLPs of the GPU's `E/ep` local experts, each over its share of the
//! `T·k` routed tokens the GPU receives with balanced routing, `m = T·k·ep/E` rows: gate and up
//! `m × h × f/tp`, SwiGLU, down `m × f/tp × h`. FLOPs are those of k dense MLPs; the weights
//! read are those of `E/ep` experts.
//!
//! Backward is twice forward: each GEMM becomes two of its size (input and weight gradient),
//! attention twice its FLOPs and bytes, and each memory-bound part reads the saved input and the
//! incoming gradient and writes a gradient (an assumption: twice its forward bytes). The head is
//! the final norm, the output GEMM `T × h × V/tp` and the loss over fp32 logits (read and write
//! `4·T·V/tp` bytes); the embedding a lookup (read and write `T·h`). The optimizer step updates
//! the GPU's shard once per step: AdamW in mixed precision reads the bf16 gradient, the fp32
//! master weight, momentum and variance (14 bytes) and writes the last three and the bf16
//! weight (14 bytes).
//!
//! eff(size): the hardware's best large-GEMM share (`gemm_efficiency`, measured) times
//! Calculon's relative efficiency by GEMM size (Isaev et al., SC'23, `matrix.gflops_efficiency`
//! of github.com/calculon-ai/calculon systems/a100_80g.json: 0.95 from 128 GFLOP, 0.9 from 16,
//! 0.6 from 1, 0.1 below, divided by 0.95); attention uses `attention_efficiency` in place of
//! `gemm_efficiency`. hbm_eff(size) likewise: `hbm_efficiency` times Calculon's
//! `mem1.MB_efficiency` (0.90 from 100 MB, 0.75 from 10, 0.6 from 1, 0.3 below, divided by 0.90).
//!
//! With `--compute-efficiency E` (the flat rule) every unit takes its model FLOPs at `E` × peak,
//! backward twice forward, and the optimizer step is not counted, as before the roofline.

use super::hardware::HardwareSpec;
use super::model::ModelSpec;
use super::stage::{Unit, UnitKind};

/// Bytes the AdamW step moves per parameter of the shard (see the module docs).
pub const OPTIMIZER_BYTES_PER_PARAM: f64 = 28.0;

/// The chip as the roofline sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chip {
    pub peak_flops: f64,
    pub hbm_bytes_per_s: f64,
    pub gemm_efficiency: f64,
    pub attention_efficiency: f64,
    pub hbm_efficiency: f64,
}

impl Chip {
    pub fn new(hw: &HardwareSpec) -> Chip {
        Chip {
            peak_flops: hw.peak_flops(),
            hbm_bytes_per_s: hw.hbm_bytes_per_s(),
            gemm_efficiency: hw.gemm_efficiency,
            attention_efficiency: hw.attention_efficiency,
            hbm_efficiency: hw.hbm_efficiency,
        }
    }
}

/// How compute time is modelled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ComputeModel {
    /// Per part, the slower of its FLOPs and its bytes.
    Roofline,
    /// Every FLOP at this fraction of peak (`--compute-efficiency`).
    Flat(f64),
}

impl ComputeModel {
    /// The model of `--compute-efficiency` (`None`: the roofline).
    pub fn from_option(efficiency: Option<f64>) -> ComputeModel {
        efficiency.map_or(ComputeModel::Roofline, ComputeModel::Flat)
    }

    /// The name projection.json records.
    pub fn name(&self) -> &'static str {
        match self {
            ComputeModel::Roofline => "roofline",
            ComputeModel::Flat(_) => "flat",
        }
    }
}

/// Seconds of one unit per microbatch on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UnitSeconds {
    pub fwd: f64,
    pub bwd: f64,
    /// Of `fwd + bwd`, the seconds of parts whose bytes outlast their FLOPs.
    pub memory_bound: f64,
}

impl UnitSeconds {
    /// With full activation recomputation: backward runs the forward again first
    /// (Korthikanti et al. 2022, §4: "full activation recomputation" costs one extra forward).
    pub fn recomputed(self) -> UnitSeconds {
        // Both rules spend a third of a unit's memory-bound seconds in forward.
        UnitSeconds {
            fwd: self.fwd,
            bwd: self.bwd + self.fwd,
            memory_bound: self.memory_bound * 4.0 / 3.0,
        }
    }
}

/// One microbatch's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    /// Tokens of the microbatch (sequences × sequence length).
    pub tokens: f64,
    pub seq: usize,
    pub tp: usize,
    /// Expert-parallel degree (1 without; only MoE layers use it).
    pub ep: usize,
}

/// What a part is: which efficiency its FLOPs run at.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Gemm,
    Attention,
    Memory,
}

/// One part of a unit's forward, run `copies` times over.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Part {
    kind: Kind,
    flops: f64,
    bytes: f64,
    /// Identical kernels of this size (a MoE layer's local experts, up to 2¹⁶ of them): timed
    /// once and counted this often, since efficiency depends on one kernel's size, not the sum.
    copies: usize,
}

/// The seconds of `unit` for one microbatch.
pub fn unit_seconds(
    model: &ModelSpec,
    chip: &Chip,
    unit: &Unit,
    w: &Work,
    cm: ComputeModel,
) -> UnitSeconds {
    match cm {
        ComputeModel::Flat(e) => {
            let rate = chip.peak_flops * e;
            let fwd = unit.fwd_flops_per_token * w.tokens / w.tp as f64 / rate;
            UnitSeconds {
                fwd,
                bwd: 2.0 * fwd,
                memory_bound: 0.0,
            }
        }
        ComputeModel::Roofline => {
            let mut out = UnitSeconds::default();
            for p in parts(model, unit.kind, w) {
                let (s, memory) = part_seconds(&p, chip);
                out.fwd += s;
                out.bwd += 2.0 * s;
                if memory {
                    out.memory_bound += 3.0 * s;
                }
            }
            out
        }
    }
}

/// Seconds of the optimizer step over `shard_params` parameters (0 under the flat rule).
pub fn optimizer_seconds(chip: &Chip, shard_params: f64, cm: ComputeModel) -> f64 {
    match cm {
        ComputeModel::Flat(_) => 0.0,
        ComputeModel::Roofline => {
            let bytes = OPTIMIZER_BYTES_PER_PARAM * shard_params;
            bytes / (hbm_efficiency(chip, bytes) * chip.hbm_bytes_per_s)
        }
    }
}

/// A part's seconds, all its copies, and whether its bytes, not its FLOPs, set them.
fn part_seconds(p: &Part, chip: &Chip) -> (f64, bool) {
    let ceiling = match p.kind {
        Kind::Gemm => chip.gemm_efficiency,
        Kind::Attention => chip.attention_efficiency,
        Kind::Memory => 1.0,
    };
    let compute = if p.flops > 0.0 {
        p.flops / (ceiling * relative_gemm_efficiency(p.flops) * chip.peak_flops)
    } else {
        0.0
    };
    let memory = p.bytes / (hbm_efficiency(chip, p.bytes) * chip.hbm_bytes_per_s);
    (compute.max(memory) * p.copies as f64, memory > compute)
}

/// Calculon's GEMM efficiency by size, relative to its largest GEMMs' 0.95.
pub fn relative_gemm_efficiency(flops: f64) -> f64 {
    let g = flops / 1e9;
    let e = if g >= 128.0 {
        0.95
    } else if g >= 16.0 {
        0.9
    } else if g >= 1.0 {
        0.6
    } else {
        0.1
    };
    e / 0.95
}

/// The HBM rate share of a transfer of `bytes`: the chip's, scaled by Calculon's size table.
pub fn hbm_efficiency(chip: &Chip, bytes: f64) -> f64 {
    let mb = bytes / 1e6;
    let e = if mb >= 100.0 {
        0.90
    } else if mb >= 10.0 {
        0.75
    } else if mb >= 1.0 {
        0.6
    } else {
        0.3
    };
    chip.hbm_efficiency * e / 0.90
}

fn gemm(m: f64, k: f64, n: f64) -> Part {
    Part {
        kind: Kind::Gemm,
        flops: 2.0 * m * k * n,
        bytes: 2.0 * (m * k + k * n + m * n),
        copies: 1,
    }
}

fn memory(bytes: f64) -> Part {
    Part {
        kind: Kind::Memory,
        flops: 0.0,
        bytes,
        copies: 1,
    }
}

/// The forward parts of a unit of `kind` (module docs).
fn parts(model: &ModelSpec, kind: UnitKind, w: &Work) -> Vec<Part> {
    let t = w.tokens;
    let tp = w.tp as f64;
    let h = model.hidden as f64;
    match kind {
        UnitKind::Embedding => vec![memory(2.0 * 2.0 * t * h)],
        UnitKind::Head => {
            let v = model.vocab as f64 / tp;
            vec![
                memory(2.0 * 2.0 * t * h),
                gemm(t, h, v),
                memory(2.0 * 4.0 * t * v),
            ]
        }
        UnitKind::Layer => layer_parts(model, w),
    }
}

fn layer_parts(model: &ModelSpec, w: &Work) -> Vec<Part> {
    let t = w.tokens;
    let tp = w.tp as f64;
    let h = model.hidden as f64;
    let f = model.ffn as f64 / tp;
    let kv = (model.kv_heads * model.head_dim()) as f64;
    let attention = Part {
        kind: Kind::Attention,
        flops: 4.0 * t * w.seq as f64 * h / tp,
        bytes: 2.0 * t * (2.0 * h + 2.0 * kv) / tp,
        copies: 1,
    };
    let mut parts = vec![
        memory(2.0 * 2.0 * 2.0 * t * h),
        gemm(t, h, (h + 2.0 * kv) / tp),
        memory(2.0 * 2.0 * t * (h + kv) / tp),
        attention,
        gemm(t, h / tp, h),
        memory(2.0 * 3.0 * 2.0 * t * h),
    ];
    if model.is_moe() {
        parts.extend(moe_parts(model, w));
    } else {
        parts.extend(mlp_parts(t, h, f));
    }
    parts
}

/// One SwiGLU MLP over `m` tokens of width `h`, inner width `f` (per GPU).
fn mlp_parts(m: f64, h: f64, f: f64) -> [Part; 4] {
    [
        gemm(m, h, f),
        gemm(m, h, f),
        memory(3.0 * 2.0 * m * f),
        gemm(m, f, h),
    ]
}

/// The MLP of a MoE layer on one GPU (module docs).
fn moe_parts(model: &ModelSpec, w: &Work) -> Vec<Part> {
    let t = w.tokens;
    let h = model.hidden as f64;
    let f = model.ffn as f64 / w.tp as f64;
    let k = model.top_k as f64;
    let experts = model.experts;
    let local = (experts / w.ep.max(1)).max(1);
    let rows = t * k / local as f64;
    let mut parts = vec![
        gemm(t, h, experts as f64),
        memory(2.0 * 2.0 * 2.0 * t * k * h),
    ];
    parts.extend(mlp_parts(rows, h, f).map(|p| Part { copies: local, ..p }));
    parts
}

#[cfg(test)]
#[path = "roofline_tests.rs"]
mod tests;
