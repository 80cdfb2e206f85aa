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
        ep: 1,
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
        ep: 1,
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
        ep: 1,
    };
    let mut opts = StepOptions {
        compute_efficiency: None,
        overlap_slowdown: 0.0,
        overlap_source: crate::project::overlap::OverlapSource::Given,
        ..Default::default()
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

#[test]
fn a_moe_layer_computes_k_experts_and_reads_its_local_ones() {
    // Mixtral 8x7B, one 4096-token sequence, tp 1: the GEMMs' FLOPs are 2·T·(active layer
    // parameters but the norms), whatever ep: QKV, output, router h·E and k = 2 experts' MLPs.
    let m = model::presets()
        .into_iter()
        .find(|m| m.name == "mixtral-8x7b")
        .unwrap();
    let t = 4096.0;
    let work = |ep: usize| Work {
        tokens: t,
        seq: 4096,
        tp: 1,
        ep,
    };
    let gemms = |ep: usize| -> (f64, f64, usize) {
        let parts = parts(&m, UnitKind::Layer, &work(ep));
        let g: Vec<&Part> = parts.iter().filter(|p| p.kind == Kind::Gemm).collect();
        (
            g.iter().map(|p| p.flops * p.copies as f64).sum(),
            g.iter().map(|p| p.bytes * p.copies as f64).sum(),
            g.iter().map(|p| p.copies).sum(),
        )
    };
    let (f1, b1, n1) = gemms(1);
    let (f8, b8, n8) = gemms(8);
    let want = 2.0 * t * (m.layer_active_params() - 2 * m.hidden as u64) as f64;
    close(f1, want);
    close(f8, want);
    // QKV, output and router, then three GEMMs per local expert: 8 at ep 1, 1 at ep 8.
    assert_eq!((n1, n8), (3 + 3 * 8, 3 + 3));
    // Each local expert's MLP moves 6·(m·h + h·f + m·f) bytes over its m = T·k/local rows:
    // the token terms add up to the same, the weights 6·h·f per expert held.
    let (h, f) = (4096.0, 14336.0);
    close(b1 - b8, 6.0 * 7.0 * h * f);
    // The flat rule takes the same active FLOPs per token.
    let layer = crate::project::stage::stages(&m, 1, 4096).unwrap()[0].units[1];
    close(
        layer.fwd_flops_per_token,
        2.0 * m.layer_active_params() as f64 + 4.0 * h * 4096.0,
    );
}
