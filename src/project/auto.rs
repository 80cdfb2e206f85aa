//! NCCL's `auto` for AllReduce: which algorithms compete for a group, and the summary of which
//! one served which group and size range (docs/METHODOLOGY.md, "Network profiles").

use std::collections::BTreeMap;

use super::layout::Group;
use crate::collective::Algo;
use crate::units::format_size;

/// The AllReduce algorithms NCCL's tuner compares (`ncclTopoTuneModel`, NCCL 2.30.7
/// src/graph/tuning.cc lines 293-301: AllReduce runs all but PAT).
pub const NCCL_ALLREDUCE: [Algo; 4] = [Algo::Ring, Algo::Tree, Algo::Nvls, Algo::CollNet];

/// Whether NCCL can run `algo` over `group`: NVLS and CollNet reduce inside a node's NVSwitch
/// or through its NIC heads, so they need two or more ranks per node.
pub fn runs(algo: Algo, group: Group) -> bool {
    match algo {
        Algo::Nvls | Algo::CollNet => group.ranks >= 2 * group.nodes.max(1),
        _ => true,
    }
}

/// AllReduce choices: (ranks, nodes, algorithm) → the smallest and largest size it served.
pub type Chosen = BTreeMap<(usize, usize, Algo), (f64, f64)>;

/// One note per group: the algorithm that was fastest at each size range the step used.
pub fn summary(chosen: &Chosen) -> Vec<String> {
    let mut by_group: BTreeMap<(usize, usize), Vec<(f64, String)>> = BTreeMap::new();
    for (&(ranks, nodes, algo), &(lo, hi)) in chosen {
        let range = if lo == hi {
            format_size(lo as usize)
        } else {
            format!("{}-{}", format_size(lo as usize), format_size(hi as usize))
        };
        by_group
            .entry((ranks, nodes))
            .or_default()
            .push((lo, format!("{algo} at {range}")));
    }
    by_group
        .into_iter()
        .map(|((ranks, nodes), mut uses)| {
            uses.sort_by(|a, b| a.0.total_cmp(&b.0));
            let uses: Vec<String> = uses.into_iter().map(|(_, u)| u).collect();
            format!(
                "allreduce auto over {ranks} ranks on {nodes} node(s), the fastest of the fit's \
                 algorithms as NCCL's tuner picks: {}",
                uses.join(", ")
            )
        })
        .collect()
}
