//! From a step time to what a user compares: throughput, MFU, exposed communication, power
//! and energy efficiency.
//!
//! - tokens/s = global batch × sequence length / step time; per GPU, divided by the world.
//! - MFU (PaLM's model FLOPs utilisation) = model FLOPs per token × tokens/s / (world × peak).
//! - Power: a GPU draws `max_w` while computing (including compute slowed by overlapped
//!   communication), `comm_w` while it only communicates (exposed communication) and `idle_w`
//!   otherwise (pipeline bubble): `max·busy + comm·exposed + idle·(1 − busy − exposed)` with
//!   `busy = (compute + slowdown) / step` and `exposed = exposed communication / step`.
//!   `comm_w` is the mean power NVML measured during the fit's source runs when they have
//!   telemetry, else the hardware's `comm_w` (measured on H100 running large AllReduces,
//!   [`super::hardware::COMM_SHARE_OF_TDP`]): communication kernels draw far more than an idle
//!   GPU and far less than GEMMs. tokens/J = tokens/s per GPU / W per GPU.

use serde::Serialize;

use super::hardware::HardwareSpec;
use super::step::StepTime;

/// The projected numbers of one layout at one world size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Metrics {
    pub step_time_s: f64,
    pub compute_s: f64,
    pub overlap_slowdown_s: f64,
    pub exposed_comm_s: f64,
    pub overlapped_comm_s: f64,
    pub bubble_s: f64,
    pub tokens_per_s: f64,
    pub tokens_per_s_per_gpu: f64,
    pub mfu: f64,
    pub exposed_comm_frac: f64,
    pub busy_frac: f64,
    pub power_w_per_gpu: f64,
    pub tokens_per_joule: f64,
    /// Share of compute time in memory-bound parts (roofline; 0 under the flat rule).
    pub memory_bound_frac: f64,
    /// Of `exposed_comm_s`, the seconds of MoE AllToAlls (0 for dense models and ep = 1).
    pub alltoall_s: f64,
}

/// What a step processes and where power during communication comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepWork {
    pub world: usize,
    pub tokens: f64,
    pub flops_per_token: f64,
    /// Measured power while only communicating, W; `None`: the hardware's `comm_w`.
    pub comm_w: Option<f64>,
}

/// Metrics of a step that processes `w.tokens` tokens on `w.world` GPUs.
pub fn metrics(t: &StepTime, hw: &HardwareSpec, w: &StepWork) -> Metrics {
    let step = t.step_time_s();
    let tokens_per_s = w.tokens / step;
    let per_gpu = tokens_per_s / w.world as f64;
    let busy = ((t.compute_s + t.overlap_slowdown_s) / step).clamp(0.0, 1.0);
    let exposed = (t.exposed_comm_s / step).clamp(0.0, 1.0 - busy);
    let comm_w = w.comm_w.unwrap_or_else(|| hw.comm_w());
    let power = hw.max_w * busy + comm_w * exposed + hw.idle_w * (1.0 - busy - exposed);
    let flops_per_token = w.flops_per_token;
    Metrics {
        step_time_s: step,
        compute_s: t.compute_s,
        overlap_slowdown_s: t.overlap_slowdown_s,
        exposed_comm_s: t.exposed_comm_s,
        overlapped_comm_s: t.overlapped_comm_s,
        bubble_s: t.bubble_s,
        tokens_per_s,
        tokens_per_s_per_gpu: per_gpu,
        mfu: flops_per_token * per_gpu / hw.peak_flops(),
        exposed_comm_frac: t.exposed_comm_s / step,
        busy_frac: busy,
        power_w_per_gpu: power,
        tokens_per_joule: per_gpu / power,
        memory_bound_frac: if t.compute_s > 0.0 {
            t.memory_bound_s / t.compute_s
        } else {
            0.0
        },
        alltoall_s: t.alltoall_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::hardware::presets;

    #[test]
    fn by_hand() {
        let h100 = presets().into_iter().nth(2).unwrap();
        // 6 s compute, 2 s slowdown, 1 s exposed, 1 s bubble: step 10 s, busy 0.8.
        let t = StepTime {
            compute_s: 6.0,
            overlap_slowdown_s: 2.0,
            exposed_comm_s: 1.0,
            overlapped_comm_s: 3.0,
            bubble_s: 1.0,
            memory_bound_s: 1.5,
            alltoall_s: 0.0,
        };
        // 8 GPUs, 80,000 tokens per step at 1e12 FLOP per token.
        let work = StepWork {
            world: 8,
            tokens: 80_000.0,
            flops_per_token: 1e12,
            comm_w: None,
        };
        let m = metrics(&t, &h100, &work);
        assert_eq!(m.tokens_per_s, 8000.0);
        assert_eq!(m.tokens_per_s_per_gpu, 1000.0);
        assert!((m.mfu - 1e15 / 989e12).abs() < 1e-12);
        assert_eq!(m.exposed_comm_frac, 0.1);
        assert_eq!(m.memory_bound_frac, 0.25);
        // H100's 270 W while communicating: 700·0.8 + 270·0.1 + 140·0.1 = 601 W; 1000 / 601
        // tokens per joule.
        assert!((m.power_w_per_gpu - 601.0).abs() < 1e-9);
        assert!((m.tokens_per_joule - 1000.0 / 601.0).abs() < 1e-12);
        // 300 W measured while communicating: 700·0.8 + 300·0.1 + 140·0.1 = 604 W.
        let measured = metrics(
            &t,
            &h100,
            &StepWork {
                comm_w: Some(300.0),
                ..work
            },
        );
        assert!((measured.power_w_per_gpu - 604.0).abs() < 1e-9);
        assert_eq!(measured.tokens_per_s, m.tokens_per_s);
    }
}
