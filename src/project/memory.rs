//! Memory per GPU against HBM.
//!
//! For each pipeline stage (the largest decides), with `P` = the stage's parameters divided by
//! tensor parallelism:
//!
//! - **Model states, sharded**: AdamW in mixed precision keeps 16 bytes per parameter (bf16
//!   parameters 2 + bf16 gradients 2 + fp32 master copy, momentum and variance 12; Rajbhandari et
//!   al. 2020, ZeRO §3), divided over the FSDP shard group (the DP group; the node's DP ranks with
//!   hybrid sharding).
//! - **Gathered parameters** (bf16): without re-sharding after forward every unit of the stage
//!   stays gathered until its backward, `2·P`; with re-sharding, the unit in use and the one
//!   prefetched.
//! - **Gradient buffers** (bf16, unsharded): the unit being computed and the one being
//!   reduce-scattered; with gradient accumulation over several microbatches (and no re-sharding,
//!   where the ReduceScatter waits for the last microbatch), the whole stage's, `2·P`.
//! - **Activations** (no recomputation): Korthikanti et al. 2022, "Reducing Activation
//!   Recomputation in Large Transformer Models", eq. 1-2: `s·b·h·(34 + 5·a·s/h)` bytes per layer,
//!   with tensor parallelism (no sequence parallelism) `s·b·h·(10 + 24/t + 5·a·s/(h·t))`. The
//!   `5·a·s/h` term is the stored attention matrix, which FlashAttention (used by the paper)
//!   does not keep, so it is left out. The formula is for GPT-style blocks; a Llama block (no
//!   dropout, SwiGLU) stores within a few percent of it. Stage `i` of a 1F1B pipeline holds
//!   `min(m, pp − i)` microbatches; the last stage adds fp32 logits, `4·s·b·V/t` (same paper).
//!
//! **Mixture of experts** with expert-parallel degree `ep`: `P` counts the GPU's own experts,
//! `E/ep` of them ([`Stage::local_params`]), for gathered parameters and gradient buffers. Model
//! states stay `16·(stage parameters)/(t·dp)`: the non-expert parameters are sharded over the
//! `dp` ranks and the local experts over the `dp/ep` ranks holding the same experts, which is
//! the same share. Activations: the MLP's per-token activations in the paper's breakdown (§4.1:
//! the input to the first linear `2·sbh` and, split by TP, `16·sbh/t` inside) are kept for each
//! of the k experts a token is routed to, so a layer stores `s·b·h·(10 + 24/t + (k − 1)·(2 +
//! 16/t))`; k = 1 is the dense formula.

use super::layout::Layout;
use super::model::ModelSpec;
use super::stage::Stage;

/// What goes into the memory check besides the model and layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryInput {
    pub seq: usize,
    /// Sequences per microbatch.
    pub microbatch: usize,
    pub microbatches: usize,
    pub reshard: bool,
    /// Full activation recomputation.
    pub recompute: bool,
    /// Ranks the model states are sharded over.
    pub shard_ranks: usize,
}

/// Bytes per GPU on the stage that needs the most.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Memory {
    pub stage: usize,
    pub states: f64,
    pub params: f64,
    pub grads: f64,
    pub activations: f64,
}

impl Memory {
    pub fn total(&self) -> f64 {
        self.states + self.params + self.grads + self.activations
    }
}

/// Activation bytes of one layer for `b` sequences (Korthikanti et al. 2022, without the
/// attention-matrix term; a MoE layer keeps its MLP's share for each of its top-k experts).
pub fn layer_activation_bytes(model: &ModelSpec, seq: usize, b: usize, tp: usize) -> f64 {
    let sbh = (seq * b * model.hidden) as f64;
    let t = tp as f64;
    let extra_copies = model.top_k.saturating_sub(1) as f64;
    sbh * (10.0 + 24.0 / t) + extra_copies * sbh * (2.0 + 16.0 / t)
}

/// Memory of every stage; the largest is returned.
pub fn memory(model: &ModelSpec, layout: &Layout, stages: &[Stage], inp: &MemoryInput) -> Memory {
    stages
        .iter()
        .map(|s| stage_memory(model, layout, s, inp))
        .max_by(|a, b| a.total().total_cmp(&b.total()))
        .unwrap_or_default()
}

fn stage_memory(model: &ModelSpec, layout: &Layout, stage: &Stage, inp: &MemoryInput) -> Memory {
    let tp = layout.tp as f64;
    let p = stage.local_params(layout.ep) / tp;
    let unit = stage.max_unit_local_params(layout.ep) / tp;
    let params = if inp.reshard { 4.0 * unit } else { 2.0 * p };
    let grads = if inp.microbatches > 1 && !inp.reshard {
        2.0 * p
    } else {
        4.0 * unit
    };
    let in_flight = inp.microbatches.min(layout.pp - stage.index) as f64;
    let per_layer = layer_activation_bytes(model, inp.seq, inp.microbatch, layout.tp);
    let mut activations = if inp.recompute {
        // Each layer keeps its bf16 input; the layer being recomputed holds its full set once.
        let input = 2.0 * (inp.seq * inp.microbatch * model.hidden) as f64;
        stage.layers() as f64 * input * in_flight + per_layer
    } else {
        stage.layers() as f64 * per_layer * in_flight
    };
    if stage.has_head() {
        activations += 4.0 * (inp.seq * inp.microbatch * model.vocab) as f64 / tp;
    }
    Memory {
        stage: stage.index,
        states: 16.0 * (stage.params() as f64 / tp) / inp.shard_ranks.max(1) as f64,
        params,
        grads,
        activations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::model::presets;
    use crate::project::stage::stages;

    #[test]
    fn llama2_7b_on_one_h100_node_by_hand() {
        let m = presets().into_iter().next().unwrap();
        let l = Layout::new(8, 1, 1, 8).unwrap();
        let st = stages(&m, 1, 4096).unwrap();
        let inp = MemoryInput {
            seq: 4096,
            microbatch: 1,
            microbatches: 1,
            reshard: false,
            recompute: false,
            shard_ranks: 8,
        };
        let mem = memory(&m, &l, &st, &inp);
        let n = 6_738_415_616.0;
        assert_eq!(mem.states, 16.0 * n / 8.0);
        assert_eq!(mem.params, 2.0 * n);
        // Two layer-sized gradient buffers: 2 × 2 bytes × 202,383,360.
        assert_eq!(mem.grads, 4.0 * 202_383_360.0);
        // 32 layers × 34·s·h bytes + fp32 logits 4·s·V.
        let act = 32.0 * 34.0 * 4096.0 * 4096.0 + 4.0 * 4096.0 * 32000.0;
        assert_eq!(mem.activations, act);
        assert!(mem.total() < 80e9 && mem.total() > 40e9, "{}", mem.total());
    }

    #[test]
    fn seventy_b_without_resharding_cannot_fit_and_resharding_helps() {
        let m = presets().into_iter().nth(2).unwrap();
        let l = Layout::new(2048, 1, 1, 8).unwrap();
        let st = stages(&m, 1, 4096).unwrap();
        let mut inp = MemoryInput {
            seq: 4096,
            microbatch: 1,
            microbatches: 1,
            reshard: false,
            recompute: false,
            shard_ranks: 2048,
        };
        assert!(memory(&m, &l, &st, &inp).total() > 80e9);
        inp.reshard = true;
        assert!(memory(&m, &l, &st, &inp).params < 4e9);
    }

    #[test]
    fn recomputation_keeps_layer_inputs_and_one_layer() {
        // Llama-2 7B, pp 2 with 4 microbatches: stage 0 (16 layers and the embedding) holds
        // min(4, 2) = 2 microbatches; each layer keeps its bf16 input 2·s·h, plus one layer's
        // full set (34·s·h at tp 1) while it is recomputed.
        let m = presets().into_iter().next().unwrap();
        let l = Layout::new(16, 1, 2, 8).unwrap();
        let st = stages(&m, 2, 4096).unwrap();
        let inp = MemoryInput {
            seq: 4096,
            microbatch: 1,
            microbatches: 4,
            reshard: false,
            recompute: true,
            shard_ranks: 8,
        };
        let sh = 4096.0 * 4096.0;
        let first = stage_memory(&m, &l, &st[0], &inp);
        assert_eq!(first.activations, 16.0 * 2.0 * sh * 2.0 + 34.0 * sh);
        let plain = stage_memory(
            &m,
            &l,
            &st[0],
            &MemoryInput {
                recompute: false,
                ..inp
            },
        );
        assert_eq!(plain.activations, 16.0 * 34.0 * sh * 2.0);
    }

    #[test]
    fn moe_memory_counts_local_experts_and_top_k_activations() {
        // Mixtral 8x7B on 16 GPUs, ep 8, one microbatch of one 4096-token sequence.
        let m = presets()
            .into_iter()
            .find(|m| m.name == "mixtral-8x7b")
            .unwrap();
        let l = Layout::new(16, 1, 1, 8).unwrap().with_ep(8).unwrap();
        let st = stages(&m, 1, 4096).unwrap();
        let inp = MemoryInput {
            seq: 4096,
            microbatch: 1,
            microbatches: 1,
            reshard: false,
            recompute: false,
            shard_ranks: 16,
        };
        let mem = memory(&m, &l, &st, &inp);
        // Local parameters: 32 × (41,984,000 + 1,409,286,144/8) + 2·131,072,000 + 4096.
        let local = 32.0 * (41_984_000.0 + 176_160_768.0) + 262_148_096.0;
        assert_eq!(local, 7_242_780_672.0);
        assert_eq!(mem.params, 2.0 * local);
        // Two buffers of the largest local unit (a layer: 218,144,768 parameters).
        assert_eq!(mem.grads, 4.0 * 218_144_768.0);
        // Model states: 16 bytes of every parameter over the 16 DP ranks, as for ep 1.
        assert_eq!(mem.states, 46_702_792_704.0);
        // 32 layers × s·h·(34 + (k−1)·18) with k = 2, plus fp32 logits.
        let sh = 4096.0 * 4096.0;
        assert_eq!(mem.activations, 32.0 * 52.0 * sh + 4.0 * 4096.0 * 32000.0);
        // ep 1: all 8 experts are gathered.
        let all = memory(&m, &Layout::new(16, 1, 1, 8).unwrap(), &st, &inp);
        assert_eq!(all.params, 2.0 * 46_702_792_704.0);
        assert_eq!(all.states, mem.states);
    }
}
