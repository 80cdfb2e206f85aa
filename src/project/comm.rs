//! Collective times from a fit.json (or a bundled profile): which model serves which op, group
//! size and level, and its evaluation.
//!
//! A group of a size (and node count) the fit's runs measured uses that curve's own alpha-beta
//! fit (the regime covering the size): a cross-world form cannot know that, say, 4 ranks on 2
//! cores run slower per byte than its `(p−1)/p` shape says. Other groups use the cross-world
//! models. A group spanning nodes uses the fit's model of the op fitted across nodes (the form
//! `fit` selected by its extrapolation error first; evaluated with the group's nodes and ranks
//! per node); only when the fit has none does a single-node model stand in, with a note. A
//! group inside one node uses a model fitted within one node, else a multi-node form with node
//! terms evaluated at one node (its intra-node terms), else any model, with a note. AllGather and ReduceScatter use ring models. AllReduce is NCCL's `auto`: the fastest at the
//! size of the fit's NCCL algorithms for the group ([`super::auto`]); with at most one of them,
//! ring, then tree, then recursive doubling. bf16 models are preferred, then f16, then any dtype (noted). Among NCCL
//! protocols, auto when measured, else the fastest at each size ([`super::protocols`]).
//!
//! A pipeline's point-to-point transfer of B bytes ([`Network::pp_transfer_s`]) is the fit's
//! SendRecv model (`direct`, `alpha + S·beta`, S = B: every rank sends S and receives S) when
//! the fit has one, chosen for the pair's level like any other op; otherwise the AllGather
//! model at p = 2 with S = 2B stands in, with a note: one step of latency plus B bytes at the
//! link's per-byte cost (within a node, or between two nodes). A MoE AllToAll of S bytes per
//! rank over a group ([`Network::alltoall_s`]) is the fit's AllToAll model (`pairwise`,
//! `(p−1)·alpha + (p−1)/p·S·beta`); without one, with a note, the pairwise schedule is composed
//! of point-to-point transfers of its S/p blocks: `(r−1)` steps inside the node and `(p−r)`
//! across nodes for `r` ranks per node, each one pipeline transfer (above) of S/p bytes. Inside
//! one node over the AllGather pair that is exactly the pairwise form with the ring's alpha and
//! beta (the link's latency and per-byte cost).

use std::cell::RefCell;
use std::collections::BTreeSet;

use super::layout::Group;
use super::protocols::{fastest, pool};
use crate::collective::{Algo, DType, Op};
use crate::error::{Error, Result};
use crate::fit::forms::Form;
use crate::fit::schema::{proto_rank, CurveFit, FitFile, WorldModel};

mod p2p;
pub use p2p::{AllToAllModel, P2pModel};

/// The network as the fit describes it.
pub struct Network<'a> {
    fit: &'a FitFile,
    notes: RefCell<BTreeSet<String>>,
    /// AllReduce choices among several algorithms: (ranks, nodes, algo) → (min, max) bytes.
    chosen: RefCell<super::auto::Chosen>,
}

impl<'a> Network<'a> {
    pub fn new(fit: &'a FitFile) -> Network<'a> {
        Network {
            fit,
            notes: RefCell::new(BTreeSet::new()),
            chosen: RefCell::new(Default::default()),
        }
    }

    /// What the lookups had to say (substitute models, dtypes), sorted and deduplicated.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.notes.borrow().iter().cloned().collect();
        notes.extend(super::auto::summary(&self.chosen.borrow()));
        notes
    }

    /// Seconds for `op` over `group` with nccl-tests size `bytes` (0 for a group of one).
    pub fn time_s(&self, op: Op, group: Group, bytes: f64) -> Result<f64> {
        if group.ranks <= 1 || bytes <= 0.0 {
            return Ok(0.0);
        }
        if let Some(us) = self.measured_us(op, group, bytes) {
            return Ok(us.max(0.0) * 1e-6);
        }
        if op == Op::AllReduce {
            if let Some(us) = self.auto_us(group, bytes)? {
                return Ok(us.max(0.0) * 1e-6);
            }
        }
        let (model, form) = self.choose(op, group)?;
        Ok(self.algo_us(op, group, bytes, model, form)?.max(0.0) * 1e-6)
    }

    /// AllReduce as NCCL's tuner picks it: the fastest of the algorithms the fit has a model of
    /// for the group ([`super::auto::NCCL_ALLREDUCE`]), the choice recorded; None when the fit
    /// has at most one of them (then [`Self::choose`]'s order and notes apply, as before).
    fn auto_us(&self, group: Group, bytes: f64) -> Result<Option<f64>> {
        let inter = group.nodes > 1;
        let found: Vec<(&WorldModel, Form)> = super::auto::NCCL_ALLREDUCE
            .iter()
            .filter(|&&a| super::auto::runs(a, group))
            .filter_map(|&a| self.choose_algo(Op::AllReduce, a, inter))
            .collect();
        if found.len() < 2 {
            return Ok(None);
        }
        let mut best: Option<(f64, Algo)> = None;
        for (model, form) in found {
            let us = self.algo_us(Op::AllReduce, group, bytes, model, form)?;
            if best.map_or(true, |(b, _)| us < b) {
                best = Some((us, model.algo));
            }
        }
        let Some((us, algo)) = best else {
            return Ok(None);
        };
        let mut chosen = self.chosen.borrow_mut();
        let range = chosen
            .entry((group.ranks, group.nodes, algo))
            .or_insert((bytes, bytes));
        *range = (range.0.min(bytes), range.1.max(bytes));
        Ok(Some(us))
    }

    /// µs of `model` (the fastest of its protocols where the fit has several).
    fn algo_us(
        &self,
        op: Op,
        group: Group,
        bytes: f64,
        model: &WorldModel,
        form: Form,
    ) -> Result<f64> {
        let (models, note) = pool(
            model,
            self.fit.models.iter(),
            &format!("{op} {}", model.algo),
        );
        if let Some(n) = note {
            self.note(n);
        }
        fastest(&models, |m| model_us(m, form, op, group, bytes))
    }

    /// Seconds to send `bytes` from one rank to another (`pair`: 2 ranks on 1 or 2 nodes) as
    /// the AllGather model at p = 2 with S = 2B estimates it (the fallback of
    /// [`Self::pp_transfer_s`]).
    pub fn p2p_s(&self, pair: Group, bytes: f64) -> Result<f64> {
        self.time_s(Op::AllGather, pair, 2.0 * bytes)
    }

    /// µs from the fit's curve measured at exactly this group's ranks and nodes, if any (the
    /// fastest protocol's where [`pool`] says so).
    fn measured_us(&self, op: Op, group: Group, bytes: f64) -> Option<f64> {
        let curve = algos_of(op)
            .iter()
            .find_map(|&algo| self.measured_curve(op, algo, group))?;
        let what = format!("{op} {} at {} ranks", curve.key.algo, group.ranks);
        let (curves, note) = pool(curve, self.fit.curves.iter(), &what);
        if let Some(n) = note {
            self.note(n);
        }
        self.note(format!(
            "{op} {}: {} ranks on {} node(s) were measured, so that curve's fit is used there",
            curve.key.algo, group.ranks, group.nodes
        ));
        let us = |c: &CurveFit| Ok::<f64, ()>(c.regime(bytes).time_us(bytes));
        fastest(&curves, us).ok()
    }

    fn measured_curve(&self, op: Op, algo: Algo, group: Group) -> Option<&'a CurveFit> {
        let k = |c: &&CurveFit| c.key.clone();
        self.fit
            .curves
            .iter()
            .filter(|c| c.key.op == op && c.key.algo == algo)
            .filter(|c| c.key.world == group.ranks && c.key.nodes.max(1) == group.nodes.max(1))
            .min_by_key(|c| {
                let rank = (dtype_rank(c.key.dtype), c.key.in_place);
                (rank, proto_rank(c.key.proto), k(c))
            })
    }

    fn choose(&self, op: Op, group: Group) -> Result<(&'a WorldModel, Form)> {
        let algos = algos_of(op);
        let inter = group.nodes > 1;
        for &algo in algos {
            if let Some(found) = self.choose_algo(op, algo, inter) {
                return Ok(found);
            }
        }
        Err(self.missing(op, algos[0], inter))
    }

    fn choose_algo(&self, op: Op, algo: Algo, inter: bool) -> Option<(&'a WorldModel, Form)> {
        let across = self.best(op, algo, |m| m.spans_nodes());
        let within = self.best(op, algo, |m| !m.spans_nodes());
        let level = if inter {
            "across nodes"
        } else {
            "within one node"
        };
        let picked = if inter {
            across.or_else(|| {
                within.inspect(|m| {
                    self.note(format!(
                        "{op} {algo}: the fit has no model fitted across nodes, so its \
                         single-node {} model (fitted on worlds {:?}) is used across nodes",
                        m.form, m.worlds
                    ))
                })
            })
        } else {
            within
                .or(across.filter(|m| Form::from_name(&m.form).is_some_and(|f| f.has_node_terms())))
                .or_else(|| {
                    across.inspect(|m| {
                        self.note(format!(
                            "{op} {algo}: the {} model, fitted on {:?} nodes, is used {level}",
                            m.form, m.nodes
                        ))
                    })
                })
        }?;
        if !matches!(picked.dtype, DType::BF16 | DType::F16) {
            self.note(format!(
                "{op} {algo}: the fit's model is for {}, used for bf16 buffers of the same size",
                picked.dtype
            ));
        }
        Some((picked, Form::from_name(&picked.form)?))
    }

    /// The best model of `op` and `algo` passing `keep`: the library's default communicator
    /// setup first; bf16, f16, then others; out of place before in place; NCCL's own protocol
    /// choice before a forced one.
    fn best(
        &self,
        op: Op,
        algo: Algo,
        keep: impl Fn(&WorldModel) -> bool,
    ) -> Option<&'a WorldModel> {
        self.fit
            .models
            .iter()
            .filter(|m| m.op == op && m.algo == algo && keep(m))
            .filter(|m| Form::from_name(&m.form).is_some())
            .min_by_key(|m| {
                let rank = (dtype_rank(m.dtype), m.in_place, proto_rank(m.proto));
                (!m.comm.is_default(), rank, !m.selected)
            })
    }

    fn missing(&self, op: Op, algo: Algo, inter: bool) -> Error {
        let level = if inter { "inter-node" } else { "intra-node" };
        let have: Vec<String> = self
            .fit
            .models
            .iter()
            .map(|m| format!("({}, {}, {})", m.op, m.algo, m.form))
            .collect();
        Error::usage(format!(
            "the fit has no model for ({op}, {algo}, {level}); it has: {}",
            if have.is_empty() {
                "none (a cross-world model needs two or more world sizes of the op; see the \
                 fit's notes)"
                    .to_string()
            } else {
                have.join(", ")
            }
        ))
    }

    fn note(&self, msg: String) {
        self.notes.borrow_mut().insert(msg);
    }
}

/// µs of `model` in `form` for `op` over `group` with size `bytes`.
fn model_us(model: &WorldModel, form: Form, op: Op, group: Group, bytes: f64) -> Result<f64> {
    let x = form
        .coefficients(op, group.ranks, group.nodes, bytes)
        .ok_or_else(|| {
            Error::usage(format!(
                "model {} {} {} cannot describe {} ranks on {} nodes",
                model.op, model.algo, model.form, group.ranks, group.nodes
            ))
        })?;
    if x.len() != model.params.len() {
        return Err(Error::usage(format!(
            "model {} {} {}: {} parameters, its form has {}",
            model.op,
            model.algo,
            model.form,
            model.params.len(),
            x.len()
        )));
    }
    Ok(x.iter()
        .zip(&model.params)
        .map(|(c, p)| c * p.param.value)
        .sum())
}

/// The algorithms whose models stand for `op`, in order of preference (the op's row).
fn algos_of(op: Op) -> &'static [Algo] {
    op.projection_algos()
}

/// bf16 first, then f16, then any other dtype.
fn dtype_rank(d: DType) -> u8 {
    match d {
        DType::BF16 => 0,
        DType::F16 => 1,
        _ => 2,
    }
}

#[cfg(test)]
#[path = "comm_tests.rs"]
pub(crate) mod tests;
