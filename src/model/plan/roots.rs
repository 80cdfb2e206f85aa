//! `--root`: the root rank of the rooted ops, one or every rank of each group.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;

/// Which ranks the rooted ops (Broadcast, Reduce, Gather, Scatter) are measured with as root.
/// Written in meta.json's options as the rank number or `"all"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Roots {
    /// This index in each group (nccl-tests `-r N`; default 0).
    Rank(usize),
    /// Every rank of each group in turn, one curve each (nccl-tests `-r -1`).
    All,
}

impl Default for Roots {
    fn default() -> Self {
        Roots::Rank(0)
    }
}

impl Roots {
    /// The roots measured in a group of `world` ranks (a fixed root must be one of them:
    /// [`crate::model::plan::SweepOptions::validate`] checks it first).
    pub fn in_group(self, world: usize) -> Vec<usize> {
        match self {
            Roots::Rank(r) => vec![r],
            Roots::All => (0..world).collect(),
        }
    }
}

impl fmt::Display for Roots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Roots::Rank(r) => write!(f, "{r}"),
            Roots::All => f.write_str("all"),
        }
    }
}

impl FromStr for Roots {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("all") || t == "-1" {
            return Ok(Roots::All);
        }
        t.parse::<usize>().map(Roots::Rank).map_err(|_| {
            Error::usage(format!(
                "root '{s}' is not a rank; give a rank number (0 is the first) or 'all'"
            ))
        })
    }
}

impl Serialize for Roots {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Roots::Rank(r) => s.serialize_u64(*r as u64),
            Roots::All => s.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for Roots {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Rank(usize),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Rank(r) => Ok(Roots::Rank(r)),
            Written::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_parse_and_round_trip() {
        assert_eq!("3".parse::<Roots>().unwrap(), Roots::Rank(3));
        assert_eq!(" all ".parse::<Roots>().unwrap(), Roots::All);
        assert_eq!("-1".parse::<Roots>().unwrap(), Roots::All);
        let e = "x".parse::<Roots>().unwrap_err().to_string();
        assert!(e.contains("root 'x' is not a rank"), "{e}");
        for r in [Roots::Rank(0), Roots::Rank(7), Roots::All] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<Roots>(&json).unwrap(), r);
        }
        assert_eq!(serde_json::to_string(&Roots::Rank(2)).unwrap(), "2");
        assert_eq!(serde_json::to_string(&Roots::All).unwrap(), "\"all\"");
        assert_eq!(Roots::All.in_group(3), vec![0, 1, 2]);
        assert_eq!(Roots::Rank(2).in_group(3), vec![2]);
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panic(s in "\\PC{0,12}") {
            if let Ok(r) = s.parse::<Roots>() {
                prop_assert_eq!(r.to_string().parse::<Roots>().unwrap(), r);
            }
        }
    }
}
