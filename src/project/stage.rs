//! Pipeline stages and the units FSDP gathers one at a time.
//!
//! The model is cut into `pp` stages of `L/pp` layers; the first stage also holds the input
//! embedding, the last the final norm and output head. Each layer, the embedding and the head is
//! one FSDP unit (one AllGather of its parameters, one ReduceScatter of its gradients), as
//! FSDP wraps a Llama model per transformer block plus the root module.

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
    /// Forward FLOPs per token.
    pub fwd_flops_per_token: f64,
}

/// One pipeline stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub index: usize,
    pub units: Vec<Unit>,
}

impl Stage {
    /// Parameters of the stage.
    pub fn params(&self) -> u64 {
        self.units.iter().map(|u| u.params).sum()
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
        fwd_flops_per_token: model.layer_fwd_flops(seq),
    };
    let out = (0..pp)
        .map(|index| {
            let mut units = Vec::with_capacity(per + 2);
            if index == 0 {
                units.push(Unit {
                    kind: UnitKind::Embedding,
                    params: model.embedding_params(),
                    fwd_flops_per_token: 0.0,
                });
            }
            units.resize(units.len() + per, layer);
            if index + 1 == pp {
                units.push(Unit {
                    kind: UnitKind::Head,
                    params: model.head_params(),
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
