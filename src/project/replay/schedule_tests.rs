//! The replayed schedule against the step model it stands for.

use super::*;
use crate::project::comm::Network;
use crate::project::hardware;
use crate::project::layout::Layout;
use crate::project::model::presets;
use crate::project::roofline::Chip;
use crate::project::specs::profile;
use crate::project::stage::stages;
use crate::project::step::step_time;

fn opts(reshard: bool) -> StepOptions {
    StepOptions {
        reshard,
        compute_efficiency: Some(0.5),
        overlap_slowdown: 0.0,
        overlap_source: crate::project::overlap::OverlapSource::Given,
        ..Default::default()
    }
}

#[test]
fn simulated_schedule_reproduces_the_step_model() {
    let fit = profile("h100-ib400").unwrap();
    let net = Network::new(&fit);
    let model = presets().into_iter().next().unwrap();
    let chip = Chip::new(&hardware::presets()[2]);
    let cases = [(8, 1, false), (8, 2, false), (16, 3, true)];
    for ((world, microbatches, reshard), efficiency) in
        cases.into_iter().zip([Some(0.5), None, None])
    {
        let layout = Layout::new(world, 1, 1, 8).unwrap();
        let st = stages(&model, 1, 4096).unwrap();
        let batch = StepBatch {
            seq: 4096,
            microbatch: 1,
            microbatches,
        };
        let o = StepOptions {
            compute_efficiency: efficiency,
            ..opts(reshard)
        };
        let want = step_time(&model, &chip, &layout, &st, &batch, &o, &net).unwrap();
        let actions = schedule(&ScheduleInput {
            model: &model,
            chip: &chip,
            layout: &layout,
            stage: &st[0],
            batch: &batch,
            opts: &o,
        });
        let got = simulate(&actions, |op, bytes| {
            net.time_s(op, layout.dp_group(), bytes as f64)
        })
        .unwrap();
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(
            rel(got.step_s, want.step_time_s()) < 1e-9,
            "{got:?} {want:?}"
        );
        assert!(rel(got.compute_s, want.compute_s) < 1e-9);
        assert!(rel(got.exposed_comm_s, want.exposed_comm_s) < 1e-9);
        assert!(rel(got.overlapped_comm_s, want.overlapped_comm_s) < 1e-9);
    }
}

/// The schedule of a two-unit stage, one microbatch, written out by hand.
#[test]
fn two_units_gather_prefetch_and_reduce_in_order() {
    let model = presets().into_iter().next().unwrap();
    let mut st = stages(&model, 1, 4096).unwrap().remove(0);
    st.units.truncate(2);
    for (u, (params, flops)) in st.units.iter_mut().zip([(10, 0.0), (20, 3.0)]) {
        u.params = params;
        u.fwd_flops_per_token = flops;
    }
    let layout = Layout::new(2, 1, 1, 8).unwrap();
    let batch = StepBatch {
        seq: 2,
        microbatch: 1,
        microbatches: 1,
    };
    let o = StepOptions {
        compute_efficiency: Some(1.0),
        ..opts(false)
    };
    let chip = Chip {
        peak_flops: 1.0,
        ..Chip::new(&hardware::presets()[2])
    };
    let actions = schedule(&ScheduleInput {
        model: &model,
        chip: &chip,
        layout: &layout,
        stage: &st,
        batch: &batch,
        opts: &o,
    });
    let ag = |bytes| Action::Start {
        op: Op::AllGather,
        bytes,
    };
    let rs = |bytes| Action::Start {
        op: Op::ReduceScatter,
        bytes,
    };
    let c = |s| Action::Compute { s };
    use Action::Wait as W;
    let want = [
        ag(20),
        W,
        ag(40),
        c(0.0),
        W,
        c(6.0),
        W,
        c(12.0),
        W,
        rs(40),
        c(0.0),
        W,
        rs(20),
        W,
    ];
    assert_eq!(actions, want);
    assert_eq!(largest(&actions), 40);
    // Collectives of 1 s each: gather 0 and 1 exposed (unit 0 computes nothing), gather of
    // nothing in unit 1, the ReduceScatter of unit 1 exposed beside unit 0's empty backward, the
    // last one exposed.
    let s = simulate(&actions, |_, _| Ok::<f64, ()>(1.0)).unwrap();
    assert_eq!(s.step_s, 18.0 + 4.0);
    assert_eq!((s.exposed_comm_s, s.overlapped_comm_s), (4.0, 0.0));
}
