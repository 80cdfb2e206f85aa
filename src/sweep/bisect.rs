//! `--bisect`: the slow node among N in about log2(N) rounds. Each round measures groups of
//! nodes (one rank on each, as `--pairs` does) at one size: the candidates split in two halves,
//! and the half whose bus bandwidth falls below [`SLOW_RATIO`] of the other's holds the slow
//! node; the faster half is cleared. A half of one node is measured with a cleared node beside
//! it (one node alone moves nothing between nodes). Three candidates with none cleared yet (a
//! launch of 3 nodes) are measured as their three pairs: the slow node is in the two slow ones.
//! A group is as fast as its slowest member, since every member's link carries the ring's
//! traffic: that is what makes halves comparable. Pure: the driver measures what [`next`] asks.
//!
//! [`next`]: Bisection::next

use crate::sweep::links::SLOW_RATIO;

/// Whether a side at `ratio` of the fastest is slow: below [`SLOW_RATIO`]; an undefined ratio
/// (a bandwidth that is not a number) is not.
fn is_slow(ratio: f64) -> bool {
    ratio < SLOW_RATIO
}

/// How a bisection ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// This node: every round's slower side held it, each below the ratio.
    SlowNode { node: usize, ratio: f64 },
    /// The link between two nodes of a triangle round (one slow pair, the other two fine).
    SlowLink { a: usize, b: usize, ratio: f64 },
    /// No side was slower than [`SLOW_RATIO`] of the other in the last round.
    NoneStandsOut { ratio: f64 },
}

/// One round: the groups measured (node indices) and each one's bus bandwidth once measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    pub groups: Vec<Vec<usize>>,
    pub busbw_gbps: Vec<f64>,
}

/// The state of a bisection.
#[derive(Clone, Debug)]
pub struct Bisection {
    candidates: Vec<usize>,
    cleared: Vec<usize>,
    pub rounds: Vec<Round>,
    pub verdict: Option<Verdict>,
}

/// The most rounds a bisection takes: log2 of the most nodes, plus the last pair and a spare.
pub const MAX_ROUNDS: usize = 24;

impl Bisection {
    /// A bisection of `nodes` nodes; refused below 3 (two nodes share their one link).
    pub fn new(nodes: usize) -> Result<Bisection, String> {
        if nodes < 3 {
            return Err(format!(
                "--bisect needs ranks on 3 or more nodes (this launch has {nodes}); with 2, \
                 --pairs measures their one link"
            ));
        }
        Ok(Bisection {
            candidates: (0..nodes).collect(),
            cleared: Vec::new(),
            rounds: Vec::new(),
            verdict: None,
        })
    }

    /// The groups of the next round; `None` once there is a verdict.
    pub fn next(&self) -> Option<Vec<Vec<usize>>> {
        if self.verdict.is_some() || self.rounds.len() >= MAX_ROUNDS {
            return None;
        }
        let c = &self.candidates;
        if c.len() == 3 && self.cleared.is_empty() {
            return Some(vec![vec![c[0], c[1]], vec![c[0], c[2]], vec![c[1], c[2]]]);
        }
        let (left, right) = c.split_at(c.len().div_ceil(2));
        Some(vec![self.padded(left), self.padded(right)])
    }

    /// A half of one node with the first cleared node beside it.
    fn padded(&self, half: &[usize]) -> Vec<usize> {
        let mut g = half.to_vec();
        if let (1, Some(&c)) = (g.len(), self.cleared.first()) {
            g.push(c);
        }
        g
    }

    /// Records the bus bandwidths of the groups [`Bisection::next`] gave, in its order, and
    /// narrows the candidates; the verdict once there is one.
    pub fn record(&mut self, groups: Vec<Vec<usize>>, busbw_gbps: Vec<f64>) -> Option<&Verdict> {
        let verdict = match groups.len() {
            3 => triangle(&groups, &busbw_gbps),
            _ => self.halves(&busbw_gbps),
        };
        self.rounds.push(Round { groups, busbw_gbps });
        self.verdict = verdict;
        self.verdict.as_ref()
    }

    /// Two halves: the slower one's candidates go on, the faster one's are cleared.
    fn halves(&mut self, busbw: &[f64]) -> Option<Verdict> {
        let (a, b) = (busbw.first().copied()?, busbw.get(1).copied()?);
        let ratio = a.min(b) / a.max(b);
        if !is_slow(ratio) {
            return Some(Verdict::NoneStandsOut { ratio });
        }
        let c = self.candidates.clone();
        let (left, right) = c.split_at(c.len().div_ceil(2));
        let (slow, fast) = if a < b { (left, right) } else { (right, left) };
        self.cleared.extend_from_slice(fast);
        self.candidates = slow.to_vec();
        (self.candidates.len() == 1).then(|| Verdict::SlowNode {
            node: self.candidates[0],
            ratio,
        })
    }
}

/// The three pairs of three nodes: the node in the two slowest pairs, where both are slow.
fn triangle(groups: &[Vec<usize>], busbw: &[f64]) -> Option<Verdict> {
    let mut order: Vec<usize> = (0..busbw.len().min(groups.len())).collect();
    order.sort_by(|&x, &y| busbw[x].total_cmp(&busbw[y]));
    let [slowest, second, fastest] = order[..] else {
        return None;
    };
    let ratio = |i: usize| busbw[i] / busbw[fastest];
    if !is_slow(ratio(slowest)) {
        return Some(Verdict::NoneStandsOut {
            ratio: ratio(slowest),
        });
    }
    if !is_slow(ratio(second)) {
        let pair = &groups[slowest];
        return Some(Verdict::SlowLink {
            a: pair[0],
            b: pair[1],
            ratio: ratio(slowest),
        });
    }
    let common = groups[slowest]
        .iter()
        .find(|n| groups[second].contains(n))?;
    Some(Verdict::SlowNode {
        node: *common,
        ratio: ratio(second),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bisects `nodes` where a group's busbw is its slowest node's speed (`speed[n]`).
    fn run(speed: &[f64]) -> Bisection {
        let mut b = Bisection::new(speed.len()).unwrap();
        while let Some(groups) = b.next() {
            let bw = groups
                .iter()
                .map(|g| g.iter().map(|&n| speed[n]).fold(f64::INFINITY, f64::min))
                .collect();
            b.record(groups, bw);
        }
        b
    }

    #[test]
    fn the_slow_node_among_n_is_found_in_log2_n_rounds() {
        for n in [4usize, 5, 7, 8, 9, 16, 33, 100] {
            for slow in 0..n {
                let mut speed = vec![10.0; n];
                speed[slow] = 2.5;
                let b = run(&speed);
                assert_eq!(
                    b.verdict,
                    Some(Verdict::SlowNode {
                        node: slow,
                        ratio: 0.25
                    }),
                    "{n} nodes, slow {slow}"
                );
                let most = (n as f64).log2().ceil() as usize;
                assert!(
                    b.rounds.len() <= most,
                    "{n} nodes: {} rounds",
                    b.rounds.len()
                );
            }
        }
    }

    #[test]
    fn three_nodes_are_measured_as_their_pairs() {
        for slow in 0..3 {
            let mut speed = vec![10.0; 3];
            speed[slow] = 5.0;
            let b = run(&speed);
            assert_eq!(b.rounds.len(), 1);
            assert_eq!(b.rounds[0].groups, vec![vec![0, 1], vec![0, 2], vec![1, 2]]);
            assert_eq!(
                b.verdict,
                Some(Verdict::SlowNode {
                    node: slow,
                    ratio: 0.5
                })
            );
        }
    }

    #[test]
    fn a_half_of_one_node_is_measured_beside_a_cleared_one() {
        let mut b = Bisection::new(4).unwrap();
        assert_eq!(b.next().unwrap(), vec![vec![0, 1], vec![2, 3]]);
        b.record(vec![vec![0, 1], vec![2, 3]], vec![10.0, 4.0]);
        assert_eq!(b.next().unwrap(), vec![vec![2, 0], vec![3, 0]]);
        let v = b
            .record(vec![vec![2, 0], vec![3, 0]], vec![10.0, 4.0])
            .cloned();
        assert_eq!(
            v,
            Some(Verdict::SlowNode {
                node: 3,
                ratio: 0.4
            })
        );
        assert_eq!(b.next(), None);
    }

    #[test]
    fn healthy_nodes_and_a_slow_link_are_said_as_such() {
        let b = run(&[10.0, 9.5, 10.0, 9.8, 10.0]);
        assert_eq!(b.rounds.len(), 1);
        assert!(matches!(b.verdict, Some(Verdict::NoneStandsOut { ratio }) if ratio > 0.9));
        let mut b = Bisection::new(3).unwrap();
        let groups = b.next().unwrap();
        let v = b.record(groups, vec![10.0, 3.0, 10.0]).cloned();
        assert_eq!(
            v,
            Some(Verdict::SlowLink {
                a: 0,
                b: 2,
                ratio: 0.3
            })
        );
        assert!(Bisection::new(2).unwrap_err().contains("--pairs"));
    }

    #[test]
    fn undefined_bandwidths_end_without_a_suspect() {
        let mut b = Bisection::new(5).unwrap();
        let groups = b.next().unwrap();
        let v = b.record(groups, vec![f64::NAN, 3.0]).cloned();
        assert!(matches!(v, Some(Verdict::NoneStandsOut { .. })), "{v:?}");
    }
}
