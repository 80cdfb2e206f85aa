//! Pipeline stages and the units FSDP gathers one at a time.
//!
//! The model is cut into `pp` stages of `L/pp` layers; the first stage also holds the input
//! embedding, the last the final norm and output head. Each layer, the embedding and the head is
//! one FSDP unit (one AllGather of its parameters, one ReduceScatter of its gradients), as
//! FSDP wraps a Llama model per transformer block plus the root module. A MoE layer's experts
//! are part of its unit; with expert parallelism (`ep` > 1) a GPU holds `E/ep` of them
//! ([`Unit::local_params`]), which FSDP gathers over the ranks holding the same experts.

use super::model::ModelSpec;

/// What a unit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    Embedding,
    Layer,
    Head,
}

/// One FSDP unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    pub kind: UnitKind,
    /// Parameters of the whole unit (before tensor parallelism splits it).
    pub params: u64,
    /// Of `params`, those in MoE experts (0 for dense layers, the embedding and the head).
    pub expert_params: u64,
    /// Forward FLOPs per token.
    pub fwd_flops_per_token: f64,
}

/// One pipeline stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub index: usize,
    pub units: Vec<Unit>,
}

impl Unit {
    /// Parameters of the unit one GPU of an expert-parallel group of `ep` holds (before tensor
    /// parallelism): all but the experts, and `1/ep` of the experts.
    pub fn local_params(&self, ep: usize) -> f64 {
        if ep <= 1 {
            return self.params as f64;
        }
        (self.params - self.expert_params) as f64 + self.expert_params as f64 / ep as f64
    }
}

impl Stage {
    /// Parameters of the stage.
    pub fn params(&self) -> u64 {
        self.units.iter().map(|u| u.params).sum()
    }

    /// Parameters of the stage one GPU of an expert-parallel group of `ep` holds.
    pub fn local_params(&self, ep: usize) -> f64 {
        if ep <= 1 {
            return self.params() as f64;
        }
        self.units.iter().map(|u| u.local_params(ep)).sum()
    }

    /// The largest unit's parameters on one GPU of an expert-parallel group of `ep`.
    pub fn max_unit_local_params(&self, ep: usize) -> f64 {
        self.units
            .iter()
            .map(|u| u.local_params(ep))
            .fold(0.0, f64::max)
    }

    /// Transformer layers in the stage.
    pub fn layers(&self) -> usize {
        self.units
            .iter()
            .filter(|u| u.kind == UnitKind::Layer)
            .count()
    }

    /// The largest unit's parameters.
    pub fn max_unit_params(&self) -> u64 {
        self.units.iter().map(|u| u.params).max().unwrap_or(0)
    }

    /// Whether the stage ends with the output head.
    pub fn has_head(&self) -> bool {
        self.units.iter().any(|u| u.kind == UnitKind::Head)
    }
}

/// The stages of `model` over `pp` pipeline stages at sequence length `seq`, or why not.
pub fn stages(model: &ModelSpec, pp: usize, seq: usize) -> Result<Vec<Stage>, String> {
    if pp == 0 || model.layers % pp != 0 {
        return Err(format!(
            "{} layers of {} do not divide into pp = {pp} equal stages",
            model.layers, model.name
        ));
    }
    let per = model.layers / pp;
    let layer = Unit {
        kind: UnitKind::Layer,
        params: model.layer_params(),
        expert_params: model.layer_expert_params(),
        fwd_flops_per_token: model.layer_fwd_flops(seq),
    };
    let out = (0..pp)
        .map(|index| {
            let mut units = Vec::with_capacity(per + 2);
            if index == 0 {
                units.push(Unit {
                    kind: UnitKind::Embedding,
                    params: model.embedding_params(),
                    expert_params: 0,
                    fwd_flops_per_token: 0.0,
                });
            }
            units.resize(units.len() + per, layer);
            if index + 1 == pp {
                units.push(Unit {
                    kind: UnitKind::Head,
                    params: model.head_params(),
                    expert_params: 0,
                    fwd_flops_per_token: model.head_fwd_flops(),
                });
            }
            Stage { index, units }
        })
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::model::presets;

    #[test]
    fn stages_split_layers_and_hold_the_ends() {
        let m = presets().into_iter().next().unwrap();
        let s = stages(&m, 2, 4096).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].layers(), s[1].layers()), (16, 16));
        assert_eq!(s[0].units[0].kind, UnitKind::Embedding);
        assert!(s[1].has_head() && !s[0].has_head());
        assert_eq!(s[0].params() + s[1].params(), m.total_params());
        assert!(stages(&m, 3, 4096).unwrap_err().contains("32 layers"));
    }
}
