//! Step arithmetic on timelines small enough to work out by hand.

use super::*;
use crate::project::overlap::OverlapSource;

fn opts(sigma: f64, reshard: bool) -> StepOptions {
    StepOptions {
        reshard,
        compute_efficiency: Some(1.0),
        overlap_slowdown: sigma,
        overlap_source: OverlapSource::Given,
        ..Default::default()
    }
}

fn unit(fwd: f64, gather: f64, reduce: f64) -> UnitCost {
    UnitCost {
        fwd,
        bwd: 2.0 * fwd,
        tp_fwd: 0.0,
        tp_bwd: 0.0,
        tp_ar: 0.0,
        gather,
        reduce,
        memory_bound: 0.0,
        sigma: 0.0,
        comm: 1.0,
    }
}

/// [`unit`] whose collectives overlap compute at `(sigma, comm)`.
fn slowed(u: UnitCost, (sigma, comm): (f64, f64)) -> UnitCost {
    UnitCost { sigma, comm, ..u }
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
}

#[test]
fn fsdp_prefetch_hides_all_but_the_ends() {
    // Three units: forward 1 s, backward 2 s, AllGather 1.5 s, ReduceScatter 0.5 s, no slowdown.
    // Forward: AllGather 0 exposed (1.5); unit 0 hides 1 of AllGather 1 (0.5 exposed); unit 1
    // likewise; unit 2 has nothing beside it. Backward: units 1 and 0 hide the ReduceScatters of
    // units 2 and 1; the ReduceScatter of unit 0 is exposed (0.5).
    let u = [unit(1.0, 1.5, 0.5); 3];
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.0, false));
    close(t.compute_s, 9.0);
    close(t.exposed_comm_s, 1.5 + 0.5 + 0.5 + 0.5);
    close(t.overlapped_comm_s, 1.0 + 1.0 + 0.5 + 0.5);
    close(t.bubble_s, 0.0);
    close(t.step_time_s(), 12.0);
}

#[test]
fn overlapped_compute_slows_down() {
    // Same timeline, σ = 0.5: forward windows stretch 1 s of compute to 1.5 s, exactly the
    // AllGather, so nothing is exposed there but 0.5 s is lost twice; backward windows carry
    // 0.5 s of ReduceScatter each, costing 0.5·0.5/1.5 = 1/6 s.
    let u = [slowed(unit(1.0, 1.5, 0.5), (0.5, 1.0)); 3];
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.5, false));
    close(t.overlap_slowdown_s, 1.0 + 2.0 / 6.0);
    close(t.exposed_comm_s, 1.5 + 0.5);
    close(t.step_time_s(), 9.0 + 4.0 / 3.0 + 2.0);
}

#[test]
fn reshard_gathers_again_in_backward() {
    // Two units, forward 1, backward 2, AllGather 1, ReduceScatter 1. Backward starts with the
    // exposed AllGather of unit 1, unit 1 hides the prefetch of unit 0, unit 0 hides the
    // ReduceScatter of unit 1, and the ReduceScatter of unit 0 is exposed.
    let u = [unit(1.0, 1.0, 1.0); 2];
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.0, true));
    close(t.exposed_comm_s, 1.0 + 1.0 + 1.0);
    close(t.overlapped_comm_s, 3.0);
    close(t.step_time_s(), 9.0);
    // Without re-sharding the backward AllGathers vanish.
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.0, false));
    close(t.exposed_comm_s, 1.0 + 1.0);
}

#[test]
fn pipeline_bubble_is_pp_minus_one_microbatches() {
    // One unit (1 + 2 s), two microbatches, two stages, 0.1 s of point to point per microbatch:
    // bubble (pp−1)·(3 + 0.1) = 3.1, a third of the step, as (pp−1)/(m+pp−1) says.
    let u = [unit(1.0, 0.0, 0.0)];
    let t = stage_time(&u, 2, 2, 0.1, &opts(0.0, false));
    close(t.compute_s, 6.0);
    close(t.exposed_comm_s, 0.2);
    close(t.bubble_s, 3.1);
    close(t.bubble_s / t.step_time_s(), 1.0 / 3.0);
}

#[test]
fn gradients_are_reduced_once_per_step_without_reshard() {
    // Two microbatches: the first gathers, the last reduces; the middle runs compute only.
    let u = [unit(1.0, 0.25, 0.25); 2];
    let t = stage_time(&u, 2, 1, 0.0, &opts(0.0, false));
    close(t.exposed_comm_s, 0.25 + 0.25);
    close(t.overlapped_comm_s, 0.25 + 0.25);
    let t = stage_time(&u, 2, 1, 0.0, &opts(0.0, true));
    close(t.exposed_comm_s, 2.0 * (0.25 + 0.25 + 0.25));
}

use crate::project::layout::Group;
use crate::project::moe::alltoall_bytes;

/// `a` within a relative 1e-12 of `b`.
fn near(a: f64, b: f64) {
    assert!(((a - b) / b).abs() < 1e-12, "{a} vs {b}");
}

/// A two-layer MoE model small enough to work out by hand: h 64, f 128, 4 experts, top-2.
fn tiny_moe() -> ModelSpec {
    ModelSpec {
        name: "tiny-moe".into(),
        layers: 2,
        hidden: 64,
        ffn: 128,
        heads: 4,
        kv_heads: 4,
        vocab: 256,
        seq_len: 32,
        tied_embeddings: false,
        experts: 4,
        top_k: 2,
    }
}

/// The H100 profile with a pairwise AllToAll model within a node: `alpha_us` µs a step,
/// 0.004 ns/B.
fn a2a_fit(alpha_us: f64) -> crate::fit::schema::FitFile {
    use crate::collective::Algo;
    use crate::fit::forms::Form;
    let mut fit = crate::project::specs::profile("h100-ib400").unwrap();
    let key = (Op::AllToAll, Algo::Pairwise, Form::Pairwise);
    crate::project::comm::tests::add_model(&mut fit, key, &[4, 8], &[1, 1], alpha_us, 0.004);
    fit
}

/// (step time, stage) of `model` on 8 GPUs of one node, tp 1, pp 1, expert-parallel `ep`, one
/// microbatch of one sequence of 32 tokens, flat compute.
fn moe_step(
    model: &ModelSpec,
    ep: usize,
    recompute: bool,
    fit: &crate::fit::schema::FitFile,
) -> StepTime {
    moe_step_loaded(model, ep, recompute, fit, 1.0)
}

/// [`moe_step`] with the busiest expert-parallel rank at `ep_load` times the mean.
fn moe_step_loaded(
    model: &ModelSpec,
    ep: usize,
    recompute: bool,
    fit: &crate::fit::schema::FitFile,
    ep_load: f64,
) -> StepTime {
    let chip = Chip::new(&crate::project::hardware::presets()[2]);
    let layout = Layout::new(8, 1, 1, 8).unwrap().with_ep(ep).unwrap();
    let stages = crate::project::stage::stages(model, 1, 32).unwrap();
    let batch = StepBatch {
        seq: 32,
        microbatch: 1,
        microbatches: 1,
    };
    let o = StepOptions {
        recompute,
        ep_load,
        ep_router: None,
        ..opts(0.0, false)
    };
    step_time(
        model,
        &chip,
        &layout,
        &stages,
        &batch,
        &o,
        &Network::new(fit),
    )
    .unwrap()
}

#[test]
fn moe_alltoall_volume_and_time_by_hand() {
    let m = tiny_moe();
    // S = tokens · k · h · 2 bytes: 32 · 2 · 64 · 2 = 8192 bytes per rank.
    assert_eq!(alltoall_bytes(&m, 32.0), 8192.0);
    // ep 4 inside the node: 3·15 + 3/4·8.192 kB·0.004 = 45.024576 µs per AllToAll; per layer
    // a dispatch and a combine forward and their gradients backward: 2 layers × 4 = 8 of them.
    let fit = a2a_fit(15.0);
    let one = 3.0 * 15.0 + 0.75 * 8.192 * 0.004;
    let t = moe_step(&m, 4, false, &fit);
    near(t.alltoall_s * 1e6, 8.0 * one);
    // Recomputation runs each layer's forward, and so its two AllToAlls, again: 12.
    let r = moe_step(&m, 4, true, &fit);
    near(r.alltoall_s * 1e6, 12.0 * one);
    // Blocking: every microsecond more per AllToAll step is exposed, 8 × 3 steps.
    let slower = moe_step(&m, 4, false, &a2a_fit(16.0));
    near((slower.exposed_comm_s - t.exposed_comm_s) * 1e6, 8.0 * 3.0);
    near((slower.step_time_s() - t.step_time_s()) * 1e6, 8.0 * 3.0);
    // ep 1 and dense models have none.
    assert_eq!(moe_step(&m, 1, false, &fit).alltoall_s, 0.0);
}

#[test]
fn a_skewed_router_makes_the_busiest_rank_set_the_alltoall() {
    let m = tiny_moe();
    let fit = a2a_fit(15.0);
    // Load 1.5: the busiest rank moves 1.5 × 8192 bytes per AllToAll, the steps stay 3.
    let one = 3.0 * 15.0 + 0.75 * 1.5 * 8.192 * 0.004;
    let t = moe_step_loaded(&m, 4, false, &fit, 1.5);
    near(t.alltoall_s * 1e6, 8.0 * one);
    assert!(t.step_time_s() > moe_step(&m, 4, false, &fit).step_time_s());
}

#[test]
fn expert_parameters_are_gathered_over_the_ranks_holding_them() {
    use crate::project::model::presets;
    use crate::project::stage::stages;
    let m = presets()
        .into_iter()
        .find(|m| m.name == "mixtral-8x7b")
        .unwrap();
    let fit = crate::project::specs::profile("h100-ib400").unwrap();
    let net = Network::new(&fit);
    let layer = stages(&m, 1, 4096).unwrap()[0].units[1];
    assert_eq!(layer.kind, UnitKind::Layer);
    // 16 GPUs on 2 nodes, dp 16, ep 8: the non-expert 41,984,000 parameters (83,968,000 bytes)
    // over the 16 DP ranks, the GPU's 1 of 8 experts (352,321,536 bytes) over the 2 ranks
    // holding the same experts (ranks 0 and 8, one per node). Two-level AllGather, µs:
    // (r−1)·3.4 + (r−1)/r·S·(1/360) + (n−1)·37.8 + (n−1)/n·S/r·(1/45), S in kB.
    let two_level = |r: f64, n: f64, kb: f64| {
        (r - 1.0) * 3.4
            + (r - 1.0) / r * kb / 360.0
            + (n - 1.0) * 37.8
            + (n - 1.0) / n * kb / r / 45.0
    };
    let l8 = Layout::new(16, 1, 1, 8).unwrap().with_ep(8).unwrap();
    assert_eq!(l8.expert_dp_group(), Group { ranks: 2, nodes: 2 });
    assert_eq!(l8.ep_group(), Group { ranks: 8, nodes: 1 });
    let (gather, reduce) = fsdp_times(&layer, &l8, &net).unwrap();
    let want = two_level(8.0, 2.0, 83_968.0) + two_level(1.0, 2.0, 352_321.536);
    near(gather * 1e6, want);
    near(reduce * 1e6, want);
    // ep 1: the whole layer, all 8 experts, over the DP group, as for a dense model.
    let l1 = Layout::new(16, 1, 1, 8).unwrap();
    let (gather, _) = fsdp_times(&layer, &l1, &net).unwrap();
    near(gather * 1e6, two_level(8.0, 2.0, 2_902_540.288));
}

#[test]
fn overlapped_collectives_slowed_by_the_measured_factor_expose_more() {
    // The first timeline with overlapped collectives twice as slow: the AllGathers beside units
    // 0 and 1 last 3 s against 1 s of compute (2 exposed each); the ReduceScatters beside
    // backward last 1 s within 2 s (hidden). The blocking ends (the first AllGather, the last
    // ReduceScatter) run alone, as fast as alone.
    let u = [slowed(unit(1.0, 1.5, 0.5), (0.0, 2.0)); 3];
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.0, false));
    close(t.compute_s, 9.0);
    close(t.exposed_comm_s, 1.5 + 2.0 + 2.0 + 0.5);
    close(t.overlapped_comm_s, 1.0 + 1.0 + 1.0 + 1.0);
    close(t.step_time_s(), 15.0);
}

#[test]
fn each_overlapped_collective_takes_the_slowdowns_of_its_own_unit() {
    // Only unit 1's collectives are slowed (x2, σ 0.5): its AllGather beside unit 0's forward
    // lasts 3 s against 1.5 s of stretched compute (1.5 exposed, 0.5 lost); unit 2's beside
    // unit 1 is as fast as alone (0.5 exposed). Backward: unit 1's ReduceScatter (1 s) beside
    // unit 0 costs 1·0.5/1.5 s; unit 2's (0.5 s) beside unit 1 nothing.
    let plain = unit(1.0, 1.5, 0.5);
    let u = [plain, slowed(plain, (0.5, 2.0)), plain];
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.0, false));
    close(t.exposed_comm_s, 1.5 + 1.5 + 0.5 + 0.5);
    close(t.overlap_slowdown_s, 0.5 + 1.0 / 3.0);
    // The measured table gives each unit the values at its own size (`unit_costs`).
    let table = crate::project::overlap_sizes::OverlapSizes::of(&[
        crate::project::overlap_sizes::SizeSlowdowns {
            bytes: 1e6,
            sigma: 0.1,
            comm: 1.1,
        },
        crate::project::overlap_sizes::SizeSlowdowns {
            bytes: 1e8,
            sigma: 0.3,
            comm: 1.5,
        },
    ]);
    assert_eq!(table.at(1e5), Some((0.1, 1.1)));
    assert_eq!(table.at(1e9), Some((0.3, 1.5)));
}

#[test]
fn fsdp_left_after_compute_runs_beside_tp_allreduces_where_measured() {
    use crate::project::at_once::TpBesideDp;
    use crate::project::overlap::both_at_once;
    // Two units, forward 1, backward 2, AllGather 1.5, ReduceScatter 0.5, TP AllReduces 0.4
    // after each pass. One after the other: forward 1.5 (first gather) + 0.5 (left of the
    // prefetch) + 0.4 + 0.4; backward 0.4 + 0.4 + 0.5 (last ReduceScatter): 4.1 s exposed.
    let tp = UnitCost {
        tp_fwd: 0.4,
        tp_bwd: 0.4,
        tp_ar: 0.4,
        ..unit(1.0, 1.5, 0.5)
    };
    let u = [tp; 2];
    let t = stage_time(&u, 1, 1, 0.0, &opts(0.0, false));
    close(t.exposed_comm_s, 4.1);
    // At once, the AllReduce x1.5 and the AllGather x2: unit 0's 0.4 s of AllReduce ends at
    // 0.6 s, by when the gather has done 0.3 of its 0.5 left; the other 0.2 runs alone: 0.8 s
    // where one after the other took 0.9. No other window leaves anything beside them.
    let beside = TpBesideDp {
        allreduce: 1.5,
        gather: 2.0,
        reduce: 3.0,
    };
    let o = StepOptions {
        tp_beside_dp: Some(beside),
        ..opts(0.0, false)
    };
    let t = stage_time(&u, 1, 1, 0.0, &o);
    close(t.exposed_comm_s, 4.0);
    close(t.overlapped_comm_s, 1.0 + 0.5 + 0.1);
    // The other way round, the gather ends first; unslowed, the longer of the two.
    close(both_at_once(0.4, 0.5, (3.0, 1.2)), 0.6 + 0.2);
    close(both_at_once(0.4, 0.5, (1.0, 1.0)), 0.5);
    close(both_at_once(0.5, 0.4, (1.0, 1.0)), 0.5);
}

#[test]
fn an_interleaved_schedule_divides_the_bubble_by_its_chunks() {
    // As pipeline_bubble_is_pp_minus_one_microbatches, with 4 chunks per stage: 3.1 / 4.
    let u = [unit(1.0, 0.0, 0.0)];
    let o = StepOptions {
        virtual_stages: 4,
        ..opts(0.0, false)
    };
    let t = stage_time(&u, 2, 2, 0.1, &o);
    close(t.bubble_s, 3.1 / 4.0);
    close(t.exposed_comm_s, 0.2);
}
