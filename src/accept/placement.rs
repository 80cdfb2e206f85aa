//! Where a point's ranks ran: the node of each rank, from ranks.csv's `node` column, else
//! meta.json's `rank_nodes`, else block placement (ranks `0..world/nodes` on node 0, ...), as
//! mpirun, srun and torchrun place them by default. Folders written before ranks.csv had a
//! `node` column hold every rank on node 0 although the point spans several.

use crate::model::record::RankSummary;

/// The node of every rank: ranks.csv's `node`, or block placement when the file does not tell
/// the nodes apart although the point spans `nodes`.
pub fn node_of(ranks: &[RankSummary], world: usize, nodes: usize) -> Vec<usize> {
    let recorded = ranks.iter().any(|r| r.node != ranks[0].node);
    if recorded || nodes <= 1 {
        return ranks.iter().map(|r| r.node).collect();
    }
    ranks
        .iter()
        .map(|r| block_node(r.rank, world, nodes))
        .collect()
}

/// The node of `rank` when ranks are placed in blocks (`0..world/nodes` on node 0, ...).
fn block_node(rank: usize, world: usize, nodes: usize) -> usize {
    let nodes = nodes.max(1);
    (rank / world.div_ceil(nodes).max(1)).min(nodes - 1)
}

/// The node of each of a point's `world` ranks, indexed by rank: from its ranks.csv rows when
/// it has them, else meta.json's `rank_nodes` where they tell nodes apart, else blocks.
pub fn point_rank_nodes(
    ranks: &[RankSummary],
    world: usize,
    nodes: usize,
    rank_nodes: &[usize],
) -> Vec<usize> {
    let mut out: Vec<usize> = (0..world).map(|r| block_node(r, world, nodes)).collect();
    if !ranks.is_empty() {
        for (r, n) in ranks.iter().zip(node_of(ranks, world, nodes)) {
            if let Some(x) = out.get_mut(r.rank) {
                *x = n;
            }
        }
    } else if let Some(meta) = rank_nodes
        .get(..world)
        .filter(|m| m.iter().any(|&n| n != m[0]))
    {
        out.copy_from_slice(meta);
    }
    out
}
