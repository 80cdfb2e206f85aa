//! The shapes of NCCL's own cost model (NCCL 2.30.7, `src/graph/tuning.cc`,
//! `ncclTopoTuneModel` lines 384-433 and `ncclTopoGetAlgoTime` lines 630-653), with p ranks on
//! n nodes of r = p/n ranks, S the nccl-tests size and B(p) its bus factor:
//!
//! | form | NCCL | latency | bandwidth |
//! | --- | --- | --- | --- |
//! | `nccl-ring` | ring | `(nsteps − nInter)·intraLat + nInter·interLat`; nsteps `2(p−1)` (AllReduce) or `p−1`, nInter `2(n−1)` or `n−1` | `busBw·p/nsteps`: `B(p)·S·beta` |
//! | `nccl-tree` | tree AllReduce | `2·((r−1)·intraLat + log2i(n)·interLat)`: a chain inside each node, a double binary tree across nodes | ratio 0.5: `S·beta`, whatever p |
//! | `chain` | tree AllReduce on one node | `2(p−1)·intraLat` | `S·beta` |
//! | `nvls` | NVLS | `intraLat`, `+ interLat` across nodes | `B(p)·S·beta` |
//! | `nvls-tree` | NVLSTree AllReduce | `intraLat + 2·log2i(n)·interLat` | `B(p)·S·beta` |
//! | `collnet` | CollNet chain AllReduce | `2(r−1)·intraLat + interLat` | ratio 0.5: `S·beta` |
//! | `flat` | NVLS or CollNet on one node | `alpha` | `B(p)·S·beta` |
//!
//! NCCL adds a base latency per algorithm and protocol (4-14 µs, `baseLatencies`); a linear
//! model without an intercept folds it into the per-step parameters, and the `log-linear` form
//! (which has one) competes with these shapes on held-out worlds. log2i is NCCL's floor of
//! log2. CollNet Direct's per-local-rank arity term (a fixed 0.4 µs in NCCL) falls into
//! `alpha_intra` of `collnet`.

use super::Form;
use crate::collective::{Op, Semantics};

/// The formula in words of an NCCL-shaped form.
pub fn formula(form: Form, op: Op) -> String {
    let steps = if op.ring_phases() == 2 { "2" } else { "" };
    match form {
        Form::NcclRing => {
            format!("{steps}(p-n)·alpha_intra + {steps}(n-1)·alpha_inter + B(p)·S·beta")
        }
        Form::NcclTree => "2(r-1)·alpha_intra + 2·floor(log2 n)·alpha_inter + S·beta".into(),
        Form::Chain => "2(p-1)·alpha + S·beta".into(),
        Form::Nvls => "alpha_intra + [n > 1]·alpha_inter + B(p)·S·beta".into(),
        Form::NvlsTree => "alpha_intra + 2·floor(log2 n)·alpha_inter + B(p)·S·beta".into(),
        Form::CollNet => "2(r-1)·alpha_intra + alpha_inter + S·beta".into(),
        Form::Flat => "alpha + B(p)·S·beta".into(),
        other => other.name().into(),
    }
}

/// Coefficients (S in kB) of an NCCL-shaped form; None where NCCL does not run the algorithm
/// for `op`, or where n does not divide p.
pub fn coefficients(form: Form, op: Op, p: usize, nodes: usize, kb: f64) -> Option<Vec<f64>> {
    if nodes == 0 || p % nodes != 0 || p == 0 {
        return None;
    }
    let n = nodes as f64;
    let r = (p / nodes) as f64;
    let bus = op.busbw_factor(p) * kb;
    let all_reduce = op.semantics() == Semantics::AllReduce;
    // The ops whose ring this form models: 2(p-1) steps for AllReduce, p-1 for AllGather and
    // ReduceScatter (the form gives no coefficients for the other ops).
    let ring_phases = op.ring_phases() > 0;
    match form {
        Form::NcclRing if ring_phases => {
            let times = f64::from(op.ring_phases());
            let inter = times * (n - 1.0);
            let steps = times * (p as f64 - 1.0);
            Some(vec![steps - inter, inter, bus])
        }
        Form::NcclTree if all_reduce => Some(vec![2.0 * (r - 1.0), 2.0 * log2i(nodes), kb]),
        Form::Chain if all_reduce && nodes == 1 => Some(vec![2.0 * (p as f64 - 1.0), kb]),
        Form::Nvls if ring_phases => Some(vec![1.0, if nodes > 1 { 1.0 } else { 0.0 }, bus]),
        Form::NvlsTree if all_reduce => Some(vec![1.0, 2.0 * log2i(nodes), bus]),
        Form::CollNet if all_reduce => Some(vec![2.0 * (r - 1.0), 1.0, kb]),
        Form::Flat if nodes == 1 => Some(vec![1.0, bus]),
        _ => None,
    }
}

/// NCCL's log2i: ⌊log2 n⌋ (0 for n <= 1).
fn log2i(n: usize) -> f64 {
    (usize::BITS - 1 - n.max(1).leading_zeros()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_splits_nccl_steps_into_intra_and_inter_node() {
        // 4 nodes × 8 ranks, AllReduce: 62 steps, 6 of them between nodes; 1 MB moves 2·31/32 MB.
        let c = coefficients(Form::NcclRing, Op::AllReduce, 32, 4, 1e3).unwrap();
        assert_eq!(c, vec![56.0, 6.0, 2.0 * 31.0 / 32.0 * 1e3]);
        let ag = coefficients(Form::NcclRing, Op::AllGather, 32, 4, 1e3).unwrap();
        assert_eq!(ag, vec![28.0, 3.0, 31.0 / 32.0 * 1e3]);
        // One node: every step inside it.
        let one = coefficients(Form::NcclRing, Op::AllReduce, 8, 1, 1.0).unwrap();
        assert_eq!(one[..2], [14.0, 0.0]);
    }

    #[test]
    fn tree_latency_is_a_chain_plus_a_log_of_nodes() {
        // 10 nodes × 8: 2·7 chain steps, 2·floor(log2 10) = 6 tree levels; bandwidth term = S.
        let c = coefficients(Form::NcclTree, Op::AllReduce, 80, 10, 5.0).unwrap();
        assert_eq!(c, vec![14.0, 6.0, 5.0]);
        assert!(coefficients(Form::NcclTree, Op::AllGather, 80, 10, 5.0).is_none());
        assert_eq!(log2i(1), 0.0);
        assert_eq!(log2i(2), 1.0);
        assert_eq!(log2i(1023), 9.0);
        assert_eq!(log2i(1024), 10.0);
    }

    #[test]
    fn nvls_forms_have_flat_intra_node_latency() {
        let one = coefficients(Form::Nvls, Op::AllReduce, 8, 1, 1e3).unwrap();
        assert_eq!(one, vec![1.0, 0.0, 1750.0]);
        let many = coefficients(Form::NvlsTree, Op::AllReduce, 64, 8, 1e3).unwrap();
        assert_eq!(many[..2], [1.0, 6.0]);
        assert_eq!(
            coefficients(Form::CollNet, Op::AllReduce, 64, 8, 2.0).unwrap(),
            vec![14.0, 1.0, 2.0]
        );
        assert_eq!(
            coefficients(Form::Flat, Op::AllGather, 8, 1, 8.0).unwrap(),
            vec![1.0, 7.0]
        );
        assert!(coefficients(Form::Flat, Op::AllGather, 16, 2, 8.0).is_none());
    }

    #[test]
    fn nodes_that_do_not_divide_the_world_are_refused() {
        for form in [Form::NcclRing, Form::NcclTree, Form::Nvls, Form::CollNet] {
            assert!(coefficients(form, Op::AllReduce, 12, 5, 1.0).is_none());
            assert!(coefficients(form, Op::AllReduce, 12, 0, 1.0).is_none());
        }
    }
}
