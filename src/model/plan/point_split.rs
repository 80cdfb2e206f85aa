//! Where a point runs among a split's groups (`--split`, and the entries of a `--concurrent`):
//! one group alone, every group at once, or every entry's groups at once.

use std::sync::Arc;

use super::{Plan, Point};
use crate::model::split::SplitGroups;

/// Where a point runs among a split's groups: one group alone, or all at once.
#[derive(Clone, Debug, PartialEq)]
pub struct PointSplit {
    pub split: Arc<SplitGroups>,
    /// `Some(i)`: group `i` alone (the others wait); `None`: every group at the same time.
    pub alone: Option<usize>,
    /// A `--concurrent` point's calls at once (this point's among them): every group of every
    /// entry runs; `None` for a split's own points.
    pub beside: Option<Arc<Beside>>,
}

impl PointSplit {
    /// The indices of the groups that run.
    pub fn running(&self) -> Vec<usize> {
        match self.alone {
            Some(i) => vec![i],
            None => (0..self.split.groups.len()).collect(),
        }
    }

    /// Global rank `rank`'s part: the ranks that meet before every timed call (every running
    /// group's, so that they start together) and the ranks of its own call; `None` where it
    /// does not run.
    pub fn roles(&self, rank: usize) -> Option<(Vec<usize>, Vec<usize>)> {
        let running = self.running();
        let groups = &self.split.groups;
        let own = running.iter().find(|&&i| groups[i].contains(&rank))?;
        let mut start: Vec<usize> = running.iter().flat_map(|&i| groups[i].clone()).collect();
        start.sort_unstable();
        Some((start, groups[*own].clone()))
    }
}

/// The calls at once of one point of a `--concurrent`: every entry's groups all running, each
/// call one entry's point (its op and shape, its groups at once), and what they are labelled.
#[derive(Clone, Debug, PartialEq)]
pub struct Beside {
    /// [`crate::model::concurrent::ConcurrentGroups::label`].
    pub label: String,
    pub calls: Vec<Point>,
}

impl Point {
    /// Whether this point is one of a `--concurrent`'s (its calls at once, or one group's call
    /// alone), whose calls a backend makes alike.
    pub fn in_concurrent(&self) -> bool {
        self.split.as_ref().is_some_and(|s| s.beside.is_some())
    }
}

impl Plan {
    /// The most calls one point makes at once (a `--concurrent`'s entries; 1 otherwise): the
    /// host backend runs each rank's calls at once in a process of their own, one per lane.
    pub fn lanes(&self) -> usize {
        (self.points.iter())
            .map(|p| p.calls().len())
            .max()
            .unwrap_or(1)
            .max(1)
    }
}
