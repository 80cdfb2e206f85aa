//! The projection end to end on the bundled profiles: the directions the paper reports, and
//! refusals of impossible requests.

use super::*;
use crate::project::metrics::Metrics;
use crate::project::{hardware, model, specs};

const WORLDS: [usize; 9] = [8, 16, 32, 64, 128, 256, 512, 1024, 2048];

/// A request for a preset model and GPU over [`WORLDS`], flat compute at half of peak.
pub(in crate::project) fn request(model: &str, gpu: &str, tps: &[usize], pps: &[usize]) -> Request {
    Request {
        model: model::presets()
            .into_iter()
            .find(|m| m.name == model)
            .unwrap(),
        hardware: hardware::presets()
            .into_iter()
            .find(|h| h.name == gpu)
            .unwrap(),
        worlds: WORLDS.to_vec(),
        tps: tps.to_vec(),
        pps: pps.to_vec(),
        eps: vec![1],
        seq: 4096,
        batch: Batch::Weak { local: 1 },
        microbatches: None,
        opts: StepOptions {
            compute_efficiency: Some(0.5),
            overlap_source: crate::project::overlap::OverlapSource::Given,
            ..Default::default()
        },
        comm_power_w: None,
        unfit_steps: false,
    }
}

fn run(req: &Request, profile: &str) -> Projection {
    project(req, &specs::profile(profile).unwrap()).unwrap()
}

fn fsdp(p: &Projection, world: usize) -> Metrics {
    let r = p
        .rows
        .iter()
        .find(|r| r.world == world && r.tp == 1 && r.pp == 1);
    r.unwrap().metrics.expect("FSDP-only fits")
}

#[test]
fn fsdp_alone_loses_per_gpu_throughput_mfu_and_energy_efficiency_with_scale() {
    let p = run(&request("llama2-7b", "h100", &[1], &[1]), "h100-ib400");
    let m: Vec<Metrics> = WORLDS.iter().map(|&w| fsdp(&p, w)).collect();
    for (w, pair) in WORLDS.windows(2).zip(m.windows(2)) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            b.tokens_per_s_per_gpu < a.tokens_per_s_per_gpu,
            "{w:?}: {a:?} {b:?}"
        );
        assert!(b.mfu < a.mfu, "{w:?}");
        assert!(b.tokens_per_joule < a.tokens_per_joule, "{w:?}");
    }
    // Diminishing returns: total throughput still grows, but far from linearly.
    let (first, last) = (&m[0], &m[8]);
    assert!(last.tokens_per_s > first.tokens_per_s);
    assert!(last.tokens_per_s_per_gpu < 0.8 * first.tokens_per_s_per_gpu);
}

#[test]
fn at_2048_gpus_small_model_parallelism_beats_fsdp_alone() {
    let p = run(
        &request("llama2-7b", "h100", &[1, 2, 4], &[1, 2, 4]),
        "h100-ib400",
    );
    let alone = fsdp(&p, 2048).tokens_per_s;
    let better: Vec<(usize, usize)> = p
        .rows
        .iter()
        .filter(|r| r.world == 2048 && (r.tp > 1 || r.pp > 1))
        .filter(|r| r.metrics.is_some_and(|m| m.tokens_per_s > alone))
        .map(|r| (r.tp, r.pp))
        .collect();
    assert!(!better.is_empty(), "{:#?}", p.rows);
    // ... while on one node FSDP alone is best.
    let best8 = p.rows.iter().find(|r| r.world == 8 && r.best).unwrap();
    assert_eq!((best8.tp, best8.pp), (1, 1));
}

#[test]
fn exposed_communication_at_2048_is_larger_on_h100_than_a100() {
    let h = run(&request("llama2-7b", "h100", &[1], &[1]), "h100-ib400");
    let a = run(&request("llama2-7b", "a100", &[1], &[1]), "a100-ib200");
    let (h, a) = (fsdp(&h, 2048), fsdp(&a, 2048));
    assert!(h.exposed_comm_frac > a.exposed_comm_frac, "{h:?} {a:?}");
}

#[test]
fn layouts_that_do_not_fit_are_reported_not_projected() {
    let mut req = request("llama2-70b", "h100", &[1, 4], &[1]);
    req.worlds = vec![64];
    let p = run(&req, "h100-ib400");
    let alone = p.rows.iter().find(|r| r.tp == 1).unwrap();
    assert!(!alone.fits_memory && alone.metrics.is_none() && !alone.best);
    assert!(alone.memory_gb > 80.0);
}

#[test]
fn best_and_marginal_columns() {
    let mut req = request("llama2-7b", "h100", &[1], &[1]);
    req.worlds = vec![8, 16];
    let p = run(&req, "h100-ib400");
    assert!(p.rows.iter().all(|r| r.best));
    let (a, b) = (fsdp(&p, 8), fsdp(&p, 16));
    let want = (b.tokens_per_s - a.tokens_per_s) / 8.0;
    assert_eq!(p.rows[1].marginal_tokens_per_s_per_gpu, Some(want));
    assert_eq!(p.rows[1].marginal_best_tokens_per_s_per_gpu, Some(want));
    assert_eq!(p.rows[0].marginal_tokens_per_s_per_gpu, None);
}

#[test]
fn impossible_requests_are_explained() {
    let fit = specs::profile("h100-ib400").unwrap();
    let msg = |req: &Request| project(req, &fit).unwrap_err().to_string();
    let mut req = request("llama2-7b", "h100", &[3], &[1]);
    assert!(msg(&req).contains("32 heads of llama2-7b are not divisible by tp"));
    req.tps = vec![1];
    req.pps = vec![33];
    assert!(msg(&req).contains("32 layers of llama2-7b do not fill pp = 33 stages"));
    req.pps = vec![1];
    req.worlds = vec![12];
    assert!(msg(&req).contains("world 12 is not a whole number of 8-GPU nodes"));
    req.worlds = vec![4];
    req.tps = vec![8];
    assert!(msg(&req)
        .contains("world 4: no layout can run (tp 8 pp 1: tp·pp = 8 does not divide world 4)"));
    // A combination that fails at one world but not at others is skipped with a note.
    req.worlds = vec![4, 8];
    req.tps = vec![1, 8];
    let p = project(&req, &fit).unwrap();
    assert_eq!(p.rows.len(), 3);
    assert!(p.notes[0].contains("world 4, tp 8 pp 1"), "{:?}", p.notes);
}

#[test]
fn strong_scaling_keeps_the_global_batch() {
    let mut req = request("llama2-7b", "h100", &[1, 2], &[1]);
    req.worlds = vec![8, 16];
    req.batch = Batch::Strong { global: 16 };
    let p = run(&req, "h100-ib400");
    assert!(p.rows.iter().all(|r| r.global_batch == 16));
    let r = p.rows.iter().find(|r| r.world == 16 && r.tp == 2).unwrap();
    assert_eq!((r.dp, r.microbatch_size), (8, 2));
}

#[test]
fn scaling_metrics_of_fsdp_on_h100() {
    let p = run(&request("llama2-7b", "h100", &[1], &[1]), "h100-ib400");
    let (first, last) = (&p.rows[0], &p.rows[8]);
    assert_eq!((first.speedup, first.scaling_eff), (Some(1.0), Some(1.0)));
    // Weak scaling: SE = T(8)/T(2048), E = MFU / 0.5, S = 256·SE.
    let (m0, m8) = (first.metrics.unwrap(), last.metrics.unwrap());
    let se = last.scaling_eff.unwrap();
    assert!((se - m0.step_time_s / m8.step_time_s).abs() < 1e-12);
    assert!((last.speedup.unwrap() - 256.0 * se).abs() < 1e-9);
    assert!((last.parallel_eff.unwrap() - m8.mfu / 0.5).abs() < 1e-12);
    for pair in p.rows.windows(2) {
        assert!(pair[1].scaling_eff < pair[0].scaling_eff, "{pair:?}");
    }
    assert_eq!(
        (first.bound, last.bound),
        (Bound::Compute, Bound::Communication)
    );
    let l = &p.layouts[0];
    assert_eq!((l.tp, l.pp, l.baseline_world), (1, 1, Some(8)));
    let Some(scaling::Critical::Within { world, between }) = l.critical else {
        panic!("{l:?}")
    };
    assert!(
        world > between[0] as f64 && world < between[1] as f64,
        "{l:?}"
    );
    let fit = l.step_fit.unwrap();
    assert_eq!((fit.worlds, fit.held_out_world), (9, 2048));
    assert!(p.notes.iter().any(|n| n.contains("(N_crit, interpolated")));
}

#[test]
fn strong_scaling_speedup_is_the_step_time_ratio() {
    let mut req = request("llama2-7b", "h100", &[1], &[1]);
    req.worlds = vec![8, 16, 32];
    req.batch = Batch::Strong { global: 32 };
    let p = run(&req, "h100-ib400");
    // Four sequences per GPU do not fit at 8: the baseline is 16.
    assert_eq!((p.rows[0].speedup, p.rows[0].bound), (None, Bound::Memory));
    assert_eq!(p.layouts[0].baseline_world, Some(16));
    let t = |i: usize| p.rows[i].metrics.unwrap().step_time_s;
    let (s, se) = (p.rows[2].speedup.unwrap(), p.rows[2].scaling_eff.unwrap());
    assert!((s - t(1) / t(2)).abs() < 1e-12);
    assert!((se - 16.0 * t(1) / (32.0 * t(2))).abs() < 1e-12);
    // Two projected worlds: no T(N) fit, said in a note.
    assert_eq!(p.layouts[0].step_fit, None);
    let refused = "2 projected world size(s), 4 needed";
    assert!(p.notes.iter().any(|n| n.contains(refused)), "{:?}", p.notes);
}

#[test]
fn expert_parallel_degrees_are_checked() {
    let fit = specs::profile("h100-ib400").unwrap();
    let msg = |req: &Request| project(req, &fit).unwrap_err().to_string();
    // A dense model has no experts to spread.
    let mut req = request("llama2-7b", "h100", &[1], &[1]);
    req.eps = vec![1, 2];
    let e = msg(&req);
    assert!(
        e.contains("--ep 2: llama2-7b is a dense model") && e.contains("--ep 1"),
        "{e}"
    );
    // ep must divide the experts.
    let mut req = request("mixtral-8x7b", "h100", &[1], &[1]);
    req.seq = 4096;
    req.eps = vec![3];
    let e = msg(&req);
    assert!(
        e.contains("--ep 3: the 8 experts of mixtral-8x7b") && e.contains("1, 2, 4, 8"),
        "{e}"
    );
    req.eps = vec![16];
    assert!(msg(&req).contains("--ep 16"));
    // Hybrid sharding of expert-parallel layouts is not modelled.
    req.eps = vec![8];
    req.opts.hybrid = true;
    let e = msg(&req);
    assert!(
        e.contains("--ep 8 with --hybrid") && e.contains("leave out --hybrid"),
        "{e}"
    );
    req.opts.hybrid = false;
    // ep must divide dp: at world 8 with tp 2, dp 4 cannot hold ep 8; alone it is an error,
    // beside a layout that can run it is skipped with a note.
    req.worlds = vec![8];
    req.tps = vec![2];
    let e = msg(&req);
    assert!(
        e.contains("world 8: no layout can run (tp 2 pp 1 ep 8: ep 8 does not divide dp 4"),
        "{e}"
    );
    req.eps = vec![4, 8];
    let p = project(&req, &fit).unwrap();
    assert_eq!(p.rows.iter().map(|r| r.ep).collect::<Vec<_>>(), vec![4]);
    assert!(
        p.notes[0].contains("world 8, tp 2 pp 1 ep 8: ep 8 does not divide dp 4"),
        "{:?}",
        p.notes
    );
}

#[test]
fn moe_rows_record_their_alltoall_and_transfer_models() {
    // Mixtral on the H100 profile (no SendRecv or AllToAll model): ep 8 on 32 GPUs, pp 1 and 2.
    let mut req = request("mixtral-8x7b", "h100", &[1], &[1, 2]);
    (req.seq, req.worlds, req.eps) = (4096, vec![32], vec![1, 8]);
    req.opts.reshard = true;
    let p = run(&req, "h100-ib400");
    let row = |pp: usize, ep: usize| p.rows.iter().find(|r| (r.pp, r.ep) == (pp, ep)).unwrap();
    assert_eq!(p.rows.len(), 4);
    for r in &p.rows {
        assert_eq!(
            r.pp_p2p_model,
            (r.pp > 1).then_some("allgather-pair"),
            "{r:?}"
        );
        let a2a = (r.ep > 1).then_some("pairwise-allgather-pair");
        assert_eq!(r.alltoall_model, a2a, "{r:?}");
    }
    // Per step: 32 layers × 4 AllToAlls of S = 4096·2·4096·2 bytes over 8 ranks in a node,
    // each 7 pairwise steps of S/8 at the NVLink pair's 3.4 µs + B/360 µs per kB; with pp 2,
    // 2 microbatches on a stage of 16 layers: the same count.
    let s_kb = 4096.0 * 2.0 * 4096.0 * 2.0 / 1e3;
    let one = 7.0 * (3.4 + s_kb / 8.0 / 360.0);
    for pp in [1, 2] {
        let m = row(pp, 8).metrics.unwrap();
        assert!(
            (m.alltoall_s * 1e6 / (128.0 * one) - 1.0).abs() < 1e-12,
            "{m:?}"
        );
        assert!(m.alltoall_s < m.exposed_comm_s);
        assert_eq!(row(pp, 1).metrics.unwrap().alltoall_s, 0.0);
    }
    // Expert parallelism shrinks memory (each GPU holds 1 of 8 experts) and raises throughput.
    assert!(row(1, 8).memory_gb < row(1, 1).memory_gb);
    let tps = |pp, ep| row(pp, ep).metrics.unwrap().tokens_per_s;
    assert!(tps(1, 8) > tps(1, 1));
    assert_eq!(
        p.layouts.iter().map(|l| l.ep).collect::<Vec<_>>(),
        vec![1, 8, 1, 8]
    );
}

#[test]
fn virtual_stages_need_pipeline_stages_with_that_many_chunks() {
    let fit = specs::profile("h100-ib400").unwrap();
    // 16 layers on each of two stages, and the embedding or the head as a chunk of its own.
    let mut req = request("llama2-7b", "h100", &[1], &[2]);
    req.opts.virtual_stages = 18;
    let e = project(&req, &fit).unwrap_err().to_string();
    assert!(e.contains("its fewest has 17"), "{e}");
    req.opts.virtual_stages = 17;
    assert!(project(&req, &fit).is_ok());
    req.pps = vec![1];
    req.opts.virtual_stages = 2;
    assert!(project(&req, &fit).is_err());
}
