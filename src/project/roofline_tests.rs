//! The roofline on parts worked out by hand, the flat rule it replaces, and the direction the
//! paper reports (H100 reaches a smaller share of its peak than A100).

use super::*;
use crate::project::plan::{project, Request};
use crate::project::{hardware, model, specs};

fn gpu(name: &str) -> HardwareSpec {
    hardware::presets()
        .into_iter()
        .find(|h| h.name == name)
        .unwrap()
}

fn llama2_7b() -> ModelSpec {
    model::presets().into_iter().next().unwrap()
}

fn close(a: f64, b: f64) {
    assert!(((a - b) / b).abs() < 1e-12, "{a} vs {b}");
}

#[test]
fn a_big_gemm_is_compute_bound_at_the_measured_efficiency() {
    // 8192³ on A100: 2·8192³ = 1.0995e12 FLOP (over 128 GFLOP: full efficiency), at
    // 0.859 × 312e12 FLOP/s = 4.102 ms; its 3·8192²·2 = 402.7 MB at 0.9 × 2.039 TB/s take 0.219 ms.
    let chip = Chip::new(&gpu("a100"));
    let (s, memory) = part_seconds(&gemm(8192.0, 8192.0, 8192.0), &chip);
    assert!(!memory);
    close(s, 2.0 * 8192f64.powi(3) / (0.859 * 312e12));
    // A skinny 64-row GEMM (2·64·4096·4096 = 2.1 GFLOP at 0.6/0.95 of the ceiling: 12.7 µs)
    // moves 2·(2·64·4096 + 4096²) = 34.6 MB (10-100 MB: 0.75 of 2.039 TB/s: 22.6 µs): memory bound.
    let (small, memory) = part_seconds(&gemm(64.0, 4096.0, 4096.0), &chip);
    assert!(memory);
    close(
        small,
        2.0 * (2.0 * 64.0 * 4096.0 + 4096.0 * 4096.0) / (0.75 * 2.039e12),
    );
}

#[test]
fn a_norm_is_memory_bound_at_the_hbm_rate() {
    // RMSNorm over 4096 tokens × 4096 wide in bf16: read and write 2·2·4096² = 67.1 MB
    // (10-100 MB: 0.75/0.90 of the chip's 0.9), on H100 at 0.75 × 3.35e12 B/s = 26.7 µs.
    let chip = Chip::new(&gpu("h100"));
    let bytes = 2.0 * 2.0 * 4096.0 * 4096.0;
    let (s, memory_bound) = part_seconds(&memory(bytes), &chip);
    assert!(memory_bound);
    close(s, bytes / (0.75 * 3.35e12));
}

#[test]
fn compute_efficiency_reproduces_the_flat_rule_exactly() {
    let m = llama2_7b();
    let chip = Chip::new(&gpu("h100"));
    let stage = &crate::project::stage::stages(&m, 1, 4096).unwrap()[0];
    let w = Work {
        tokens: 2.0 * 4096.0,
        seq: 4096,
        tp: 2,
    };
    for u in &stage.units {
        let got = unit_seconds(&m, &chip, u, &w, ComputeModel::Flat(0.5));
        let fwd = u.fwd_flops_per_token * w.tokens / 2.0 / (989e12 * 0.5);
        assert_eq!(got.fwd, fwd);
        assert_eq!(got.bwd, 2.0 * fwd);
        assert_eq!(got.memory_bound, 0.0);
    }
    assert_eq!(optimizer_seconds(&chip, 1e9, ComputeModel::Flat(0.5)), 0.0);
}

#[test]
fn a_layer_is_mostly_gemm_time_with_a_memory_bound_share() {
    // llama2-7b, one 4096-token sequence: the roofline's layer forward lies between its FLOPs at
    // the GEMM ceiling and that plus every byte at the HBM rate; H100's memory-bound share is
    // larger than A100's, its FLOP/s having grown ~3x and its HBM bandwidth ~1.6x.
    let m = llama2_7b();
    let layer = crate::project::stage::stages(&m, 1, 4096).unwrap()[0].units[1];
    let w = Work {
        tokens: 4096.0,
        seq: 4096,
        tp: 1,
    };
    let share = |name: &str| {
        let chip = Chip::new(&gpu(name));
        let s = unit_seconds(&m, &chip, &layer, &w, ComputeModel::Roofline);
        let floor = layer.fwd_flops_per_token * 4096.0 / chip.peak_flops;
        assert!(s.fwd > floor && s.bwd == 2.0 * s.fwd, "{name}: {s:?}");
        s.memory_bound / (s.fwd + s.bwd)
    };
    let (a, h) = (share("a100"), share("h100"));
    assert!(a > 0.0 && h > a, "{a} {h}");
}

/// llama2-7b FSDP on `gpu_name` at worlds 8 and 128 under the roofline.
fn request(gpu_name: &str) -> Request {
    let mut req = crate::project::plan::tests::request("llama2-7b", gpu_name, &[1], &[1]);
    req.worlds = vec![8, 128];
    req.opts.compute_efficiency = None;
    req
}

#[test]
fn h100_reaches_a_smaller_share_of_peak_than_a100() {
    let mfu = |gpu_name: &str, profile: &str| {
        let p = project(&request(gpu_name), &specs::profile(profile).unwrap()).unwrap();
        let m: Vec<f64> = p.rows.iter().map(|r| r.metrics.unwrap().mfu).collect();
        (m[0], m[1])
    };
    let (a8, a128) = mfu("a100", "a100-ib200");
    let (h8, h128) = mfu("h100", "h100-ib400");
    assert!(h8 < a8 && h128 < a128, "a100 {a8} {a128}, h100 {h8} {h128}");
    assert!(a128 < a8 && h128 < h8);
}

#[test]
fn recomputation_adds_one_forward_to_layers_only() {
    use crate::project::stage::stages;
    use crate::project::step::{unit_compute, StepOptions};
    let chip = Chip::new(&gpu("h100"));
    let m = llama2_7b();
    let st = stages(&m, 1, 4096).unwrap();
    let units = &st[0].units;
    let w = Work {
        tokens: 4096.0,
        seq: 4096,
        tp: 1,
    };
    let mut opts = StepOptions {
        reshard: false,
        hybrid: false,
        recompute: false,
        compute_efficiency: None,
        overlap_slowdown: 0.0,
    };
    let plain: Vec<_> = units
        .iter()
        .map(|u| unit_compute(&m, &chip, u, &w, &opts))
        .collect();
    opts.recompute = true;
    for (u, p) in units.iter().zip(&plain) {
        let r = unit_compute(&m, &chip, u, &w, &opts);
        if u.kind == UnitKind::Layer {
            // Backward = recomputed forward + the usual two forwards; a third more memory-bound
            // time (the forward's share of it again).
            close(r.bwd, p.bwd + p.fwd);
            close(r.fwd, p.fwd);
            close(r.memory_bound, p.memory_bound * 4.0 / 3.0);
        } else {
            assert_eq!(&r, p);
        }
    }
}
