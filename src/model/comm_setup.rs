//! How the NCCL backend sets up the communicators a point runs on, beyond the algorithm and
//! protocol: buffer registration (`--register`, nccl-tests `-R`), the CTA policy
//! (`--cta-policy`, nccl-tests `-x`) and the CTA bounds (`--ctas`, `ncclConfig_t.minCTAs` and
//! `maxCTAs`, NCCL's `NCCL_MIN_CTAS`/`NCCL_MAX_CTAS`). Each flag takes a list; the sweep
//! measures every combination with communicators of its own, and every point records its
//! combination (summary.csv's `nccl_register`, `nccl_cta_policy`, `nccl_ctas`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::call::{CtaPolicy, Register};
use crate::error::{Error, Result};

/// NCCL's channel limit (`MAXCHANNELS`, src/include/device.h, 64 since NCCL 2.12): NCCL caps
/// larger CTA bounds to it, so a larger value would be recorded but not run.
pub const MAX_CTAS: u32 = 64;

/// `ncclConfig_t.minCTAs` and `maxCTAs`: at least `min` and at most `max` CTAs (channels) per
/// collective. Written `N` (both N) or `MIN:MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CtaBounds {
    pub min: u32,
    pub max: u32,
}

impl fmt::Display for CtaBounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}:{}", self.min, self.max)
        }
    }
}

impl FromStr for CtaBounds {
    type Err = Error;

    fn from_str(s: &str) -> Result<CtaBounds> {
        let bad = |why: &str| {
            Error::usage(format!(
                "bad CTA bounds '{s}': {why}; give N (exactly N CTAs) or MIN:MAX, each 1 to \
                 {MAX_CTAS}"
            ))
        };
        let number = |t: &str| -> Result<u32> {
            let n: u32 = t.trim().parse().map_err(|_| bad("not a whole number"))?;
            if !(1..=MAX_CTAS).contains(&n) {
                return Err(bad(&format!(
                    "{n} is outside 1 to {MAX_CTAS} (NCCL's MAXCHANNELS)"
                )));
            }
            Ok(n)
        };
        let (min, max) = match s.split_once(':') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(s)?;
                (n, n)
            }
        };
        if min > max {
            return Err(bad("MIN is above MAX"));
        }
        Ok(CtaBounds { min, max })
    }
}

impl Serialize for CtaBounds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CtaBounds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One combination of the communicator axes. Each part is `None` where the library's default
/// was left alone (no registration, NCCL's own CTA policy and bounds), which is also what every
/// other backend and every imported point holds: `Register::None` is stored as `None`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct CommSetup {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "registered"
    )]
    pub register: Option<Register>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta_policy: Option<CtaPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctas: Option<CtaBounds>,
}

/// A registration as files give it, `none` stored as the default (`None`).
fn registered<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Register>, D::Error> {
    let r = Option::<Register>::deserialize(d)?;
    Ok(r.filter(|r| *r != Register::None))
}

impl CommSetup {
    /// The library's defaults: nothing set.
    pub fn is_default(&self) -> bool {
        *self == CommSetup::default()
    }

    /// The registration asked for (`Register::None` where nothing is registered).
    pub fn registration(&self) -> Register {
        self.register.unwrap_or(Register::None)
    }

    /// What labels and progress lines add for it: ` register local cta efficiency ctas 4`,
    /// nothing for the defaults.
    pub fn label(&self) -> String {
        let mut out = String::new();
        if let Some(r) = self.register {
            out.push_str(&format!(" register {r}"));
        }
        if let Some(p) = self.cta_policy {
            out.push_str(&format!(" cta {p}"));
        }
        if let Some(c) = self.ctas {
            out.push_str(&format!(" ctas {c}"));
        }
        out
    }
}

/// The communicator axes as given: each list empty where its flag was not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommAxes {
    pub registers: Vec<Register>,
    pub cta_policies: Vec<CtaPolicy>,
    pub ctas: Vec<CtaBounds>,
}

impl CommAxes {
    /// Every combination, registration outermost, in the order given; one default combination
    /// when no axis was given. Repeated values are measured once.
    pub fn setups(&self) -> Vec<CommSetup> {
        let registers = option_list(&self.registers, |r| (r != Register::None).then_some(r));
        let policies = option_list(&self.cta_policies, Some);
        let ctas = option_list(&self.ctas, Some);
        let mut out = Vec::new();
        for &register in &registers {
            for &cta_policy in &policies {
                for &ctas in &ctas {
                    let s = CommSetup {
                        register,
                        cta_policy,
                        ctas,
                    };
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    /// Whether any axis was given.
    pub fn any(&self) -> bool {
        !(self.registers.is_empty() && self.cta_policies.is_empty() && self.ctas.is_empty())
    }
}

/// `[None]` for an axis not given, else each value through `f`.
fn option_list<T: Copy, U>(given: &[T], f: impl Fn(T) -> Option<U>) -> Vec<Option<U>> {
    if given.is_empty() {
        return vec![None];
    }
    given.iter().map(|&v| f(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cta_bounds_read_one_number_or_a_range_and_refuse_the_rest() {
        assert_eq!(
            "4".parse::<CtaBounds>().unwrap(),
            CtaBounds { min: 4, max: 4 }
        );
        let r: CtaBounds = " 2:64".parse().unwrap();
        assert_eq!((r.min, r.max), (2, 64));
        assert_eq!(r.to_string(), "2:64");
        assert_eq!("8:8".parse::<CtaBounds>().unwrap().to_string(), "8");
        for bad in [
            "0",
            "65",
            "4:2",
            "",
            ":",
            "1:",
            "x",
            "-1",
            "1:2:3",
            "4.0",
            "99999999999",
        ] {
            let e = bad.parse::<CtaBounds>().unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn setups_are_every_combination_with_none_as_the_default() {
        assert_eq!(CommAxes::default().setups(), vec![CommSetup::default()]);
        let axes = CommAxes {
            registers: vec![Register::None, Register::Local, Register::Local],
            cta_policies: vec![],
            ctas: vec!["4".parse().unwrap(), "1:8".parse().unwrap()],
        };
        let s = axes.setups();
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0].register, None, "none is stored as the default");
        assert_eq!(s[0].ctas.unwrap().to_string(), "4");
        assert_eq!(s[3].label(), " register local ctas 1:8");
        assert!(CommSetup::default().label().is_empty());
        assert_eq!(s[2].registration(), Register::Local);
    }

    #[test]
    fn a_setup_survives_json_and_the_default_writes_nothing() {
        let s = CommSetup {
            register: Some(Register::Symmetric),
            cta_policy: Some(CtaPolicy::Zero),
            ctas: Some(CtaBounds { min: 2, max: 16 }),
        };
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"register":"symmetric","cta_policy":"zero","ctas":"2:16"}"#
        );
        assert_eq!(serde_json::from_str::<CommSetup>(&text).unwrap(), s);
        assert_eq!(serde_json::to_string(&CommSetup::default()).unwrap(), "{}");
        assert!(serde_json::from_str::<CommSetup>(r#"{"ctas":"0"}"#).is_err());
        let none: CommSetup = serde_json::from_str(r#"{"register":"none"}"#).unwrap();
        assert!(none.is_default(), "{none:?}");
    }
}
