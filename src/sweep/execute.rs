//! The one entry point that measures a sweep request: on the backend it names, in the role this
//! process has (a local launch of host ranks, one rank of a launcher's world, an MPI rank, the
//! NCCL launcher or one of its ranks). `collbench sweep` and `collbench accept` call it.

use std::path::PathBuf;

use crate::error::Result;
use crate::model::call::BackendKind;
use crate::sweep::distributed::run_distributed;
use crate::sweep::lead::Outcome;
use crate::sweep::request::SweepRequest;
use crate::sweep::run::run_sweep;

/// What this process did for the request.
pub enum Executed {
    /// It led the run; its points are in `Outcome::dir`.
    Lead(Outcome),
    /// It was a rank whose leader reports (under mpirun, srun or torchrun, or started by the
    /// NCCL launcher).
    Follower,
    /// It launched the NCCL ranks of this host; their exit code.
    Launcher(u8),
}

/// Measures `req` on its backend.
pub fn execute(req: &SweepRequest) -> Result<Executed> {
    match req.backend {
        BackendKind::Host => host(req),
        BackendKind::Mpi => mpi(req),
        BackendKind::Nccl => nccl(req),
    }
}

/// Measures the requests in turn (`accept`'s repeats), all on the backend of the first;
/// `before(i)` is called as request `i` starts. Under mpirun the MPI backend measures them all
/// in one MPI session, since a process can start MPI only once.
pub fn execute_each(reqs: &[SweepRequest], mut before: impl FnMut(usize)) -> Result<Vec<Executed>> {
    if let Some(r) = reqs.iter().find(|r| r.backend != reqs[0].backend) {
        return Err(crate::error::Error::usage(format!(
            "the requests name two backends ({} and {}); measure one backend per run",
            reqs[0].backend, r.backend
        )));
    }
    match reqs.first().map(|r| r.backend) {
        Some(BackendKind::Mpi) => mpi_each(reqs, before),
        _ => {
            let run = |(i, r): (usize, &SweepRequest)| {
                before(i);
                execute(r)
            };
            reqs.iter().enumerate().map(run).collect()
        }
    }
}

/// What this process is in a run of `req`, before anything is measured.
#[derive(Debug, PartialEq, Eq)]
pub enum Role {
    /// It writes the results: the only process, or rank 0 of a launcher's world.
    Lead,
    /// Another rank of a launcher's world (mpirun, srun, torchrun): it measures, rank 0 writes.
    Follower,
    /// A rank that collbench's own NCCL launcher started by re-running this command line: it
    /// measures into the folder the launcher names, and the launcher reports.
    LaunchedRank(PathBuf),
}

/// This process's role in a run of `req` (the host backend's launch is checked whole here, so a
/// bad one is refused before any folder exists; an MPI rank reads only its rank).
pub fn role(req: &SweepRequest) -> Result<Role> {
    use crate::launch::env::{detect_process, launcher_rank};
    if let Some(dir) = launched_rank_out() {
        return Ok(Role::LaunchedRank(dir));
    }
    let rank = if req.backend == BackendKind::Mpi {
        let env = |k: &str| std::env::var(k).ok();
        launcher_rank(&env)
    } else {
        detect_process()?.filter(|b| b.world > 1).map(|b| b.rank)
    };
    Ok(match rank {
        None | Some(0) => Role::Lead,
        Some(_) => Role::Follower,
    })
}

/// The folder this process writes when it is a rank started by collbench's own NCCL launcher
/// (which re-runs the launcher's command line and names the folder in the environment); `None`
/// for any other process.
pub fn launched_rank_out() -> Option<PathBuf> {
    #[cfg(feature = "nccl")]
    {
        use crate::sweep::nccl::launch::{OUT_ENV, RANK_ENV};
        std::env::var_os(RANK_ENV)?;
        std::env::var_os(OUT_ENV).map(PathBuf::from)
    }
    #[cfg(not(feature = "nccl"))]
    None
}

/// Prints where a leader's points went; the exit code of `collbench sweep`: 1 when some point
/// computed wrong results, else 0 (a launcher passes on its ranks' code).
pub fn report(executed: &Executed) -> u8 {
    let outcome = match executed {
        Executed::Lead(outcome) => outcome,
        Executed::Follower => return 0,
        Executed::Launcher(code) => return *code,
    };
    crate::say!(
        "collbench: {} points written to {}",
        outcome.points,
        outcome.dir.display()
    );
    if outcome.wrong_points > 0 {
        crate::say!(
            "collbench: {} point(s) produced wrong results (column `wrong`)",
            outcome.wrong_points
        );
        return 1;
    }
    0
}

/// Started once per rank by mpirun, srun or torchrun: join the others; only rank 0 reports.
fn host(req: &SweepRequest) -> Result<Executed> {
    let detected = crate::launch::env::detect_process()?;
    let lead = match detected {
        Some(boot) if boot.world > 1 => run_distributed(req, &boot)?,
        _ => Some(run_sweep(req)?),
    };
    Ok(lead.map_or(Executed::Follower, Executed::Lead))
}

#[cfg(feature = "mpi")]
fn mpi(req: &SweepRequest) -> Result<Executed> {
    let lead = crate::sweep::mpi::run_mpi(req)?;
    Ok(lead.map_or(Executed::Follower, Executed::Lead))
}

/// A build without the MPI backend says how to get one.
#[cfg(not(feature = "mpi"))]
fn mpi(req: &SweepRequest) -> Result<Executed> {
    unavailable(req)
}

#[cfg(feature = "mpi")]
fn mpi_each(reqs: &[SweepRequest], before: impl FnMut(usize)) -> Result<Vec<Executed>> {
    let leads = crate::sweep::mpi::run_mpi_each(reqs, before)?;
    let executed = |lead: Option<Outcome>| lead.map_or(Executed::Follower, Executed::Lead);
    Ok(leads.into_iter().map(executed).collect())
}

#[cfg(not(feature = "mpi"))]
fn mpi_each(reqs: &[SweepRequest], _before: impl FnMut(usize)) -> Result<Vec<Executed>> {
    unavailable(&reqs[0]).map(|executed| vec![executed])
}

#[cfg(feature = "nccl")]
fn nccl(req: &SweepRequest) -> Result<Executed> {
    use crate::sweep::nccl::{run_sweep, NcclRun};
    Ok(match run_sweep(req)? {
        NcclRun::Lead(outcome) => Executed::Lead(outcome),
        NcclRun::Follower => Executed::Follower,
        NcclRun::Launcher(code) => Executed::Launcher(code),
    })
}

/// A build without the NCCL backend says how to get one.
#[cfg(not(feature = "nccl"))]
fn nccl(req: &SweepRequest) -> Result<Executed> {
    unavailable(req)
}

/// The line that says how to get a backend this build lacks.
#[cfg(not(all(feature = "mpi", feature = "nccl")))]
fn unavailable(req: &SweepRequest) -> Result<Executed> {
    req.backend
        .availability()
        .map_err(crate::error::Error::Usage)?;
    Err(crate::error::Error::usage(format!(
        "this build has no {} backend",
        req.backend
    )))
}
