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

    /// The most model chunks an interleaved schedule can give this stage: one per layer, and
    /// the embedding or the head as a chunk of its own (Llama 3 ran its first chunk with only
    /// the embedding and its last with only the head; Dubey et al. 2024, §3.3.2).
    pub fn most_chunks(&self) -> usize {
        self.units.len()
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

/// The stages of `model` over `pp` pipeline stages at sequence length `seq`, or why not. Layers
/// that do not divide evenly go to the middle stages first, then to the first and the last
/// (which also hold the embedding and the head): with `pp − 2` layers over, the ends hold one
/// fewer, as Llama 3 405B's 126 layers ran on 16 stages (Dubey et al. 2024, §3.3.2) and
/// BLOOM's 70 on 12.
pub fn stages(model: &ModelSpec, pp: usize, seq: usize) -> Result<Vec<Stage>, String> {
    if pp == 0 || model.layers < pp {
        return Err(format!(
            "{} layers of {} do not fill pp = {pp} stages (each needs a layer)",
            model.layers, model.name
        ));
    }
    let per = layers_per_stage(model.layers, pp);
    let layer = Unit {
        kind: UnitKind::Layer,
        params: model.layer_params(),
        expert_params: model.layer_expert_params(),
        fwd_flops_per_token: model.layer_fwd_flops(seq),
    };
    let out = (0..pp)
        .map(|index| {
            let mut units = Vec::with_capacity(per[index] + 2);
            if index == 0 {
                units.push(Unit {
                    kind: UnitKind::Embedding,
                    params: model.embedding_params(),
                    expert_params: 0,
                    fwd_flops_per_token: 0.0,
                });
            }
            units.resize(units.len() + per[index], layer);
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

/// `layers` over `pp` stages: `layers / pp` each, and one more on each of the first
/// `layers % pp` stages taken middle stages first, then the first and the last. (With one
/// stage nothing is left over, so the order's repeated stage 0 is never taken.)
fn layers_per_stage(layers: usize, pp: usize) -> Vec<usize> {
    let mut per = vec![layers / pp; pp];
    let order = (1..pp.saturating_sub(1)).chain([0, pp - 1]);
    for i in order.take(layers % pp) {
        per[i] += 1;
    }
    per
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
        assert!(stages(&m, 40, 4096).unwrap_err().contains("32 layers"));
    }

    #[test]
    fn uneven_layers_leave_the_ends_one_short() {
        // Llama 3 405B: 126 layers on 16 stages, 7 on the first and last, 8 between.
        let per = layers_per_stage(126, 16);
        assert_eq!((per[0], per[1], per[14], per[15]), (7, 8, 8, 7));
        assert_eq!(per.iter().sum::<usize>(), 126);
        // BLOOM: 70 on 12; one stage each; 3 on 2: the first holds the extra.
        assert_eq!(
            layers_per_stage(70, 12),
            [5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5]
        );
        assert_eq!(layers_per_stage(5, 5), [1; 5]);
        assert_eq!(layers_per_stage(3, 2), [2, 1]);
        assert_eq!(layers_per_stage(7, 1), [7]);
        let m = presets().into_iter().next().unwrap();
        let s = stages(&m, 3, 4096).unwrap();
        let layers: Vec<usize> = s.iter().map(Stage::layers).collect();
        assert_eq!(layers, [11, 11, 10]);
        assert!(stages(&m, 33, 4096)
            .unwrap_err()
            .contains("do not fill pp = 33"));
    }
}
