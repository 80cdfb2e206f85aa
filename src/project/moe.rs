//! Mixture of experts in the step, with expert-parallel degree `ep` > 1 (docs/METHODOLOGY.md,
//! "Mixture of experts").
//!
//! - **AllToAll.** Every MoE layer runs, per microbatch, a dispatch and a combine AllToAll of
//!   the tokens' activations over the `ep` ranks of its expert-parallel group in forward, and
//!   their gradients' two in backward (GShard, Lepikhin et al. 2020; DeepSpeed-MoE, Rajbhandari
//!   et al. 2022; Megatron-Core's AllToAll token dispatcher), each of `S = b·s·k·h·2` bytes per
//!   rank ([`alltoall_bytes`]: every token of the microbatch sent to its k experts, bf16;
//!   capacity factor 1, no dropped or padded tokens). They block like TP's AllReduces: within a
//!   microbatch the experts wait for their tokens and the next layer for the combined output
//!   (Megatron-Core hides them only behind another microbatch's compute, its "Combined 1F1B"
//!   schedule, which this model does not run); with recomputation the forward's two run again.
//! - **FSDP.** A MoE unit's non-expert parameters are gathered and reduced over the DP group and
//!   its local experts (`1/ep` of them) over the `dp/ep` ranks holding the same experts, one
//!   collective after the other on the FSDP stream ([`fsdp_times`]); with `ep` = 1 the whole
//!   unit is one collective over the DP group, as for a dense model.

use super::comm::Network;
use super::layout::Layout;
use super::model::ModelSpec;
use super::stage::Unit;
use crate::collective::Op;
use crate::error::Result;

/// Bytes per rank of one MoE AllToAll of a microbatch of `tokens`: every token's activations
/// (bf16) to each of its top-k experts, `tokens·k·h·2`.
pub fn alltoall_bytes(model: &ModelSpec, tokens: f64) -> f64 {
    tokens * model.top_k as f64 * model.hidden as f64 * 2.0
}

/// Seconds of one MoE AllToAll (dispatch or combine) of a microbatch of `tokens` over the
/// expert-parallel group; 0 for a dense model or `ep` = 1.
pub fn moe_alltoall_s(
    model: &ModelSpec,
    layout: &Layout,
    tokens: f64,
    net: &Network,
) -> Result<f64> {
    if !model.is_moe() || layout.ep <= 1 {
        return Ok(0.0);
    }
    net.alltoall_s(layout.ep_group(), alltoall_bytes(model, tokens))
}

/// FSDP's AllGather and ReduceScatter seconds of one unit without hybrid sharding: the whole
/// unit over the DP group, or with `ep` > 1 its non-expert parameters over the DP group and its
/// local experts over the ranks holding the same experts, one after the other.
pub fn fsdp_times(u: &Unit, layout: &Layout, net: &Network) -> Result<(f64, f64)> {
    let tp = layout.tp as f64;
    let both = |group, bytes: f64| -> Result<(f64, f64)> {
        Ok((
            net.time_s(Op::AllGather, group, bytes)?,
            net.time_s(Op::ReduceScatter, group, bytes)?,
        ))
    };
    if layout.ep <= 1 || u.expert_params == 0 {
        return both(layout.dp_group(), 2.0 * u.params as f64 / tp);
    }
    let dense = 2.0 * (u.params - u.expert_params) as f64 / tp;
    let experts = 2.0 * u.expert_params as f64 / (tp * layout.ep as f64);
    let (g1, r1) = both(layout.dp_group(), dense)?;
    let (g2, r2) = both(layout.expert_dp_group(), experts)?;
    Ok((g1 + g2, r1 + r2))
}
