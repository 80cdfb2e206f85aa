//! The soak flags of `collbench sweep`: `--cycles`, `--duration` and nccl-tests' `-N`, read
//! into one [`Soak`].

use clap::Args;

use crate::error::{Error, Result};
use crate::model::plan::{Soak, MAX_CYCLES, MAX_DURATION};
use crate::units::parse_duration;

/// `--cycles` and `--duration`.
#[derive(Args, Debug, Default)]
pub struct SoakFlags {
    /// Soak: measure the whole plan N times over, each pass a cycle with the same points,
    /// every row written with its cycle and time as it ends (1 to 1000000; nccl-tests -N N)
    /// [default: 1].
    #[arg(long, value_name = "N")]
    pub cycles: Option<u64>,
    /// Soak: start cycles of the whole plan until this much time has passed (e.g. 8h, 30m;
    /// a bare number is seconds), then end after the cycle under way; with --cycles, whichever
    /// comes first. `collbench report` shows each point's drift over the cycles.
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
}

impl SoakFlags {
    /// The soak asked for; `run_cycles` is nccl-tests' `-N` (0: no end but --duration or
    /// Ctrl-C), which must agree with `--cycles`.
    pub fn soak(&self, run_cycles: Option<u64>) -> Result<Soak> {
        let cycles =
            match (self.cycles, run_cycles) {
                (Some(c), Some(n)) if c != n => {
                    return Err(Error::usage(format!(
                        "--cycles {c} and -N {n} disagree; give one of them"
                    )))
                }
                (Some(0), _) => return Err(Error::usage(
                    "--cycles 0: give at least 1, or -N 0 (with --duration) to repeat until the \
                     time is up or Ctrl-C",
                )),
                (Some(c), _) | (None, Some(c)) => c,
                (None, None) if self.duration.is_some() => 0,
                (None, None) => 1,
            };
        if cycles > MAX_CYCLES {
            return Err(Error::usage(format!(
                "--cycles {cycles} is above {MAX_CYCLES}; use --duration for long soaks"
            )));
        }
        Ok(Soak {
            cycles: (cycles > 0).then_some(cycles),
            duration_s: self.duration_s()?,
        })
    }

    fn duration_s(&self) -> Result<Option<f64>> {
        let Some(text) = &self.duration else {
            return Ok(None);
        };
        let d = parse_duration(text).map_err(|e| Error::usage(format!("--duration: {e}")))?;
        if d > MAX_DURATION {
            return Err(Error::usage(format!(
                "--duration {}: longer than a year; give a shorter time",
                text.trim()
            )));
        }
        Ok(Some(d.as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(cycles: Option<u64>, duration: Option<&str>) -> SoakFlags {
        SoakFlags {
            cycles,
            duration: duration.map(String::from),
        }
    }

    #[test]
    fn no_flag_is_one_cycle() {
        assert_eq!(flags(None, None).soak(None).unwrap(), Soak::once());
        assert_eq!(flags(None, None).soak(Some(1)).unwrap(), Soak::once());
    }

    #[test]
    fn cycles_and_n_agree_or_are_refused() {
        let s = flags(Some(3), None).soak(Some(3)).unwrap();
        assert_eq!(s.cycles, Some(3));
        let e = flags(Some(3), None).soak(Some(4)).unwrap_err().to_string();
        assert!(e.contains("--cycles 3 and -N 4 disagree"), "{e}");
        let e = flags(Some(0), None).soak(None).unwrap_err().to_string();
        assert!(e.starts_with("--cycles 0"), "{e}");
        let e = flags(Some(MAX_CYCLES + 1), None).soak(None).unwrap_err();
        assert!(e.to_string().contains("--duration"), "{e}");
    }

    #[test]
    fn a_duration_alone_or_n_zero_has_no_count() {
        let s = flags(None, Some("90m")).soak(None).unwrap();
        assert_eq!((s.cycles, s.duration_s), (None, Some(5400.0)));
        let s = flags(None, None).soak(Some(0)).unwrap();
        assert_eq!((s.cycles, s.duration_s), (None, None));
        let s = flags(Some(5), Some("2s")).soak(None).unwrap();
        assert_eq!((s.cycles, s.duration_s), (Some(5), Some(2.0)));
    }

    #[test]
    fn near_valid_durations_are_one_clear_line() {
        for bad in ["0", "-1s", "8x", "", "400d", "inf"] {
            let e = flags(None, Some(bad)).soak(None).unwrap_err().to_string();
            assert!(e.starts_with("--duration"), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
