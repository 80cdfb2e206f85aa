//! One microbatch of one stage, unit by unit: each unit's compute with FSDP's collectives
//! beside it (a window, [`Acc::window`]), then its blocking collectives.
//!
//! Where the fit measured a TP AllReduce at once with a DP AllGather or ReduceScatter
//! (`sweep --concurrent`, [`TpBesideDp`]), the FSDP communication a window leaves exposed keeps
//! running on its stream beside the unit's TP AllReduces, as a training step's streams run
//! them, each slowed as measured; without that measurement the two run one after the other.

use super::at_once::TpBesideDp;
use super::overlap::Acc;

/// Per-microbatch seconds of one unit.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct UnitCost {
    pub fwd: f64,
    pub bwd: f64,
    /// Blocking activation collectives after the unit's forward and backward: TP's AllReduces
    /// and a MoE layer's AllToAlls.
    pub tp_fwd: f64,
    pub tp_bwd: f64,
    /// The TP AllReduces among them, of one pass (forward or backward).
    pub tp_ar: f64,
    pub gather: f64,
    pub reduce: f64,
    pub memory_bound: f64,
    /// σ and the collective's slowdown while the unit's gather or reduce overlaps compute.
    pub sigma: f64,
    pub comm: f64,
}

/// Which FSDP collectives one microbatch runs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Passes {
    gather_fwd: bool,
    gather_bwd: bool,
    reduce: bool,
}

pub(super) fn passes(mb: usize, microbatches: usize, reshard: bool) -> Passes {
    Passes {
        gather_fwd: reshard || mb == 0,
        gather_bwd: reshard,
        reduce: reshard || mb + 1 == microbatches,
    }
}

/// A unit's compute with the next unit's AllGather beside it, at that collective's slowdowns;
/// then its blocking collectives, the TP AllReduces beside what is left of the AllGather
/// where `beside` was measured.
pub(super) fn forward(acc: &mut Acc, units: &[UnitCost], p: Passes, beside: Option<TpBesideDp>) {
    if p.gather_fwd {
        acc.blocking(units[0].gather);
    }
    let at_once = beside.map(|b| (b.allreduce, b.gather));
    for (i, u) in units.iter().enumerate() {
        let left = match units.get(i + 1) {
            Some(n) if p.gather_fwd => acc.window(u.fwd, n.gather * n.comm, n.sigma),
            _ => acc.window(u.fwd, 0.0, u.sigma),
        };
        blocking_after(acc, left, (u.tp_ar, u.tp_fwd), at_once);
    }
}

/// A unit's backward with the later unit's ReduceScatter and the earlier one's AllGather
/// beside it, each at its own slowdowns (σ the larger of the two that run); then its blocking
/// collectives, as forward's.
pub(super) fn backward(acc: &mut Acc, units: &[UnitCost], p: Passes, beside: Option<TpBesideDp>) {
    let k = units.len();
    if p.gather_bwd {
        acc.blocking(units[k - 1].gather);
    }
    for i in (0..k).rev() {
        let reduce = (units.get(i + 1)).filter(|_| p.reduce);
        let gather = (i.checked_sub(1).map(|j| &units[j])).filter(|_| p.gather_bwd);
        let x =
            reduce.map_or(0.0, |u| u.reduce * u.comm) + gather.map_or(0.0, |u| u.gather * u.comm);
        let sigma = (reduce.iter().chain(&gather))
            .map(|u| u.sigma)
            .reduce(f64::max)
            .unwrap_or(units[i].sigma);
        let left = acc.window(units[i].bwd, x, sigma);
        // The ReduceScatter's slowdown where one runs, else the AllGather's.
        let dp = |b: TpBesideDp| if reduce.is_some() { b.reduce } else { b.gather };
        let at_once = beside.map(|b| (b.allreduce, dp(b)));
        blocking_after(acc, left, (units[i].tp_ar, units[i].tp_bwd), at_once);
    }
    if p.reduce {
        acc.blocking(units[0].reduce);
    }
}

/// A unit's blocking collectives (`all` seconds, TP's AllReduces `tp_ar` of them) after a
/// window that left `left` exposed: the AllReduces beside it where `at_once` was measured,
/// the rest after.
fn blocking_after(acc: &mut Acc, left: f64, (tp_ar, all): (f64, f64), at_once: Option<(f64, f64)>) {
    match at_once {
        Some(ab) => {
            acc.tp_beside(left, tp_ar, Some(ab));
            acc.blocking(all - tp_ar);
        }
        None => acc.blocking(all),
    }
}
