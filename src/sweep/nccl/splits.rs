//! `--split` on the NCCL backend, as nccl-tests does it (`NCCL_TESTS_SPLIT`): each group of a
//! split is a communicator split from the stage's world communicator by `ncclCommSplit`, with
//! the group's index as the colour and the world rank as the key (so a rank's place in its group
//! is its place in the group's rank order), made once per stage for every split its points use.
//! A group's points alone run on its members while the other ranks wait at the point's
//! barriers; the groups at once meet every rank after their warm-up and start their timed
//! calls together (`backend::nccl::measure`), then meet again before nccl-tests' loop.

use std::os::raw::c_int;
use std::sync::Arc;

use crate::backend::nccl::comm::Communicator;
use crate::backend::nccl::sys;
use crate::backend::nccl::tuning::Stage;
use crate::error::{Error, Result};
use crate::model::plan::Point;
use crate::model::split::SplitGroups;

/// The communicators of one stage's splits on one rank.
#[derive(Default)]
pub struct SplitComms {
    /// Per split (by its label), this rank's group communicator and its group's index; `None`
    /// where the rank is in none of the split's groups.
    comms: Vec<(String, Option<(Communicator, usize)>)>,
}

/// The splits the points of `stage` run in, each once, in the order the plan first uses them
/// (the same on every rank: every rank expands the same plan).
pub fn splits_of(stage: &Stage) -> Vec<Arc<SplitGroups>> {
    let mut out: Vec<Arc<SplitGroups>> = Vec::new();
    let points = stage.groups.iter().flat_map(|(_, p)| p.iter());
    for s in points.filter_map(|p| p.split.as_ref()) {
        if !out.iter().any(|o| o.label == s.split.label) {
            out.push(s.split.clone());
        }
    }
    out
}

/// World rank `rank`'s colour in `split` (its group's index, `NCCL_SPLIT_NOCOLOR` outside every
/// group), its group's index and its rank within the group.
pub fn color_of(split: &SplitGroups, rank: usize) -> (c_int, Option<(usize, usize)>) {
    let found = (split.groups.iter().enumerate())
        .find_map(|(g, members)| members.iter().position(|&r| r == rank).map(|i| (g, i)));
    match found.and_then(|(g, i)| Some((c_int::try_from(g).ok()?, (g, i)))) {
        Some((color, at)) => (color, Some(at)),
        None => (sys::NCCL_SPLIT_NOCOLOR, None),
    }
}

impl SplitComms {
    /// Splits `world` once for every split of `stage` (collective: every rank of `world` calls
    /// this with the same stage). `None` for a stage without splits.
    pub fn make(world: &Communicator, stage: &Stage, has_split: bool) -> Result<SplitComms> {
        let splits = splits_of(stage);
        if !splits.is_empty() && !has_split {
            return Err(Error::Usage(
                "--split needs ncclCommSplit (NCCL 2.18 or later) to make each group's \
                 communicator; point COLLBENCH_NCCL_LIB at a newer libnccl.so.2"
                    .into(),
            ));
        }
        let mut comms = Vec::with_capacity(splits.len());
        for split in splits {
            let (color, at) = color_of(&split, world.rank());
            let comm = world
                .split(color, split.size(), at.map_or(0, |(_, i)| i))
                .map_err(|e| Error::Rank(format!("{}: {e}", split.label)))?;
            let mine = comm.zip(at.map(|(g, _)| g));
            comms.push((split.label.clone(), mine));
        }
        Ok(SplitComms { comms })
    }

    /// This rank's communicator for split point `p` where its group runs in it (`None` where it
    /// waits, or `p` has no split).
    pub fn member(&self, p: &Point) -> Option<&Communicator> {
        let s = p.split.as_ref()?;
        let (_, mine) = self.comms.iter().find(|(l, _)| *l == s.split.label)?;
        let (comm, group) = mine.as_ref()?;
        s.running().contains(group).then_some(comm)
    }

    /// Every communicator, for registration.
    pub fn each_mut(&mut self) -> impl Iterator<Item = &mut Communicator> {
        self.comms
            .iter_mut()
            .filter_map(|(_, c)| c.as_mut().map(|(c, _)| c))
    }

    /// Destroys every communicator (the first failure is returned after all were tried).
    pub fn destroy(self) -> Result<()> {
        let mut first = Ok(());
        for (label, comm) in self.comms {
            if let Some((c, _)) = comm {
                if let (Err(e), Ok(())) = (c.destroy(), &first) {
                    first = Err(Error::Rank(format!("{label}: {e}")));
                }
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::split::SplitRule;

    #[test]
    fn a_ranks_colour_is_its_groups_index_and_its_place_its_rank_order() {
        let rule: SplitRule = "%2".parse().unwrap();
        let split = SplitGroups::of(rule, 6).unwrap();
        // Groups {0, 2, 4} and {1, 3, 5}.
        assert_eq!(color_of(&split, 0), (0, Some((0, 0))));
        assert_eq!(color_of(&split, 3), (1, Some((1, 1))));
        assert_eq!(color_of(&split, 4), (0, Some((0, 2))));
        // A rank beyond the split's world gets no communicator.
        assert_eq!(color_of(&split, 6), (sys::NCCL_SPLIT_NOCOLOR, None));
    }
}
