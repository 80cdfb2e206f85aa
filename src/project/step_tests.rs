//! Step arithmetic on timelines small enough to work out by hand.

use super::*;

fn opts(sigma: f64, reshard: bool) -> StepOptions {
    StepOptions {
        reshard,
        recompute: false,
        hybrid: false,
        compute_efficiency: Some(1.0),
        overlap_slowdown: sigma,
    }
}

fn unit(fwd: f64, gather: f64, reduce: f64) -> UnitCost {
    UnitCost {
        fwd,
        bwd: 2.0 * fwd,
        tp_fwd: 0.0,
        tp_bwd: 0.0,
        gather,
        reduce,
        memory_bound: 0.0,
    }
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
    let u = [unit(1.0, 1.5, 0.5); 3];
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
