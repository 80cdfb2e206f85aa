//! Hardware specifications: one GPU and the node it sits in.
//!
//! The projection uses `peak_tflops`, `hbm_tbps` and the three efficiencies (compute time as a
//! roofline, [`super::roofline`]; MFU), `hbm_gb` (memory check),
//! `gpus_per_node` (placement of groups on nodes) and `idle_w`/`max_w` (power). The link fields
//! (`nvlink_gbps`, `node_network_gbps`) describe the machine for the reader and
//! projection.json; collective times come only from the fit or network profile.
//!
//! Sources: NVIDIA's datasheets for each GPU and the DGX-1, DGX A100 and DGX H100 system
//! whitepapers/datasheets, as collected in Table 1 of the paper
//! (../shared/reference/paper-hardware-scaling-trends.txt). Idle power is a citable public
//! observation where one was found (noted per preset) and otherwise a stated assumption; every
//! number can be overridden with `--hardware file.toml` (`base = "h100"` plus the fields to change).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::physical::{self, Count};

/// GPUs in one node (one NVLink domain): up to 4096 (an NVL72 rack has 72).
const GPUS_PER_NODE: Count = Count { min: 1, max: 4096 };

/// One GPU type and its node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareSpec {
    pub name: String,
    /// Peak dense tensor-core throughput in the training precision (BF16; FP16 on V100), TFLOP/s.
    pub peak_tflops: f64,
    /// HBM capacity, GB (10⁹ bytes, as marketed; the physical GiB are ~7% more, a margin that
    /// stands in for the CUDA context, NCCL buffers and allocator fragmentation).
    pub hbm_gb: f64,
    /// HBM bandwidth, TB/s.
    pub hbm_tbps: f64,
    /// NVLink bandwidth per GPU, GB/s, both directions added (as NVIDIA quotes it).
    pub nvlink_gbps: f64,
    /// GPUs per node (one NVLink domain).
    pub gpus_per_node: usize,
    /// Inter-node (InfiniBand) bandwidth per node, GB/s, as in the paper's Table 1.
    pub node_network_gbps: f64,
    /// Power of a GPU that holds a training process but is not computing (waiting on
    /// communication or in a pipeline bubble), W.
    pub idle_w: f64,
    /// Power while computing: the board power limit (TDP), W.
    pub max_w: f64,
    /// Power while running collectives with nothing to compute (exposed communication), W;
    /// absent: [`COMM_SHARE_OF_TDP`] of `max_w`.
    #[serde(default)]
    pub comm_w: Option<f64>,
    /// Fraction of `peak_tflops` the best large BF16 GEMM reaches (the roofline's ceiling for
    /// matrix multiplies; smaller GEMMs reach less, [`super::roofline`]).
    #[serde(default = "default_gemm_efficiency")]
    pub gemm_efficiency: f64,
    /// Fraction of `peak_tflops` the fused attention kernel (FlashAttention-2) reaches.
    #[serde(default = "default_attention_efficiency")]
    pub attention_efficiency: f64,
    /// Fraction of `hbm_tbps` a large streaming kernel reaches.
    #[serde(default = "default_hbm_efficiency")]
    pub hbm_efficiency: f64,
}

/// Power of a GPU running large AllReduces, as a share of its board power limit: 270 W of
/// 700 W on H100 SXM, the median of the seven AllReduce rows of 64 Mi-512 Mi fp16 elements
/// (2 and 4 GPUs, 230-287 W) that NVIDIA's aiconfigurator measured with NVML's energy counter
/// over back-to-back calls (github.com/ai-dynamo/aiconfigurator, commit 302edbc44bd3,
/// src/aiconfigurator/systems/data/h100_sxm/trtllm/1.2.0rc1/custom_allreduce_perf.txt.bak,
/// column `power`; collector/collect_all_reduce.py). Small messages drew 150-170 W there, and
/// B200 drew 0.46-0.50 of its 1000 W limit at 512 Mi elements (same repository, b200_sxm/comm).
pub const COMM_SHARE_OF_TDP: f64 = 270.0 / 700.0;

/// Assumption for hardware files that do not say: H100's measured GEMM share (0.80, below).
fn default_gemm_efficiency() -> f64 {
    0.80
}

/// Assumption for hardware files that do not say: the low end of FlashAttention-2 on A100.
fn default_attention_efficiency() -> f64 {
    0.50
}

/// Calculon's efficiency of HBM transfers of 100 MB and more (Isaev et al., SC'23;
/// github.com/calculon-ai/calculon systems/*.json `mem1.MB_efficiency`): a model's stated
/// assumption, not a measurement.
fn default_hbm_efficiency() -> f64 {
    0.90
}

/// The bundled GPUs.
pub fn presets() -> Vec<HardwareSpec> {
    vec![
        HardwareSpec {
            name: "v100".into(),
            // V100 SXM2 datasheet: 125 TFLOPS tensor (FP16; Volta has no BF16); paper Table 1.
            peak_tflops: 125.0,
            // V100 SXM2 32GB datasheet: 32 GB HBM2, 900 GB/s.
            hbm_gb: 32.0,
            hbm_tbps: 0.9,
            // DGX-1 (V100) whitepaper: NVLink 2.0, 6 links × 25 GB/s × 2 directions = 300 GB/s.
            nvlink_gbps: 300.0,
            gpus_per_node: 8,
            // Paper Table 1: 100 GB/s per node (the DGX-1 whitepaper lists 4 × 100 Gb/s EDR).
            node_network_gbps: 100.0,
            // Observed: Tesla V100-SXM2 32GB, P0, 0% utilisation, 20 GB allocated: 53 W
            // (nvidia-smi in github.com/zai-org/GLM-130B issue #32).
            idle_w: 53.0,
            // V100 SXM2 datasheet: 300 W.
            max_w: 300.0,
            // Assumption: H100's measured share of the power limit (COMM_SHARE_OF_TDP).
            comm_w: None,
            // Assumption: no published MAMF figure for V100 was found; A100's share (0.86).
            gemm_efficiency: 0.86,
            // Assumption: FlashAttention-2 does not run on Volta; the low end it reaches on A100.
            attention_efficiency: 0.50,
            hbm_efficiency: default_hbm_efficiency(),
        },
        HardwareSpec {
            name: "a100".into(),
            // A100 datasheet: 312 TFLOPS BF16 dense (624 with sparsity); paper Table 1.
            peak_tflops: 312.0,
            // A100 80GB SXM datasheet: 80 GB HBM2e, 2,039 GB/s (paper Table 1: 2 TB/s).
            hbm_gb: 80.0,
            hbm_tbps: 2.039,
            // DGX A100 whitepaper: third-generation NVLink, 600 GB/s per GPU.
            nvlink_gbps: 600.0,
            gpus_per_node: 8,
            // DGX A100: 8 × 200 Gb/s HDR InfiniBand = 200 GB/s per node; paper Table 1.
            node_network_gbps: 200.0,
            // Assumption: ~50 W read for an A100-SXM4 with nothing running
            // (github.com/NVIDIA/dcgm-exporter issue #464) plus the 26-50 W step that holding a
            // CUDA context adds on HBM GPUs (Vadari 2026, arXiv:2605.23918).
            idle_w: 90.0,
            // A100 SXM datasheet: 400 W.
            max_w: 400.0,
            // Assumption: H100's measured share of the power limit (COMM_SHARE_OF_TDP).
            comm_w: None,
            // Measured: 267.9 of 312 TFLOPS (85.9%) for the best BF16 matmul shape, CUDA 12.1
            // (Bekman, ml-engineering, compute/accelerator "Maximum Achievable Matmul FLOPS").
            gemm_efficiency: 0.859,
            // FlashAttention-2 (Dao 2023, abstract): 50-73% of peak on A100; forward at the top.
            attention_efficiency: 0.73,
            hbm_efficiency: default_hbm_efficiency(),
        },
        HardwareSpec {
            name: "h100".into(),
            // H100 SXM5 datasheet: 1,979 TFLOPS BF16 with sparsity = 989 dense; paper: 990.
            peak_tflops: 989.0,
            // H100 SXM5 datasheet: 80 GB HBM3, 3.35 TB/s.
            hbm_gb: 80.0,
            hbm_tbps: 3.35,
            // DGX H100: fourth-generation NVLink, 900 GB/s per GPU.
            nvlink_gbps: 900.0,
            gpus_per_node: 8,
            // DGX H100: 8 × 400 Gb/s NDR InfiniBand (ConnectX-7) = 400 GB/s per node; Table 1.
            node_network_gbps: 400.0,
            // Observed: H100 80GB HBM3, P0, 0-4% utilisation, 72.8 GB allocated: 140-145 W
            // (nvidia-smi in github.com/wilicc/gpu-burn issue #114).
            idle_w: 140.0,
            // H100 SXM5 datasheet: up to 700 W.
            max_w: 700.0,
            // Measured: AllReduce of 64 Mi-512 Mi elements on 2-4 H100 SXM, median 270 W
            // (COMM_SHARE_OF_TDP has the source).
            comm_w: Some(270.0),
            // Measured: 792.1 of 989 TFLOPS (80.1%) for the best BF16 matmul shape, CUDA 12.1
            // (Bekman, ml-engineering, compute/accelerator "Maximum Achievable Matmul FLOPS").
            gemm_efficiency: 0.801,
            // FlashAttention-3 (Shah et al. 2024, abstract): FlashAttention-2, which the paper's
            // runs use, reaches only 35% of peak on H100.
            attention_efficiency: 0.35,
            hbm_efficiency: default_hbm_efficiency(),
        },
        HardwareSpec {
            name: "h200".into(),
            // H200 SXM datasheet: 1,979 TFLOPS BF16 with sparsity = 989 dense (as H100).
            peak_tflops: 989.0,
            // H200 SXM datasheet: 141 GB HBM3e, 4.8 TB/s.
            hbm_gb: 141.0,
            hbm_tbps: 4.8,
            // H200 SXM datasheet: NVLink 900 GB/s.
            nvlink_gbps: 900.0,
            gpus_per_node: 8,
            // DGX H200: 8 × 400 Gb/s ConnectX-7 = 400 GB/s per node.
            node_network_gbps: 400.0,
            // Assumption: as H100 (same Hopper die and board power limit).
            idle_w: 140.0,
            // H200 SXM datasheet: up to 700 W.
            max_w: 700.0,
            // Assumption: H100's measured share of the power limit (COMM_SHARE_OF_TDP).
            comm_w: None,
            // Assumption: as H100 (same die and kernels).
            gemm_efficiency: 0.801,
            attention_efficiency: 0.35,
            hbm_efficiency: default_hbm_efficiency(),
        },
    ]
}

impl HardwareSpec {
    /// Checks every number is physical (the ranges of [`crate::physical`]) and neither idle
    /// nor communication power exceeds the power limit.
    pub fn validate(&self) -> Result<()> {
        let ranges = [
            ("peak_tflops", self.peak_tflops, physical::COMPUTE_TFLOPS),
            ("hbm_gb", self.hbm_gb, physical::MEMORY_GB),
            ("hbm_tbps", self.hbm_tbps, physical::RATE_TBPS),
            ("nvlink_gbps", self.nvlink_gbps, physical::RATE_GBPS),
            (
                "node_network_gbps",
                self.node_network_gbps,
                physical::RATE_GBPS,
            ),
            ("idle_w", self.idle_w, physical::POWER_W),
            ("max_w", self.max_w, physical::POWER_W),
        ];
        for (field, value) in [
            ("gemm_efficiency", self.gemm_efficiency),
            ("attention_efficiency", self.attention_efficiency),
            ("hbm_efficiency", self.hbm_efficiency),
        ] {
            if !(value > 0.0 && value <= 1.0) {
                return Err(bad(
                    &self.name,
                    format!("{field} = {value}: give a fraction of peak in (0, 1]"),
                ));
            }
        }
        for (field, value, range) in ranges {
            range.check(field, value).map_err(|m| bad(&self.name, m))?;
        }
        GPUS_PER_NODE
            .check_usize("gpus_per_node", self.gpus_per_node)
            .map_err(|m| bad(&self.name, m))?;
        if self.max_w == 0.0 {
            return Err(bad(&self.name, "max_w must be positive".into()));
        }
        if let Some(w) = self.comm_w {
            physical::POWER_W
                .check("comm_w", w)
                .map_err(|m| bad(&self.name, m))?;
            if w > self.max_w {
                return Err(bad(
                    &self.name,
                    format!("comm_w {w} must not exceed max_w {}", self.max_w),
                ));
            }
        }
        if !(self.idle_w >= 0.0 && self.idle_w <= self.max_w) {
            return Err(bad(
                &self.name,
                format!(
                    "idle_w {} must lie between 0 and max_w {}",
                    self.idle_w, self.max_w
                ),
            ));
        }
        Ok(())
    }

    /// Power while running collectives with nothing to compute, W.
    pub fn comm_w(&self) -> f64 {
        self.comm_w.unwrap_or(COMM_SHARE_OF_TDP * self.max_w)
    }

    /// Peak FLOP/s.
    pub fn peak_flops(&self) -> f64 {
        self.peak_tflops * 1e12
    }

    /// HBM capacity in bytes.
    pub fn hbm_bytes(&self) -> f64 {
        self.hbm_gb * 1e9
    }

    /// HBM bandwidth in bytes per second.
    pub fn hbm_bytes_per_s(&self) -> f64 {
        self.hbm_tbps * 1e12
    }
}

fn bad(name: &str, msg: String) -> Error {
    Error::usage(format!("hardware {name}: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_follow_the_papers_table() {
        let all = presets();
        for h in &all {
            h.validate().unwrap();
        }
        let table: Vec<(&str, f64, f64, f64)> = all
            .iter()
            .map(|h| {
                (
                    h.name.as_str(),
                    h.peak_tflops,
                    h.nvlink_gbps,
                    h.node_network_gbps,
                )
            })
            .collect();
        assert_eq!(table[0], ("v100", 125.0, 300.0, 100.0));
        assert_eq!(table[1], ("a100", 312.0, 600.0, 200.0));
        assert_eq!(table[2], ("h100", 989.0, 900.0, 400.0));
    }

    #[test]
    fn communication_power_lies_between_idle_and_tdp_and_is_checked() {
        for h in presets() {
            assert!(h.idle_w < h.comm_w() && h.comm_w() < h.max_w, "{}", h.name);
        }
        let mut h = presets().remove(2);
        h.comm_w = None;
        // A file that does not say takes H100's measured share of its power limit.
        assert!((h.comm_w() - 270.0).abs() < 1e-9);
        h.comm_w = Some(701.0);
        let e = h.validate().unwrap_err().to_string();
        assert!(e.contains("comm_w 701 must not exceed max_w 700"), "{e}");
        h.comm_w = Some(f64::NAN);
        assert!(h.validate().unwrap_err().to_string().contains("comm_w"));
    }
}
