//! The crate's error type and how each kind maps to a process exit code.

use std::path::PathBuf;

/// Everything that can stop a command. `Usage` and `Input` mean the user can fix it by changing
/// what they asked for; `Rank` and `Io` mean the run itself failed. All exit with code 2; a failed
/// verdict (exit 1) is not an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or value the user gave is not acceptable.
    #[error("{0}")]
    Usage(String),
    /// A file the user pointed at could not be used.
    #[error("{path}: {msg}")]
    Input { path: PathBuf, msg: String },
    /// A file or folder could not be written or read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A rank process died, hung or reported a failure.
    #[error("{0}")]
    Rank(String),
    /// The run was interrupted (Ctrl-C / SIGTERM).
    #[error("interrupted; {0}")]
    Interrupted(String),
    /// A usage error that every rank of an mpirun launch finds alike (the same command line, and
    /// mpirun's `-x` gives every rank the same variables), on a rank other than 0: rank 0 says
    /// it, the others exit 2 without a word (mpirun printed one copy per rank). Launchers whose
    /// ranks may see other variables (torchrun, srun per node) keep every rank's line.
    #[error("{0}")]
    SaidByRank0(String),
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Shorthand for a usage error.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps the last OS error of a named call.
    pub fn os(what: impl Into<String>) -> Self {
        Error::Os {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }

    /// A usage error found alike on every rank, as world rank `rank` reports it: said by rank 0
    /// only ([`Error::SaidByRank0`] elsewhere); any other error is kept as it is.
    pub fn alike_on_every_rank(self, rank: usize) -> Error {
        match self {
            Error::Usage(m) if rank > 0 => Error::SaidByRank0(m),
            e => e,
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Interrupted(_) => 130,
            _ => 2,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
