//! Point-to-point transfers and MoE AllToAlls: which of the fit's models times them, with the
//! fallbacks of the [`super`] module docs when the fit has no SendRecv or AllToAll model.

use super::{algos_of, Network};
use crate::collective::Op;
use crate::error::Result;
use crate::fit::forms::Form;
use crate::project::layout::Group;

impl Network<'_> {
    /// Which model times a point-to-point transfer over `pair`: the fit's SendRecv model when
    /// it has one (a model of the op, or a curve measured on exactly this pair), else the
    /// AllGather pair.
    pub fn p2p_model(&self, pair: Group) -> P2pModel {
        if self.has_model(Op::SendRecv, pair) {
            P2pModel::SendRecv
        } else {
            P2pModel::AllGatherPair
        }
    }

    /// Seconds of one pipeline transfer of `bytes` over `pair` (module docs); a note says which
    /// model timed it ([`Self::p2p_model`]).
    pub fn pp_transfer_s(&self, pair: Group, bytes: f64) -> Result<f64> {
        let (s, model) = self.transfer_s(pair, bytes)?;
        match model {
            P2pModel::SendRecv => self.note(format!(
                "point-to-point transfers {} use the fit's SendRecv model",
                level(pair)
            )),
            P2pModel::AllGatherPair => self.note(
                "the fit has no SendRecv model, so a point-to-point transfer of B bytes is \
                 the AllGather model at p = 2 with S = 2B (one step of latency plus B bytes \
                 at the link's cost); measure one with `collbench sweep --op sendrecv`"
                    .to_string(),
            ),
        }
        Ok(s)
    }

    /// Seconds of one transfer of `bytes` over `pair` by [`Self::p2p_model`], without a note
    /// (the caller says what the transfer is for).
    fn transfer_s(&self, pair: Group, bytes: f64) -> Result<(f64, P2pModel)> {
        let model = self.p2p_model(pair);
        let s = match model {
            P2pModel::SendRecv => self.time_s(Op::SendRecv, pair, bytes)?,
            P2pModel::AllGatherPair => self.p2p_s(pair, bytes)?,
        };
        Ok((s, model))
    }

    /// Which model times a MoE AllToAll over `group`; None for a group of one rank.
    pub fn alltoall_model(&self, group: Group) -> Option<AllToAllModel> {
        if group.ranks <= 1 {
            return None;
        }
        Some(if self.has_model(Op::AllToAllV, group) {
            AllToAllModel::AllToAllV
        } else if self.has_model(Op::AllToAll, group) {
            AllToAllModel::AllToAll
        } else {
            AllToAllModel::Pairwise(self.p2p_model(Group {
                ranks: 2,
                nodes: group.nodes.min(2),
            }))
        })
    }

    /// Seconds of one AllToAll of `bytes` per rank (the nccl-tests S: a block of S/p for every
    /// rank; for an uneven one, the busiest rank's bytes) over `group`, timed by
    /// [`Self::alltoall_model`] (module docs); 0 for one rank.
    pub fn alltoall_s(&self, group: Group, bytes: f64) -> Result<f64> {
        let Some(model) = self.alltoall_model(group) else {
            return Ok(0.0);
        };
        let s = match model {
            AllToAllModel::AllToAllV => {
                self.note(
                    "every MoE AllToAll is timed by the fit's alltoallv model, its size the \
                     busiest rank's bytes (the mean times the router's load ratio)"
                        .to_string(),
                );
                self.time_s(Op::AllToAllV, group, bytes)?
            }
            AllToAllModel::AllToAll => self.time_s(Op::AllToAll, group, bytes)?,
            AllToAllModel::Pairwise(p2p) => {
                let timed = match p2p {
                    P2pModel::SendRecv => "the fit's SendRecv model",
                    P2pModel::AllGatherPair => "the AllGather model at p = 2 (no SendRecv model)",
                };
                self.note(format!(
                    "the fit has no AllToAll model, so an AllToAll over {} ranks on {} node(s) \
                     is the pairwise schedule of point-to-point transfers of its S/p blocks, \
                     each timed by {timed}; measure one with `collbench sweep --op alltoall`",
                    group.ranks, group.nodes
                ));
                self.pairwise_s(group, bytes)?
            }
        };
        Ok(s)
    }

    /// The pairwise AllToAll as point-to-point steps: `r − 1` to peers in the node and `p − r`
    /// to peers in other nodes, each a transfer of `bytes/p`.
    fn pairwise_s(&self, group: Group, bytes: f64) -> Result<f64> {
        let p = group.ranks as f64;
        let nodes = group.nodes.max(1);
        let r = group.per_node().max(1) as f64;
        let block = bytes / p;
        let intra = Group { ranks: 2, nodes: 1 };
        let mut s = (r - 1.0) * self.transfer_s(intra, block)?.0;
        if nodes > 1 {
            let inter = Group { ranks: 2, nodes: 2 };
            s += (p - r) * self.transfer_s(inter, block)?.0;
        }
        Ok(s)
    }

    /// Whether the fit can time `op` over `group` from its own data: a curve measured at
    /// exactly this group, or a cross-world model of one of the op's algorithms (of any level:
    /// [`Self::choose`] substitutes one for the other with a note).
    fn has_model(&self, op: Op, group: Group) -> bool {
        algos_of(op).iter().any(|&algo| {
            self.measured_curve(op, algo, group).is_some()
                || self
                    .fit
                    .models
                    .iter()
                    .any(|m| m.op == op && m.algo == algo && Form::from_name(&m.form).is_some())
        })
    }
}

/// The model a point-to-point transfer used (projection.csv and .json `pp_p2p_model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2pModel {
    /// The fit's SendRecv model.
    SendRecv,
    /// The AllGather model at p = 2 with S = 2B.
    AllGatherPair,
}

impl P2pModel {
    pub fn name(self) -> &'static str {
        match self {
            P2pModel::SendRecv => "sendrecv",
            P2pModel::AllGatherPair => "allgather-pair",
        }
    }
}

/// The model a MoE AllToAll used (projection.csv and .json `alltoall_model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllToAllModel {
    /// The fit's AllToAllV model (an uneven exchange timed by its busiest rank's bytes).
    AllToAllV,
    /// The fit's AllToAll model.
    AllToAll,
    /// The pairwise schedule of point-to-point transfers, each timed by this model.
    Pairwise(P2pModel),
}

impl AllToAllModel {
    pub fn name(self) -> &'static str {
        match self {
            AllToAllModel::AllToAllV => "alltoallv",
            AllToAllModel::AllToAll => "alltoall",
            AllToAllModel::Pairwise(P2pModel::SendRecv) => "pairwise-sendrecv",
            AllToAllModel::Pairwise(P2pModel::AllGatherPair) => "pairwise-allgather-pair",
        }
    }
}

/// "within one node" or "between nodes", for notes.
fn level(pair: Group) -> &'static str {
    if pair.nodes > 1 {
        "between nodes"
    } else {
        "within one node"
    }
}
