//! Parallel layouts and where their groups fall on nodes.
//!
//! A layout splits `world` GPUs into `tp × pp × dp`. Ranks are numbered Megatron-style with
//! tensor parallelism innermost, then data parallelism, then pipeline stages outermost, and fill
//! nodes of `g` GPUs in order. So a TP group of `tp ≤ g` lies in one node, a stage's DP group has
//! `dp` ranks spread over the nodes of that stage with `g/tp` of them per node, and pipeline
//! neighbours are `world/pp` ranks apart (on different nodes once a stage fills a node).
//!
//! Expert parallelism (`ep`, MoE models) takes its ranks from the data-parallel group, as
//! torchtitan's `ParallelDims` does (pytorch/torchtitan `torchtitan/distributed/parallel_dims.py`:
//! with expert TP = TP, EP borrows `ep` of the `dp_shard` degree, which `ep` must divide): an
//! expert-parallel group is `ep` consecutive DP ranks (ranks `0, tp, ..., (ep−1)·tp`), and the
//! ranks holding the same experts, `dp/ep` of them `tp·ep` apart, shard those experts (FSDP).

use crate::error::{Error, Result};

/// A set of ranks that run one collective together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// Ranks in the group.
    pub ranks: usize,
    /// Nodes they span (the ranks are spread evenly).
    pub nodes: usize,
}

impl Group {
    /// Ranks of the group per node.
    pub fn per_node(&self) -> usize {
        self.ranks / self.nodes.max(1)
    }
}

/// One parallel layout at one world size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub world: usize,
    pub tp: usize,
    pub pp: usize,
    pub dp: usize,
    /// Expert-parallel degree (1 without expert parallelism), dividing `dp`.
    pub ep: usize,
    /// GPUs per node.
    pub gpus_per_node: usize,
}

/// Checks a world size against the node size: a world larger than one node must be whole nodes.
pub fn check_world(world: usize, gpus_per_node: usize) -> Result<()> {
    if world == 0 {
        return Err(Error::usage("--world-sizes: 0 is not a world size"));
    }
    if world > gpus_per_node && world % gpus_per_node != 0 {
        return Err(Error::usage(format!(
            "--world-sizes: world {world} is not a whole number of {gpus_per_node}-GPU nodes"
        )));
    }
    Ok(())
}

impl Layout {
    /// The layout, or why it cannot exist at this world size.
    pub fn new(world: usize, tp: usize, pp: usize, gpus_per_node: usize) -> Result<Layout, String> {
        if tp == 0 || pp == 0 {
            return Err("tp and pp must be at least 1".into());
        }
        if world % (tp * pp) != 0 {
            return Err(format!("tp·pp = {} does not divide world {world}", tp * pp));
        }
        if tp > gpus_per_node && tp % gpus_per_node != 0 {
            return Err(format!(
                "tp {tp} spans nodes but is not a whole number of {gpus_per_node}-GPU nodes"
            ));
        }
        if tp < gpus_per_node && gpus_per_node % tp != 0 && world > tp {
            return Err(format!(
                "tp {tp} does not divide the {gpus_per_node} GPUs of a node"
            ));
        }
        Ok(Layout {
            world,
            tp,
            pp,
            dp: world / (tp * pp),
            ep: 1,
            gpus_per_node,
        })
    }

    /// The layout with expert-parallel degree `ep`, or why not (`ep` must divide `dp`).
    pub fn with_ep(self, ep: usize) -> Result<Layout, String> {
        if ep == 0 || self.dp % ep != 0 {
            return Err(format!(
                "ep {ep} does not divide dp {} (expert parallelism takes its ranks from the \
                 data-parallel group)",
                self.dp
            ));
        }
        Ok(Layout { ep, ..self })
    }

    /// Nodes used.
    pub fn nodes(&self) -> usize {
        self.world.div_ceil(self.gpus_per_node)
    }

    /// The tensor-parallel group (ranks 0..tp).
    pub fn tp_group(&self) -> Group {
        self.group(0, 1, self.tp)
    }

    /// The data-parallel group of the first stage (ranks 0, tp, 2·tp, ...).
    pub fn dp_group(&self) -> Group {
        self.group(0, self.tp, self.dp)
    }

    /// The expert-parallel group of the first stage (ranks 0, tp, ..., (ep−1)·tp): the ranks
    /// of one MoE AllToAll.
    pub fn ep_group(&self) -> Group {
        self.group(0, self.tp, self.ep)
    }

    /// The ranks of the first stage holding the same experts (`dp/ep` of them, `tp·ep` apart):
    /// the group FSDP shards and gathers expert parameters over when `ep` > 1.
    pub fn expert_dp_group(&self) -> Group {
        self.group(0, self.tp * self.ep, self.dp / self.ep.max(1))
    }

    /// Hybrid sharding: the DP ranks of one node (shard group) and one rank per node across
    /// the stage's nodes (replica group). None when the DP group is within one node, or when its
    /// ranks do not split evenly over nodes.
    pub fn hybrid_groups(&self) -> Option<(Group, Group)> {
        let dp = self.dp_group();
        if dp.nodes <= 1 || dp.ranks % dp.nodes != 0 {
            return None;
        }
        let shard = Group {
            ranks: dp.per_node(),
            nodes: 1,
        };
        let replicas = Group {
            ranks: dp.nodes,
            nodes: dp.nodes,
        };
        Some((shard, replicas))
    }

    /// The two ranks of the slowest pipeline hand-off between neighbouring stages: across
    /// nodes whenever the layout uses more than one node (some stage boundary then falls on a
    /// node boundary).
    pub fn pp_pair(&self) -> Group {
        let nodes = if self.nodes() > 1 { 2 } else { 1 };
        Group { ranks: 2, nodes }
    }

    /// `count` ranks `first, first + stride, ...`: how many nodes they span.
    fn group(&self, first: usize, stride: usize, count: usize) -> Group {
        let g = self.gpus_per_node;
        let mut nodes: Vec<usize> = (0..count).map(|i| (first + i * stride) / g).collect();
        nodes.dedup();
        Group {
            ranks: count,
            nodes: nodes.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_fall_on_nodes_tp_first() {
        // 2048 GPUs, tp 2, pp 2: dp 512; a stage is 1024 ranks = 128 nodes, 4 DP ranks each.
        let l = Layout::new(2048, 2, 2, 8).unwrap();
        assert_eq!((l.dp, l.nodes()), (512, 256));
        assert_eq!(l.tp_group(), Group { ranks: 2, nodes: 1 });
        assert_eq!(
            l.dp_group(),
            Group {
                ranks: 512,
                nodes: 128
            }
        );
        assert_eq!(l.dp_group().per_node(), 4);
        assert_eq!(l.pp_pair(), Group { ranks: 2, nodes: 2 });
        let (shard, rep) = l.hybrid_groups().unwrap();
        assert_eq!(shard, Group { ranks: 4, nodes: 1 });
        assert_eq!(
            rep,
            Group {
                ranks: 128,
                nodes: 128
            }
        );
        // Within one node everything is intra-node.
        let one = Layout::new(8, 2, 2, 8).unwrap();
        assert_eq!(one.dp_group(), Group { ranks: 2, nodes: 1 });
        assert_eq!(one.pp_pair().nodes, 1);
        assert!(one.hybrid_groups().is_none());
    }

    #[test]
    fn impossible_layouts_say_why() {
        assert!(Layout::new(8, 4, 4, 8)
            .unwrap_err()
            .contains("does not divide world 8"));
        assert!(Layout::new(24, 12, 1, 8)
            .unwrap_err()
            .contains("spans nodes"));
        assert!(check_world(12, 8).unwrap_err().to_string().contains("12"));
        assert!(check_world(4, 8).is_ok());
    }
}
