//! Where the ranks of a launch live, and which ranks a measured group takes.
//!
//! A group is described by its shape: `nodes` hosts with `per_node` ranks on each, so one launch
//! can measure within a node (`1x8`), across nodes with one rank each (`4x1`, the network alone)
//! and the whole machine (`4x8`). A group takes the first `per_node` ranks (in rank order) of
//! each of the first `nodes` nodes, node by node, so a ring crosses between hosts only `nodes`
//! times, as NCCL's rings do. Nodes are numbered by their lowest rank, so rank 0 is on node 0
//! and is the first member of every group: it always measures, and it collects the results.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The shape of a measured group: `nodes` hosts, `per_node` ranks on each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldShape {
    pub nodes: usize,
    pub per_node: usize,
}

impl WorldShape {
    /// Ranks in the group.
    pub fn world(&self) -> usize {
        self.nodes * self.per_node
    }
}

impl std::fmt::Display for WorldShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.nodes, self.per_node)
    }
}

/// One item of `--world-sizes`: a number of ranks, or `NxR` (N nodes, R ranks on each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorldSpec {
    Ranks(usize),
    Shape(WorldShape),
}

impl WorldSpec {
    /// Ranks in the group.
    pub fn world(&self) -> usize {
        match self {
            WorldSpec::Ranks(p) => *p,
            WorldSpec::Shape(s) => s.world(),
        }
    }
}

impl std::str::FromStr for WorldSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<WorldSpec> {
        let bad = || {
            Error::usage(format!(
                "--world-sizes: '{s}' is neither a number of ranks (8) nor NODESxRANKS (2x4)"
            ))
        };
        let whole = |t: &str| -> Result<usize> {
            match t.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(bad()),
            }
        };
        match s.trim().to_ascii_lowercase().split_once('x') {
            Some((n, r)) => Ok(WorldSpec::Shape(WorldShape {
                nodes: whole(n)?,
                per_node: whole(r)?,
            })),
            None => Ok(WorldSpec::Ranks(whole(s)?)),
        }
    }
}

/// The hosts of a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Node index of every rank, in rank order.
    pub node_of: Vec<usize>,
    /// Host name of every node, in node order.
    pub hosts: Vec<String>,
}

impl Topology {
    /// One host holding `ranks` ranks.
    pub fn single(host: &str, ranks: usize) -> Topology {
        Topology {
            node_of: vec![0; ranks],
            hosts: vec![host.to_string()],
        }
    }

    /// From every rank's host name, in rank order; nodes numbered by first appearance.
    pub fn from_hosts(names: &[String]) -> Topology {
        // An index by name: a log may list a million ranks on a hundred thousand hosts.
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut hosts: Vec<String> = Vec::new();
        let node_of = names
            .iter()
            .map(|n| {
                *index.entry(n.as_str()).or_insert_with(|| {
                    hosts.push(n.clone());
                    hosts.len() - 1
                })
            })
            .collect();
        Topology { node_of, hosts }
    }

    pub fn ranks(&self) -> usize {
        self.node_of.len()
    }

    pub fn nodes(&self) -> usize {
        self.hosts.len()
    }

    /// The ranks on `node`, in rank order.
    pub fn ranks_on(&self, node: usize) -> Vec<usize> {
        (0..self.ranks())
            .filter(|&r| self.node_of[r] == node)
            .collect()
    }

    /// The fewest ranks any node holds: the largest `per_node` every node can give.
    pub fn min_per_node(&self) -> usize {
        let mut counts = vec![0usize; self.nodes()];
        for &n in &self.node_of {
            counts[n] += 1;
        }
        counts.into_iter().min().unwrap_or(0)
    }

    /// The members of a group of this shape, node by node (rank 0 first).
    pub fn members(&self, shape: WorldShape) -> Vec<usize> {
        let nodes = shape.nodes.min(self.nodes());
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); nodes];
        for (r, &n) in self.node_of.iter().enumerate() {
            if n < nodes && by_node[n].len() < shape.per_node {
                by_node[n].push(r);
            }
        }
        by_node.concat()
    }

    /// What a launch measures when `--world-sizes` is not given: one whole node, one rank on
    /// every node, and everything (fewer when they coincide; a group of one only when the launch
    /// is one rank).
    pub fn default_shapes(&self) -> Vec<WorldShape> {
        let (n, r) = (self.nodes(), self.min_per_node());
        let all = WorldShape {
            nodes: n,
            per_node: r,
        };
        let mut shapes = Vec::new();
        for (nodes, per_node) in [(1, r), (n, 1), (n, r)] {
            let shape = WorldShape { nodes, per_node };
            if shape.world() > 1 && !shapes.contains(&shape) {
                shapes.push(shape);
            }
        }
        if shapes.is_empty() {
            shapes.push(all);
        }
        shapes
    }

    /// Turns `--world-sizes` into shapes this launch can hold. A plain number `p` is a group
    /// within node 0 when it fits there, else whole nodes of `min_per_node` ranks.
    pub fn resolve(&self, specs: &[WorldSpec]) -> Result<Vec<WorldShape>> {
        if specs.is_empty() {
            return Ok(self.default_shapes());
        }
        let r = self.min_per_node();
        let mut shapes = Vec::new();
        for spec in specs {
            let shape = match *spec {
                WorldSpec::Shape(s) => self.check(s)?,
                WorldSpec::Ranks(p) if p <= r => WorldShape {
                    nodes: 1,
                    per_node: p,
                },
                WorldSpec::Ranks(p) if p % r == 0 && p / r <= self.nodes() => WorldShape {
                    nodes: p / r,
                    per_node: r,
                },
                WorldSpec::Ranks(p) => return Err(self.misfit(p)),
            };
            if !shapes.contains(&shape) {
                shapes.push(shape);
            }
        }
        Ok(shapes)
    }

    fn check(&self, s: WorldShape) -> Result<WorldShape> {
        if s.nodes > self.nodes() || s.per_node > self.min_per_node() {
            return Err(Error::usage(format!(
                "--world-sizes {s}: this launch has {} node(s) with at least {} rank(s) each; \
                 give NODESxRANKS within that",
                self.nodes(),
                self.min_per_node()
            )));
        }
        Ok(s)
    }

    fn misfit(&self, p: usize) -> Error {
        Error::usage(format!(
            "--world-sizes {p}: not a group within one node (at most {r}) nor whole nodes of {r} \
             ranks ({} node(s) here); give it as NODESxRANKS, e.g. {}x1",
            self.nodes(),
            self.nodes().min(p),
            r = self.min_per_node()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(nodes: usize, per_node: usize) -> WorldShape {
        WorldShape { nodes, per_node }
    }

    fn two_by_three() -> Topology {
        let names: Vec<String> = ["a", "a", "b", "a", "b", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        Topology::from_hosts(&names)
    }

    #[test]
    fn parses_numbers_and_shapes() {
        assert_eq!("8".parse::<WorldSpec>().unwrap(), WorldSpec::Ranks(8));
        assert_eq!(
            "2X4".parse::<WorldSpec>().unwrap(),
            WorldSpec::Shape(shape(2, 4))
        );
        for bad in ["0", "2x", "x4", "2x0", "-1", "2x4x1", "two"] {
            let e = bad.parse::<WorldSpec>().unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
    }

    #[test]
    fn a_million_ranks_on_many_hosts_are_indexed_in_one_pass() {
        // Ranks listed host by host, then one straggler per host at the end.
        let mut names: Vec<String> = (0..1_000_000).map(|r| format!("h{}", r / 8)).collect();
        names.push("h0".into());
        let t = Topology::from_hosts(&names);
        assert_eq!((t.nodes(), t.ranks()), (125_000, 1_000_001));
        assert_eq!((t.node_of[9], t.node_of[1_000_000]), (1, 0));
        assert_eq!(t.min_per_node(), 8);
        assert_eq!(
            t.members(shape(2, 9)),
            [0, 1, 2, 3, 4, 5, 6, 7, 1_000_000, 8, 9, 10, 11, 12, 13, 14, 15]
        );
    }

    #[test]
    fn groups_take_ranks_node_by_node() {
        let t = two_by_three();
        assert_eq!(t.hosts, vec!["a", "b"]);
        assert_eq!(t.node_of, vec![0, 0, 1, 0, 1, 1]);
        assert_eq!(t.members(shape(1, 3)), vec![0, 1, 3]);
        assert_eq!(t.members(shape(2, 1)), vec![0, 2]);
        assert_eq!(t.members(shape(2, 2)), vec![0, 1, 2, 4]);
        assert_eq!(t.min_per_node(), 3);
    }

    #[test]
    fn plain_sizes_fill_a_node_then_whole_nodes() {
        let t = two_by_three();
        let got = t
            .resolve(&[WorldSpec::Ranks(2), WorldSpec::Ranks(6)])
            .unwrap();
        assert_eq!(got, vec![shape(1, 2), shape(2, 3)]);
        let e = t.resolve(&[WorldSpec::Ranks(4)]).unwrap_err().to_string();
        assert!(
            e.contains("--world-sizes 4") && e.contains("NODESxRANKS"),
            "{e}"
        );
        let e = t
            .resolve(&[WorldSpec::Shape(shape(3, 1))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3x1") && e.contains("2 node(s)"), "{e}");
    }

    #[test]
    fn defaults_cover_node_network_and_all() {
        assert_eq!(
            two_by_three().default_shapes(),
            vec![shape(1, 3), shape(2, 1), shape(2, 3)]
        );
        assert_eq!(Topology::single("h", 4).default_shapes(), vec![shape(1, 4)]);
        assert_eq!(Topology::single("h", 1).default_shapes(), vec![shape(1, 1)]);
        let one_each = Topology::from_hosts(&["a".into(), "b".into()]);
        assert_eq!(one_each.default_shapes(), vec![shape(2, 1)]);
    }
}
