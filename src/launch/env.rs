//! Bootstrap from the environment: which rank this process is, how many ranks there are and
//! where rank 0's rendezvous store listens, when collbench was started by a launcher that
//! spans hosts (mpirun, srun, torchrun) rather than by itself.
//!
//! Sources, first match wins:
//! 1. a torchrun worker (`TORCHELASTIC_RUN_ID` set). torchrun is then the innermost launcher:
//!    `srun torchrun ...` hands every worker the `SLURM_*` variables of its agent's task, so
//!    they must not win over `RANK`.
//! 2. Open MPI: `OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}`. Source: "Environment
//!    variables set for MPI applications", <https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html>.
//!    `OMPI_COMM_WORLD_NODE_RANK` is documented there as "the relative rank of this process on
//!    this node looking across all jobs": not a node index, so it is not used; Open MPI gives
//!    no node index or host list.
//! 3. a Slurm task started by srun: `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` (else `SLURM_NTASKS`,
//!    else `SLURM_NPROCS`), `SLURM_LOCALID`, `SLURM_NODEID`, `SLURM_STEP_TASKS_PER_NODE`,
//!    `SLURM_STEP_NODELIST` (else `SLURM_JOB_NODELIST`, else `SLURM_NODELIST`). Source: srun(1),
//!    "OUTPUT ENVIRONMENT VARIABLES", <https://slurm.schedmd.com/srun.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES>.
//!    Only tasks of a job step have `SLURM_STEP_ID` (Slurm's `src/common/env.c` sets it only for
//!    a step id >= 0); a batch script or salloc shell also has `SLURM_PROCID=0` and the job's
//!    `SLURM_NTASKS`, and must not be mistaken for rank 0 of a job step.
//! 4. torchrun-style variables: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
//!    `GROUP_RANK` (else `NODE_RANK`), `MASTER_ADDR`, `MASTER_PORT`. Source: torchrun
//!    "Environment Variables", <https://pytorch.org/docs/stable/elastic/run.html>. torchrun does
//!    not set `NODE_RANK`; Lightning and MosaicML Composer launchers do.
//!
//! Where everyone meets (the `master`): `COLLBENCH_STORE_ADDR=host:port` if set; otherwise host
//! `MASTER_ADDR`, else (Slurm) the first host of the step's host list; port `MASTER_PORT`, else
//! [`DEFAULT_STORE_PORT`]. Under torchrun, when `TORCHELASTIC_USE_AGENT_STORE=True` torchrun's
//! own agent already listens on `MASTER_PORT` (torch/distributed/rendezvous.py), so the store
//! takes `MASTER_PORT + 1`. `COLLBENCH_TOKEN` (hex) is the job's shared secret for the store.
//!
//! Every malformed or inconsistent value is an [`Error::Usage`] naming the variable, its value
//! (a malformed token is described, never printed: it is a secret)
//! and the fix. A process with no launcher variables gets `Ok(None)`: collbench then starts its
//! own ranks. A launcher world of 1 is returned as found; the caller decides what it means.

mod address;
mod launchers;

use std::net::Ipv6Addr;

use crate::error::{Error, Result};
use crate::launch::hostlist;

use address::store_address;
pub use address::{join_host_port, parse_token};
use launchers::{open_mpi, slurm, torchrun};

/// Overrides where rank 0's store listens and everyone connects: `host:port` or `[v6]:port`.
pub const STORE_ADDR_ENV: &str = "COLLBENCH_STORE_ADDR";
/// The job's random token in hex (at least 16 digits), the same for every rank.
pub const TOKEN_ENV: &str = "COLLBENCH_TOKEN";
/// The store's port when nothing says otherwise (torch's default is 29500; this stays clear).
pub const DEFAULT_STORE_PORT: u16 = 29517;
/// The longest token accepted, in bytes (the store's limit too).
pub const MAX_TOKEN_BYTES: usize = 256;

/// The launcher that started this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    OpenMpi,
    Slurm,
    Torchrun,
}

impl Launcher {
    /// How users know it.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::OpenMpi => "Open MPI (mpirun)",
            Launcher::Slurm => "Slurm (srun)",
            Launcher::Torchrun => "torchrun",
        }
    }

    /// The fix appended to errors about this launcher's variables.
    fn hint(self) -> &'static str {
        match self {
            Launcher::OpenMpi => {
                "mpirun sets these for every rank; unset them if collbench was not started by mpirun"
            }
            Launcher::Slurm => {
                "srun sets these for every task; unset them if collbench was not started by srun"
            }
            Launcher::Torchrun => {
                "torchrun sets these for every worker; set RANK and WORLD_SIZE together (and \
                 MASTER_ADDR/MASTER_PORT), or unset them to let collbench start its own ranks"
            }
        }
    }
}

/// What a launcher told this rank process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrap {
    pub launcher: Launcher,
    pub rank: usize,
    pub world: usize,
    /// Rank among the ranks on this host.
    pub local_rank: Option<usize>,
    /// Ranks on this host.
    pub local_world: Option<usize>,
    /// Index of this host among the job's hosts.
    pub node: Option<usize>,
    /// The job step's host names in node order (Slurm only).
    pub hosts: Option<Vec<String>>,
    /// Where rank 0's store listens and everyone connects: (host, port). `None` only when the
    /// world is 1 and nothing names a host.
    pub master: Option<(String, u16)>,
    /// Which variables `master` came from, for error messages ("MASTER_ADDR, MASTER_PORT").
    pub master_origin: String,
    /// `COLLBENCH_TOKEN`, decoded.
    pub token: Option<Vec<u8>>,
    /// The launcher's id of this job (`SLURM_JOB_ID.SLURM_STEP_ID`, `TORCHELASTIC_RUN_ID`,
    /// `PMIX_NAMESPACE`), if any: not a secret, but it keeps two jobs' stores apart.
    pub job_id: Option<String>,
}

impl Bootstrap {
    /// `master` as `host:port` (IPv6 in brackets), for [`crate::launch::store::StoreClient`].
    pub fn store_addr(&self) -> Option<String> {
        self.master.as_ref().map(|(h, p)| join_host_port(h, *p))
    }

    /// Where rank 0 binds its store: every interface, on the store's port.
    pub fn store_bind_addr(&self) -> Option<String> {
        self.master
            .as_ref()
            .map(|(h, p)| match h.parse::<Ipv6Addr>() {
                Ok(_) => format!("[::]:{p}"),
                Err(_) => format!("0.0.0.0:{p}"),
            })
    }
}

/// Reads the launcher variables through `env` (a lookup, so tests need not touch the process
/// environment). `Ok(None)` when no launcher started this process.
pub fn detect(env: &impl Fn(&str) -> Option<String>) -> Result<Option<Bootstrap>> {
    let v = Vars { get: env };
    let found = if v.has("TORCHELASTIC_RUN_ID") && v.has("RANK") {
        torchrun(&v)?
    } else if let Some(b) = open_mpi(&v)? {
        Some(b)
    } else if let Some(b) = slurm(&v)? {
        Some(b)
    } else {
        torchrun(&v)?
    };
    let Some(mut b) = found else { return Ok(None) };
    b.token = v.raw(TOKEN_ENV).map(|t| parse_token(&t)).transpose()?;
    Ok(Some(b))
}

/// [`detect`] on this process's environment. Under mpirun or srun every rank has the same
/// variables: a malformed one is said by rank 0 alone ([`uniform_launch_rank`]).
pub fn detect_process() -> Result<Option<Bootstrap>> {
    detect(&|name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
        .map_err(|e| e.alike_on_every_rank(uniform_launch_rank().unwrap_or(0)))
}

/// This process's world rank as any launcher's variables give it (Open MPI, PMI-1/2, PMIx,
/// Slurm, torchrun), without the store address [`detect`] insists on: enough to know which
/// rank of an MPI job leads. `None` when no launcher variable holds a rank.
pub fn launcher_rank(env: &impl Fn(&str) -> Option<String>) -> Option<usize> {
    const RANK_VARS: [&str; 5] = [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
        "RANK",
    ];
    RANK_VARS
        .iter()
        .find_map(|k| env(k)?.trim().parse::<usize>().ok())
}

/// This process's world rank under a launcher that gives every rank the same command line and
/// variables: mpirun (Open MPI, whose `-x` exports alike) and srun (a job step's tasks, which
/// inherit the submitting environment); `None` under any other launcher or none. An error
/// found alike on every rank is then said by rank 0 alone.
pub fn uniform_launch_rank() -> Option<usize> {
    let var = |k: &str| std::env::var(k).ok();
    let rank = var("OMPI_COMM_WORLD_RANK").or_else(|| {
        // Only tasks of a job step have SLURM_STEP_ID (see `slurm`): not a batch script.
        var("SLURM_STEP_ID").and(var("SLURM_PROCID"))
    })?;
    rank.trim().parse().ok()
}

/// The process environment, or a test's map, behind one lookup.
struct Vars<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl Vars<'_> {
    /// The trimmed value; empty counts as unset.
    fn raw(&self, name: &str) -> Option<String> {
        (self.get)(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    fn has(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }

    /// A whole number, if set.
    fn number(&self, var: &str, l: Launcher) -> Result<Option<usize>> {
        let Some(v) = self.raw(var) else {
            return Ok(None);
        };
        if !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::usage(format!(
                "{var}='{v}' is not a whole number such as 0, 3 or 16; {}",
                l.hint()
            )));
        }
        v.parse()
            .map(Some)
            .map_err(|_| Error::usage(format!("{var}='{v}' is too large; {}", l.hint())))
    }

    /// A whole number that must be set because `partner` is.
    fn required(&self, var: &str, partner: &str, l: Launcher) -> Result<usize> {
        self.number(var, l)?
            .ok_or_else(|| Error::usage(format!("{partner} is set but {var} is not; {}", l.hint())))
    }
}

/// A (variable, value) pair, for checks that name both.
type Named<'a> = (&'a str, usize);

/// Checks the identities against each other.
fn check_ids(
    l: Launcher,
    rank: Named,
    world: Named,
    local_rank: Option<Named>,
    local_world: Option<Named>,
) -> Result<()> {
    let fail = |msg: String| Err(Error::usage(format!("{msg}; {}", l.hint())));
    let below =
        |(a, x): Named, (b, y): Named| format!("{a}={x} is not below {b}={y} (ranks count from 0)");
    if world.1 == 0 {
        return fail(format!("{}=0: a job has at least one rank", world.0));
    }
    if rank.1 >= world.1 {
        return fail(below(rank, world));
    }
    if let Some(lw) = local_world {
        if lw.1 == 0 || lw.1 > world.1 {
            return fail(format!(
                "{}={} must be between 1 and {}={}",
                lw.0, lw.1, world.0, world.1
            ));
        }
        if let Some(lr) = local_rank.filter(|lr| lr.1 >= lw.1) {
            return fail(below(lr, lw));
        }
    }
    match local_rank.filter(|lr| lr.1 >= world.1) {
        Some(lr) => fail(below(lr, world)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
