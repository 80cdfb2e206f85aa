//! `--split`: nccl-tests' `NCCL_TESTS_SPLIT` rule, which gives every rank a colour from its
//! rank and puts the ranks of one colour in one group (nccl-tests' `MPI_Comm_split` in
//! `src/common.cu`, 2.19). The groups then run their collectives at the same time.
//!
//! The rule reads as nccl-tests reads it: an operation (`AND`, `OR`, `MOD`, `DIV`, in any case,
//! or `&`, `|`, `%`, `/`), optional spaces, then a value in decimal, hexadecimal (`0x`),
//! binary (`0b`) or, as C's `strtoul` with base 0 reads a leading zero, octal.
//! `NCCL_TESTS_SPLIT_MASK=V` is `&V` with V hexadecimal. Where nccl-tests would quietly run one
//! group (an unknown operation, no value) or divide by zero, the rule is refused instead, and
//! so is text after the value, which nccl-tests ignores.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a rank's colour is computed from its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitOp {
    And,
    Or,
    Mod,
    Div,
}

/// One split rule: colour = rank `op` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitRule {
    pub op: SplitOp,
    pub value: u32,
}

/// The most groups one split may make; far above any node's GPUs, and it bounds the points a
/// split multiplies the plan by.
pub const MAX_GROUPS: usize = 64;

/// The operation words and symbols, in nccl-tests' order.
const WORDS: [(&str, SplitOp); 8] = [
    ("AND", SplitOp::And),
    ("&", SplitOp::And),
    ("OR", SplitOp::Or),
    ("|", SplitOp::Or),
    ("MOD", SplitOp::Mod),
    ("%", SplitOp::Mod),
    ("DIV", SplitOp::Div),
    ("/", SplitOp::Div),
];

impl SplitOp {
    fn symbol(self) -> &'static str {
        match self {
            SplitOp::And => "&",
            SplitOp::Or => "|",
            SplitOp::Mod => "%",
            SplitOp::Div => "/",
        }
    }
}

impl SplitRule {
    /// `NCCL_TESTS_SPLIT_MASK`'s value: `&` with the value read in hexadecimal.
    pub fn from_mask(text: &str) -> Result<SplitRule, String> {
        let t = text.trim();
        let digits = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        let value = read_digits(digits, 16)
            .ok_or_else(|| format!("split mask '{text}' is not a hexadecimal number"))?;
        Ok(SplitRule {
            op: SplitOp::And,
            value,
        })
    }

    /// The colour of global rank `rank`.
    pub fn color(self, rank: usize) -> u64 {
        let (r, v) = (rank as u64, u64::from(self.value));
        match self.op {
            SplitOp::And => r & v,
            SplitOp::Or => r | v,
            SplitOp::Mod => r % v.max(1),
            SplitOp::Div => r / v.max(1),
        }
    }

    /// The groups of ranks `0..world`: the ranks of one colour each, in rank order, the groups
    /// ordered by their first rank.
    pub fn groups(self, world: usize) -> Vec<Vec<usize>> {
        let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
        for rank in 0..world {
            let c = self.color(rank);
            match groups.iter_mut().find(|(color, _)| *color == c) {
                Some((_, g)) => g.push(rank),
                None => groups.push((c, vec![rank])),
            }
        }
        groups.into_iter().map(|(_, g)| g).collect()
    }
}

impl fmt::Display for SplitRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op.symbol(), self.value)
    }
}

impl FromStr for SplitRule {
    type Err = String;

    fn from_str(text: &str) -> Result<SplitRule, String> {
        let t = text.trim();
        let found = WORDS.iter().find(|(w, _)| {
            t.get(..w.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(w))
        });
        let Some(&(word, op)) = found else {
            return Err(format!(
                "split '{text}' has no operation; write AND, OR, MOD or DIV (or &, |, %, /) \
                 and a value, as nccl-tests' NCCL_TESTS_SPLIT: 'MOD 8', '&0x7'"
            ));
        };
        let value = read_value(t[word.len()..].trim_start()).ok_or_else(|| {
            format!(
                "split '{text}': '{}' is not a whole number (decimal, 0x hexadecimal or 0b \
                 binary) up to {}",
                t[word.len()..].trim(),
                u32::MAX
            )
        })?;
        if value == 0 && matches!(op, SplitOp::Mod | SplitOp::Div) {
            return Err(format!(
                "split '{text}' divides by zero; give a value of 1 or more"
            ));
        }
        Ok(SplitRule { op, value })
    }
}

/// The groups a split makes of one world, as every point of that world runs them.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitGroups {
    /// `split %2 of 8`: the rule and the world it split, as summary.csv's `concurrent` column
    /// names them (a rule makes groups of one size at several worlds, run beside different
    /// numbers of others).
    pub label: String,
    /// Each group's global ranks, in rank order; all of one size.
    pub groups: Vec<Vec<usize>>,
}

impl SplitGroups {
    /// The groups of `rule` over ranks `0..world`, or why they cannot run (groups of
    /// different sizes, more than [`MAX_GROUPS`]).
    pub fn of(rule: SplitRule, world: usize) -> Result<SplitGroups, String> {
        let groups = rule.groups(world);
        if groups.len() > MAX_GROUPS {
            return Err(format!(
                "--split {rule} makes {} groups of world {world}, more than {MAX_GROUPS}",
                groups.len()
            ));
        }
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        if sizes.windows(2).any(|w| w[0] != w[1]) {
            let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
            return Err(format!(
                "--split {rule} makes groups of {} ranks of world {world}; groups of one size \
                 measure one call",
                list.join(", ")
            ));
        }
        Ok(SplitGroups {
            label: format!("split {rule} of {world}"),
            groups,
        })
    }

    /// Ranks in each group.
    pub fn size(&self) -> usize {
        self.groups.first().map_or(0, Vec::len)
    }
}

/// A group's ranks as summary.csv's `group` column writes them: `0-3` (consecutive), `1-7/2`
/// (1, 3, 5, 7: a constant step), else the ranks between spaces (`0 2`, `0 1 5`).
pub fn ranks_text(ranks: &[usize]) -> String {
    let steps: Vec<usize> = ranks.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    let even = steps
        .first()
        .is_some_and(|&s| s > 0 && steps.iter().all(|&x| x == s));
    match (ranks, even) {
        ([a, .., b], true) if steps[0] == 1 => format!("{a}-{b}"),
        ([a, _, .., b], true) => format!("{a}-{b}/{}", steps[0]),
        _ => {
            let list: Vec<String> = ranks.iter().map(usize::to_string).collect();
            list.join(" ")
        }
    }
}

/// A value as C's `strtoul(s, _, 0)` reads it (and nccl-tests' `0b`), the whole text.
fn read_value(t: &str) -> Option<u32> {
    let lower = t.to_ascii_lowercase();
    if let Some(d) = lower.strip_prefix("0b") {
        return read_digits(d, 2);
    }
    if let Some(d) = lower.strip_prefix("0x") {
        return read_digits(d, 16);
    }
    match lower.strip_prefix('0') {
        Some(d) if !d.is_empty() => read_digits(d, 8),
        _ => read_digits(&lower, 10),
    }
}

/// Digits of `radix` only (no sign, no spaces), within u32.
fn read_digits(d: &str, radix: u32) -> Option<u32> {
    let digits = !d.is_empty() && d.chars().all(|c| c.is_digit(radix));
    digits.then(|| u32::from_str_radix(d, radix).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::PointSplit;

    fn rule(t: &str) -> SplitRule {
        t.parse().unwrap()
    }

    #[test]
    fn nccl_tests_examples_make_their_groups() {
        // README: on 8 GPUs per node, AND 0x7 / MOD 8 = one GPU of each node per group.
        for t in ["AND 0x7", "MOD 8", "&7", "%8", "and 0b111", "mod 010"] {
            let g = rule(t).groups(16);
            assert_eq!(g.len(), 8, "{t}");
            assert_eq!(g[3], vec![3, 11], "{t}");
        }
        // OR 0x7 / DIV 8 = one group per node.
        for t in ["OR 0x7", "DIV 8", "|7", "/8"] {
            assert_eq!(
                rule(t).groups(16),
                vec![(0..8).collect::<Vec<_>>(), (8..16).collect()]
            );
        }
        assert_eq!(rule("AND 0x1").groups(4), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(rule("AND 0").groups(3), vec![vec![0, 1, 2]]);
        assert_eq!(SplitRule::from_mask("7").unwrap(), rule("&7"));
        assert_eq!(SplitRule::from_mask("0x10").unwrap(), rule("&16"));
        assert_eq!(rule(" MOD   2 ").to_string(), "%2");
    }

    #[test]
    fn rules_nccl_tests_would_run_as_one_group_are_refused() {
        for t in [
            "",
            "XOR 2",
            "MOD",
            "MOD x",
            "MOD 8abc",
            "MOD -1",
            "MOD 0",
            "/0",
            "0x7",
            "AND 0b2",
            "MOD 4294967296",
            "MOD 09",
        ] {
            assert!(t.parse::<SplitRule>().is_err(), "{t}");
        }
        assert!(SplitRule::from_mask("g").is_err());
    }

    #[test]
    fn groups_of_one_size_split_a_world_and_others_say_why_not() {
        let s = SplitGroups::of(rule("MOD 2"), 4).unwrap();
        assert_eq!((s.label.as_str(), s.size()), ("split %2 of 4", 2));
        let together = PointSplit {
            split: std::sync::Arc::new(s.clone()),
            alone: None,
            beside: None,
        };
        assert_eq!(together.roles(3), Some((vec![0, 1, 2, 3], vec![1, 3])));
        let alone = PointSplit {
            alone: Some(1),
            ..together
        };
        assert_eq!(alone.roles(3), Some((vec![1, 3], vec![1, 3])));
        assert_eq!(alone.roles(2), None);
        let why = SplitGroups::of(rule("MOD 3"), 4).unwrap_err();
        assert!(why.contains("2, 1, 1 ranks"), "{why}");
        assert!(SplitGroups::of(rule("MOD 100"), 100)
            .unwrap_err()
            .contains("64"));
    }

    #[test]
    fn ranks_read_as_ranges_steps_or_lists() {
        assert_eq!(ranks_text(&[0, 1, 2, 3]), "0-3");
        assert_eq!(ranks_text(&[1, 3, 5, 7]), "1-7/2");
        assert_eq!(ranks_text(&[3, 11]), "3 11");
        assert_eq!(ranks_text(&[0, 1, 5]), "0 1 5");
        assert_eq!(ranks_text(&[4]), "4");
        assert_eq!(ranks_text(&[]), "");
    }

    proptest::proptest! {
        /// Any text is refused or a rule whose groups partition the ranks: every rank in one
        /// group, each group in rank order.
        #[test]
        fn any_rule_partitions_the_ranks(
            text in "(?i)(and|or|mod|div|[&|%/x])? ?(0x|0b|0)?[0-9a-fA-F]{0,10}[ a-z]?",
            world in 0usize..70,
        ) {
            if let Ok(r) = text.parse::<SplitRule>() {
                let groups = r.groups(world);
                let mut all: Vec<usize> = groups.concat();
                proptest::prop_assert!(groups.iter().all(|g| g.windows(2).all(|w| w[0] < w[1])));
                all.sort_unstable();
                proptest::prop_assert_eq!(all, (0..world).collect::<Vec<_>>());
                proptest::prop_assert_eq!(r.to_string().parse::<SplitRule>().unwrap(), r);
            }
        }
    }
}
