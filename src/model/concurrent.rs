//! `--concurrent OP@RULE,OP@RULE,...`: different collectives on different groups of one world at
//! the same time, as 3D-parallel training runs them (a TP AllReduce inside every node beside a
//! DP ReduceScatter across them). Each entry's groups are a `--split` rule's
//! ([`crate::model::split`], nccl-tests' `NCCL_TESTS_SPLIT`): `allreduce@/8` is an AllReduce in
//! every 8 neighbouring ranks, `reducescatter@%8` a ReduceScatter over one rank of every 8.
//! Every rank is in one group of every entry, so the groups of different entries overlap.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::split::{SplitGroups, SplitRule, MAX_GROUPS};
use crate::collective::Op;

/// The most entries one `--concurrent` takes: more collectives at once than any layout runs
/// (TP, DP, PP, EP, CP), and each adds its groups' points alone to every size.
pub const MAX_ENTRIES: usize = 8;

/// One collective of a `--concurrent`: its op, on the groups of its rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub op: Op,
    pub rule: SplitRule,
}

/// The collectives a `--concurrent` runs at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrent(pub Vec<Entry>);

impl Concurrent {
    /// The ops, each once, in the order given.
    pub fn ops(&self) -> Vec<Op> {
        let mut ops = Vec::new();
        for e in &self.0 {
            if !ops.contains(&e.op) {
                ops.push(e.op);
            }
        }
        ops
    }

    /// Every entry's groups of ranks `0..world`, with the label of their calls at once
    /// (`allreduce@/4 + reducescatter@%4 of 8`); why not where a rule makes groups of unequal
    /// size or the entries more than [`MAX_GROUPS`] groups in all.
    pub fn at(&self, world: usize) -> Result<ConcurrentGroups, String> {
        let groups = (self.0.iter())
            .map(|e| SplitGroups::of(e.rule, world).map(|g| (e.op, Arc::new(g))))
            .collect::<Result<Vec<_>, String>>()?;
        let total: usize = groups.iter().map(|(_, g)| g.groups.len()).sum();
        if total > MAX_GROUPS {
            return Err(format!(
                "--concurrent {self} makes {total} groups of world {world}, more than {MAX_GROUPS}"
            ));
        }
        Ok(ConcurrentGroups {
            label: format!("{self} of {world}"),
            entries: groups,
        })
    }
}

/// A `--concurrent`'s entries at one world: each op with its groups.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcurrentGroups {
    /// summary.csv's `concurrent` for the calls at once: `allreduce@/4 + reducescatter@%4 of 8`.
    pub label: String,
    pub entries: Vec<(Op, Arc<SplitGroups>)>,
}

impl fmt::Display for Concurrent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = (self.0.iter())
            .map(|e| format!("{}@{}", e.op, e.rule))
            .collect();
        write!(f, "{}", parts.join(" + "))
    }
}

impl FromStr for Concurrent {
    type Err = String;

    /// `OP@RULE,OP@RULE,...`: two to [`MAX_ENTRIES`] entries, no two alike.
    fn from_str(text: &str) -> Result<Concurrent, String> {
        let entries = (text.split(','))
            .map(entry)
            .collect::<Result<Vec<Entry>, String>>()?;
        if !(2..=MAX_ENTRIES).contains(&entries.len()) {
            return Err(format!(
                "--concurrent '{text}' has {} entries; give 2 to {MAX_ENTRIES}, such as \
                 'allreduce@/4,reducescatter@%4'",
                entries.len()
            ));
        }
        if let Some((i, e)) = (entries.iter().enumerate()).find(|(i, e)| entries[..*i].contains(e))
        {
            return Err(format!(
                "--concurrent '{text}' gives {}@{} twice (entry {}); each entry once",
                e.op,
                e.rule,
                i + 1
            ));
        }
        Ok(Concurrent(entries))
    }
}

/// One `OP@RULE`.
fn entry(text: &str) -> Result<Entry, String> {
    let Some((op, rule)) = text.split_once('@') else {
        return Err(format!(
            "--concurrent entry '{}' has no '@'; write OP@RULE, such as allreduce@/4 (an \
             AllReduce in every 4 neighbouring ranks) or reducescatter@%4",
            text.trim()
        ));
    };
    let op: Op = (op.trim().parse()).map_err(|e| format!("--concurrent entry '{text}': {e}"))?;
    if op == Op::SendRecv {
        return Err(format!(
            "--concurrent entry '{text}': sendrecv is not a group's collective; measure it with \
             --op sendrecv"
        ));
    }
    if op == Op::AllToAllV {
        return Err(format!(
            "--concurrent entry '{text}': alltoallv is not measured beside other calls yet; \
             measure it with --op alltoallv (and --split for its groups at once)"
        ));
    }
    let rule = rule.parse().map_err(|e| format!("--concurrent: {e}"))?;
    Ok(Entry { op, rule })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tp_beside_dp_reads_and_prints_back() {
        let c: Concurrent = "allreduce@/4, reducescatter@MOD 4".parse().unwrap();
        assert_eq!(c.to_string(), "allreduce@/4 + reducescatter@%4");
        assert_eq!(c.ops(), [Op::AllReduce, Op::ReduceScatter]);
        let g = c.at(8).unwrap();
        assert_eq!(g.label, "allreduce@/4 + reducescatter@%4 of 8");
        assert_eq!(g.entries[0].1.groups, [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(g.entries[1].1.groups[1], [1, 5]);
        let e = "allreduce@%3,allgather@/4".parse::<Concurrent>().unwrap();
        assert!(e.at(8).unwrap_err().contains("groups of 3, 3, 2 ranks"));
        let many: Concurrent = "allreduce@%64,allgather@%2".parse().unwrap();
        assert!(many.at(128).unwrap_err().contains("66 groups of world 128"));
    }

    #[test]
    fn near_valid_entries_are_refused_saying_why() {
        for (text, says) in [
            ("allreduce@/4", "has 1 entries"),
            ("allreduce/4,allgather@%4", "has no '@'"),
            ("allreduc@/4,allgather@%4", "allreduc"),
            ("allreduce@/0,allgather@%4", "divides by zero"),
            ("allreduce@XOR 4,allgather@%4", "has no operation"),
            ("allreduce@/4,allreduce@DIV 4", "twice (entry 2)"),
            ("sendrecv@/2,allgather@%2", "not a group's collective"),
            (
                "alltoallv@/2,allgather@%2",
                "not measured beside other calls yet",
            ),
            ("allreduce@/4,,allgather@%4", "has no '@'"),
        ] {
            let e = text.parse::<Concurrent>().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let nine: Vec<String> = (1..=9).map(|d| format!("allreduce@/{d}")).collect();
        let e = nine.join(",").parse::<Concurrent>().unwrap_err();
        assert!(e.contains("has 9 entries"), "{e}");
        assert!(nine[..8].join(",").parse::<Concurrent>().is_ok());
    }

    proptest! {
        #[test]
        fn any_text_is_refused_or_round_trips(text in "[a-z@/%&|0-9 ,]{0,40}") {
            if let Ok(c) = text.parse::<Concurrent>() {
                let again: Concurrent = c.to_string().replace(" + ", ",").parse().unwrap();
                prop_assert_eq!(again, c);
            }
        }

        #[test]
        fn near_valid_lists_are_refused_saying_so_or_round_trip(
            entries in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["allreduce", "allgather", "reduce",
                        "broadcast", "alltoall", "sendrecv", "alltoallv", "allreduc", ""]),
                    proptest::sample::select(vec!["@", "@ ", "", "#", "@@"]),
                    proptest::sample::select(vec!["/2", "%4", "MOD 2", "&0x3", "div 8", "|1",
                        "DIV 0", "XOR 1", "", "%2x", "% 4294967296"]),
                ),
                0..10,
            )
        ) {
            let text: Vec<String> =
                entries.iter().map(|(op, at, rule)| format!("{op}{at}{rule}")).collect();
            match text.join(",").parse::<Concurrent>() {
                Ok(c) => {
                    prop_assert!((2..=MAX_ENTRIES).contains(&c.0.len()));
                    let again: Concurrent = c.to_string().replace(" + ", ",").parse().unwrap();
                    prop_assert_eq!(again, c);
                }
                Err(e) => prop_assert!(e.starts_with("--concurrent"), "{}", e),
            }
        }

        #[test]
        fn every_entry_partitions_the_world(d in 1u32..9, m in 1u32..9, world in 1usize..33) {
            let c: Concurrent = format!("allreduce@/{d},reducescatter@%{m}").parse().unwrap();
            if let Ok(g) = c.at(world) {
                for (_, s) in &g.entries {
                    let mut all: Vec<usize> = s.groups.concat();
                    all.sort_unstable();
                    prop_assert_eq!(all, (0..world).collect::<Vec<_>>());
                }
            }
        }
    }
}
