//! The scaling metrics with hand-computed numbers.

use super::*;

/// A step of `step` s: `compute` s of compute, `exposed` and `overlapped` s of communication,
/// `tokens` tokens.
fn metrics(step: f64, compute: f64, exposed: f64, overlapped: f64, tokens: f64) -> Metrics {
    Metrics {
        step_time_s: step,
        compute_s: compute,
        overlap_slowdown_s: step - compute - exposed,
        exposed_comm_s: exposed,
        overlapped_comm_s: overlapped,
        bubble_s: 0.0,
        tokens_per_s: tokens / step,
        tokens_per_s_per_gpu: 0.0,
        mfu: 0.4 * compute / step,
        exposed_comm_frac: exposed / step,
        busy_frac: 0.0,
        power_w_per_gpu: 0.0,
        tokens_per_joule: 0.0,
        memory_bound_frac: 0.0,
        alltoall_s: 0.0,
    }
}

fn row(world: usize, tp: usize, m: Option<Metrics>) -> Row {
    Row {
        world,
        nodes: world / 8,
        tp,
        pp: 1,
        dp: world / tp,
        ep: 1,
        global_batch: world,
        microbatches: 1,
        microbatch_size: 1,
        fits_memory: m.is_some(),
        memory_gb: if m.is_some() { 40.0 } else { 90.0 },
        metrics: m,
        best: false,
        marginal_tokens_per_s_per_gpu: None,
        marginal_best_tokens_per_s_per_gpu: None,
        speedup: None,
        parallel_eff: None,
        scaling_eff: None,
        comm_compute_ratio: None,
        bound: Bound::Compute,
        pp_p2p_model: None,
        alltoall_model: None,
    }
}

#[test]
fn bound_rules_in_order() {
    // 6 s compute, 1 s exposed + 3 s hidden: ratio 4/6, exposed 10% of 10 s: compute-bound.
    let m = metrics(10.0, 6.0, 1.0, 3.0, 1.0);
    assert_eq!(comm_compute_ratio(&m), Some(4.0 / 6.0));
    assert_eq!(bound(40.0, 80.0, Some(&m)), Bound::Compute);
    // 76 GB of 80 is 95%: memory-bound before anything else; not projected: memory-bound.
    assert_eq!(bound(76.0, 80.0, Some(&m)), Bound::Memory);
    assert_eq!(bound(75.9, 80.0, Some(&m)), Bound::Compute);
    assert_eq!(bound(90.0, 80.0, None), Bound::Memory);
    // Communication as long as compute (1 + 5 = 6 s): communication-bound.
    let even = metrics(10.0, 6.0, 1.0, 5.0, 1.0);
    assert_eq!(bound(40.0, 80.0, Some(&even)), Bound::Communication);
    // Exposed 3.5 s of 10 s (35% > 30%) though 3.5 s < 6 s of compute: communication-bound.
    let exposed = metrics(10.0, 6.0, 3.5, 0.0, 1.0);
    assert_eq!(bound(40.0, 80.0, Some(&exposed)), Bound::Communication);
    let at_limit = metrics(10.0, 6.0, 3.0, 0.0, 1.0);
    assert_eq!(bound(40.0, 80.0, Some(&at_limit)), Bound::Compute);
    let none = metrics(1.0, 0.0, 1.0, 0.0, 1.0);
    assert_eq!(comm_compute_ratio(&none), None);
    assert_eq!(bound(40.0, 80.0, Some(&none)), Bound::Communication);
    assert_eq!(Bound::Communication.short(), "comm");
}

#[test]
fn speedup_and_scaling_efficiency_by_hand() {
    // Weak: 8 GPUs at 10 s for 80,000 tokens (8,000 tokens/s); 32 GPUs at 12.5 s for 320,000
    // tokens (25,600 tokens/s). S = (32/8)·10/12.5 = 3.2, SE = 3.2·8/32 = 0.8 = T(8)/T(32).
    let (s, se) = against((8, 8000.0), 32, 25_600.0);
    assert!(
        (s - 3.2).abs() < 1e-12 && (se - 0.8).abs() < 1e-12,
        "{s} {se}"
    );
    // Strong: 100,000 tokens in 10 s on 8 GPUs, in 4 s on 32: S = 10/4 = 2.5,
    // SE = 8·10/(32·4) = 0.625.
    let (s, se) = against((8, 10_000.0), 32, 25_000.0);
    assert!(
        (s - 2.5).abs() < 1e-12 && (se - 0.625).abs() < 1e-12,
        "{s} {se}"
    );
    assert_eq!(against((8, 10_000.0), 8, 10_000.0), (1.0, 1.0));
}

#[test]
fn annotate_takes_each_layouts_first_projected_world_as_baseline() {
    let mut rows = vec![
        row(8, 1, Some(metrics(10.0, 8.0, 0.5, 1.0, 80_000.0))),
        row(8, 2, None),
        row(16, 1, Some(metrics(12.5, 8.0, 3.0, 6.0, 160_000.0))),
        row(16, 2, Some(metrics(11.0, 8.0, 1.0, 2.0, 160_000.0))),
        row(32, 2, Some(metrics(11.0, 8.0, 1.0, 2.0, 320_000.0))),
    ];
    annotate(&mut rows, 80.0, Some(0.5));
    let r = &rows[0];
    assert_eq!((r.speedup, r.scaling_eff), (Some(1.0), Some(1.0)));
    // MFU 0.4·8/10 = 0.32 at compute efficiency 0.5: E = 0.64.
    assert!((r.parallel_eff.unwrap() - 0.64).abs() < 1e-12);
    assert_eq!(r.comm_compute_ratio, Some(1.5 / 8.0));
    assert_eq!(r.bound, Bound::Compute);
    assert_eq!((rows[1].speedup, rows[1].bound), (None, Bound::Memory));
    // Weak, 8 → 16: S = 2·10/12.5 = 1.6, SE = 0.8; E = 0.4·8/12.5/0.5 = 0.512 = 0.64·0.8.
    let r = &rows[2];
    assert!((r.speedup.unwrap() - 1.6).abs() < 1e-12);
    assert!((r.scaling_eff.unwrap() - 0.8).abs() < 1e-12);
    assert!((r.parallel_eff.unwrap() - 0.512).abs() < 1e-12);
    assert_eq!(
        (r.comm_compute_ratio, r.bound),
        (Some(9.0 / 8.0), Bound::Communication)
    );
    // tp 2 never fitted at 8: its baseline is 16.
    assert_eq!(
        (rows[3].speedup, rows[3].scaling_eff),
        (Some(1.0), Some(1.0))
    );
    assert_eq!(rows[4].speedup, Some(2.0));
    assert_eq!(rows[4].scaling_eff, Some(1.0));
}

#[test]
fn critical_scale_by_hand() {
    // 0.5 at 8, 1.5 at 32: halfway in ln N, at √(8·32) = 16.
    let c = critical_scale(&[(8, 0.5), (32, 1.5)]).unwrap();
    let Critical::Within { world, between } = c else {
        panic!("{c:?}")
    };
    assert!((world - 16.0).abs() < 1e-9 && between == [8, 32], "{c:?}");
    // 0.2 at 8, 0.6 at 16, 1.6 at 64: crosses between 16 and 64 at 0.4 of the way,
    // 16·4^0.4 = 27.86.
    let c = critical_scale(&[(8, 0.2), (16, 0.6), (64, 1.6)]).unwrap();
    let Critical::Within { world, between } = c else {
        panic!("{c:?}")
    };
    assert!((world - 16.0 * 4f64.powf(0.4)).abs() < 1e-9, "{c:?}");
    assert_eq!(between, [16, 64]);
    // The first crossing counts; exactly 1 at a world is that world.
    let c = critical_scale(&[(8, 0.5), (16, 1.0), (32, 0.8)]).unwrap();
    assert!(
        matches!(c, Critical::Within { world, between: [8, 16] } if (world - 16.0).abs() < 1e-9)
    );
    assert_eq!(
        critical_scale(&[(8, 1.0), (16, 2.0)]),
        Some(Critical::Within {
            world: 8.0,
            between: [8, 8]
        })
    );
    assert_eq!(
        critical_scale(&[(8, 1.2), (16, 2.0)]),
        Some(Critical::Below { world: 8 })
    );
    assert_eq!(
        critical_scale(&[(8, 0.2), (16, 0.4)]),
        Some(Critical::Beyond { world: 16 })
    );
    assert_eq!(critical_scale(&[]), None);
}

#[test]
fn layouts_say_their_critical_scale_and_fit() {
    // tp 1: step times exact for a = 1, b = 0.01, c = 0.
    let step = |n: f64| 1.0 + 0.01 * n;
    let tp1 = [8usize, 16, 32, 64].map(|w| {
        let t = step(w as f64);
        let comm = 0.5 * (w as f64 / 8.0).sqrt();
        row(w, 1, Some(metrics(t, 0.5, 0.0, comm * 0.5, 1.0)))
    });
    let mut rows: Vec<Row> = tp1.into_iter().collect();
    rows.push(row(8, 2, None));
    rows.push(row(16, 2, Some(metrics(2.0, 1.0, 0.1, 0.2, 1.0))));
    let (layouts, notes) = layouts(&rows);
    assert_eq!(layouts.len(), 2);
    let (a, b) = (&layouts[0], &layouts[1]);
    assert_eq!((a.tp, a.baseline_world), (1, Some(8)));
    // Ratios √(N/8)/2: 0.5 at 8, 0.707 at 16, 1 at 32.
    assert!(matches!(
        a.critical,
        Some(Critical::Within {
            between: [16, 32],
            ..
        })
    ));
    let f = a.step_fit.unwrap();
    assert!(
        (f.a_s - 1.0).abs() < 1e-9 && (f.b_s_per_gpu - 0.01).abs() < 1e-9,
        "{f:?}"
    );
    assert!(f.held_out_rel_error.abs() < 1e-9);
    assert_eq!((b.tp, b.baseline_world, b.step_fit), (2, Some(16), None));
    assert_eq!(b.critical, Some(Critical::Beyond { world: 16 }));
    let all = notes.join("\n");
    assert!(all.contains("tp 1 pp 1: communication reaches compute time at about 32 GPUs"));
    assert!(all.contains("fitted without 64, it predicts 1.640 s there against 1.640 s"));
    assert!(all.contains("tp 2 pp 1: communication stays shorter than compute up to 16 GPUs"));
    assert!(all.contains("tp 2 pp 1: no T(N) = a + b·N + c·ln N fit: 1 projected world"));
}
