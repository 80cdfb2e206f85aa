//! nccl-tests' flags on `collbench sweep`. Most have a collbench flag of the same letter
//! (`-b -e -f -n -w -m -d -o -r -T -R -x`, in `args.rs`); the ones here are the rest: those with
//! a meaning collbench has (`-t`/`-g` ranks, `-i` linear steps, `-G` graph launches, `-c`
//! checks, `-N` soak cycles) are read, and every other letter nccl-tests 2.19 takes is refused with one line that
//! says what to use instead. One table ([`REFUSED`]) feeds the parser, `--help` and the message.

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

use crate::error::{Error, Result};
use crate::units::{linear_series, parse_factor, parse_size, size_series};

/// An nccl-tests flag collbench does not take: its letter, long name, meaning, and what to do.
#[derive(Debug)]
pub struct RefusedFlag {
    pub short: char,
    pub long: &'static str,
    pub meaning: &'static str,
    pub instead: &'static str,
}

/// Every nccl-tests 2.19 flag (`longopts` in its src/common.cu) with no collbench meaning yet.
pub const REFUSED: &[RefusedFlag] = &[
    RefusedFlag {
        short: 'p',
        long: "parallel_init",
        meaning: "create communicators in parallel",
        instead: "nothing: every rank of collbench is its own process and initialises on its own",
    },
    RefusedFlag {
        short: 'y',
        long: "stream_null",
        meaning: "run on the default CUDA stream",
        instead: "nothing: the NCCL backend runs on a stream of its own",
    },
    RefusedFlag {
        short: 'C',
        long: "report_cputime",
        meaning: "report CPU time instead of GPU time",
        instead:
            "collbench's NCCL times are CUDA events; the loop time is wall-clock (loop_time_us)",
    },
    RefusedFlag {
        short: 'S',
        long: "report_timestamps",
        meaning: "print a timestamp per row",
        instead: "summary.csv's ended_utc column holds the time each point was written",
    },
    RefusedFlag {
        short: 'D',
        long: "device_implementation",
        meaning: "nccl-tests' own device kernels",
        instead: "nothing: collbench measures NCCL's own calls",
    },
    RefusedFlag {
        short: 'V',
        long: "device_cta_count",
        meaning: "CTAs of nccl-tests' device kernels",
        instead: "--ctas bounds the CTAs of NCCL's own calls",
    },
    RefusedFlag {
        short: 'M',
        long: "memory",
        meaning: "report memory use",
        instead: "collbench checks each point's memory before it runs and names what it needs",
    },
    RefusedFlag {
        short: 'u',
        long: "unalign",
        meaning: "misalign the buffers",
        instead: "nothing: collbench's buffers are aligned",
    },
    RefusedFlag {
        short: 'I',
        long: "per_iter_timing",
        meaning: "time every iteration",
        instead: "nothing: collbench always times every iteration (samples.csv)",
    },
    RefusedFlag {
        short: 'K',
        long: "per_iter_skip",
        meaning: "skip iterations of per-iteration timing",
        instead: "--warmup sets the untimed iterations",
    },
];

/// `--help`'s list of the nccl-tests flags collbench refuses.
pub fn refused_help() -> String {
    let mut text = String::from("nccl-tests flags collbench does not take (each is refused):");
    for f in REFUSED {
        text.push_str(&format!(
            "\n  -{}, --{}: {}; {}",
            f.short, f.long, f.meaning, f.instead
        ));
    }
    text
}

/// The nccl-tests flags without a collbench flag of their letter.
#[derive(Debug, Default)]
pub struct NcclTestsFlags {
    /// nccl-tests -t: threads per process.
    pub nthreads: Option<usize>,
    /// nccl-tests -g: GPUs per thread.
    pub ngpus: Option<usize>,
    /// nccl-tests -i: the linear step between sizes.
    pub step_bytes: Option<String>,
    /// nccl-tests -G: CUDA graph launches.
    pub cuda_graph_launches: Option<u64>,
    /// nccl-tests -c: checked iterations.
    pub check: Option<u64>,
    /// nccl-tests -N: cycles of the whole sweep, 0 without end.
    pub run_cycles: Option<u64>,
    /// The first refused flag given, with its value.
    refused: Option<(&'static RefusedFlag, String)>,
}

/// The flags read here: (short, long, help).
const READ: &[(char, &str, &str)] = &[
    ('t', "nthreads", "nccl-tests -t: with -g, -t T -g G starts T×G ranks (--ranks)"),
    ('g', "ngpus", "nccl-tests -g: GPUs per thread; -g G starts G ranks (--ranks)"),
    ('i', "stepbytes", "Linear steps: sizes -b, -b+I, ... up to -e (nccl-tests -i; taken where -f is not given or is 1)"),
    ('G', "cudagraph", "nccl-tests -G N: N > 0 is --cuda-graph --graph-launches N, 0 leaves it off"),
    ('c', "check", "nccl-tests -c: collbench checks every point once after timing; -c 0 is refused"),
    ('N', "run_cycles", "nccl-tests -N: N > 0 is --cycles N; 0 repeats until --duration or Ctrl-C"),
];

impl NcclTestsFlags {
    /// The ranks `-t` and `-g` ask for (T × G), if either was given.
    pub fn ranks(&self) -> Option<usize> {
        match (self.nthreads, self.ngpus) {
            (None, None) => None,
            (t, g) => Some(t.unwrap_or(1).saturating_mul(g.unwrap_or(1))),
        }
    }

    /// The ranks asked for by `--ranks` (`given`) or by `-t`/`-g`; the two must agree.
    pub fn ranks_with(&self, given: Option<usize>) -> Result<Option<usize>> {
        match (given, self.ranks()) {
            (Some(r), Some(tg)) if r != tg => Err(Error::usage(format!(
                "--ranks {r} and -t/-g ({tg} ranks) disagree; give one of them"
            ))),
            (r, tg) => Ok(r.or(tg)),
        }
    }

    /// The sizes from -b and -e: a geometric series of factor -f (2 where not given), or
    /// nccl-tests' linear steps of -i where -i is given and -f is not (or is 1).
    pub fn sizes(&self, begin: usize, end: usize, factor: Option<&str>) -> Result<Vec<usize>> {
        let named = |flag: &str, e: Error| Error::usage(format!("{flag}: {e}"));
        match (&self.step_bytes, factor.map(str::trim)) {
            (Some(step), None | Some("1")) => {
                let step = parse_size(step).map_err(|e| named("-i", e))?;
                linear_series(begin, end, step)
            }
            (_, f) => {
                let factor = parse_factor(f.unwrap_or("2")).map_err(|e| named("-f", e))?;
                size_series(begin, end, factor)
            }
        }
    }

    /// The first refused flag as a usage error; `-c 0` too.
    pub fn refuse(&self) -> Result<()> {
        if let Some((f, value)) = &self.refused {
            return Err(Error::usage(format!(
                "-{} {value} (nccl-tests --{}: {}) has no collbench meaning: {}",
                f.short, f.long, f.meaning, f.instead
            )));
        }
        if self.check == Some(0) {
            return Err(Error::usage(
                "-c 0: collbench always checks every point, once, after its timed iterations \
                 (outside the timing); drop -c",
            ));
        }
        Ok(())
    }
}

impl FromArgMatches for NcclTestsFlags {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let text = |name: &str| m.get_one::<String>(name).cloned();
        let number = |name: &str| -> std::result::Result<Option<u64>, clap::Error> {
            let Some(t) = text(name) else { return Ok(None) };
            t.trim().parse().map(Some).map_err(|_| {
                let msg = format!("invalid value '{t}' for '--{name}': expected a whole number\n");
                clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg)
            })
        };
        let count =
            |name| number(name).map(|n| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX)));
        let refused = REFUSED.iter().find_map(|f| text(f.long).map(|v| (f, v)));
        Ok(NcclTestsFlags {
            nthreads: count("nthreads")?,
            ngpus: count("ngpus")?,
            step_bytes: text("stepbytes"),
            cuda_graph_launches: number("cudagraph")?,
            check: number("check")?,
            run_cycles: number("run_cycles")?,
            refused,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for NcclTestsFlags {
    fn augment_args(cmd: Command) -> Command {
        let read = READ.iter().fold(cmd, |cmd, &(short, long, help)| {
            cmd.arg(value_arg(short, long).help(help))
        });
        REFUSED.iter().fold(read, |cmd, f| {
            cmd.arg(value_arg(f.short, f.long).hide(true))
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// A flag that takes one value, as every nccl-tests flag does.
fn value_arg(short: char, long: &'static str) -> Arg {
    Arg::new(long)
        .short(short)
        .long(long)
        .num_args(1)
        .allow_negative_numbers(true)
        .help_heading("nccl-tests flags")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<NcclTestsFlags, clap::Error> {
        let cmd = NcclTestsFlags::augment_args(Command::new("t").no_binary_name(true));
        NcclTestsFlags::from_arg_matches(&cmd.try_get_matches_from(args)?)
    }

    #[test]
    fn every_refused_flag_is_refused_by_letter_and_name() {
        for f in REFUSED {
            for given in [format!("-{}", f.short), format!("--{}", f.long)] {
                let flags = parse(&[&given, "1"]).unwrap();
                let e = flags.refuse().unwrap_err().to_string();
                assert!(
                    e.starts_with(&format!("-{} 1 (nccl-tests --{}", f.short, f.long)),
                    "{e}"
                );
                assert!(e.contains(f.instead), "{e}");
            }
        }
        assert!(refused_help().lines().count() == REFUSED.len() + 1);
    }

    #[test]
    fn read_flags_keep_their_meaning() {
        let f = parse(&[
            "-t", "2", "-g", "4", "-i", "1M", "-G", "3", "-c", "1", "-N", "0",
        ]);
        let f = f.unwrap();
        assert_eq!(f.run_cycles, Some(0));
        assert_eq!(f.ranks(), Some(8));
        assert_eq!(f.step_bytes.as_deref(), Some("1M"));
        assert_eq!((f.cuda_graph_launches, f.check), (Some(3), Some(1)));
        assert!(f.refuse().is_ok());
        assert_eq!(parse(&["-g", "8"]).unwrap().ranks(), Some(8));
        assert_eq!(parse(&[]).unwrap().ranks(), None);
        assert!(parse(&["-c", "0"]).unwrap().refuse().is_err());
        // Near-valid numbers are one clear error.
        for bad in ["-1", "2x", "", "1.5"] {
            assert!(parse(&["-g", bad]).is_err(), "{bad}");
        }
    }
}
