//! Typed NCCL and CUDA errors: every `ncclResult_t` code has a name and a message, and every
//! failure to load a library names the file and the fix.

use std::path::PathBuf;

use super::sys;

/// The environment variable that points collbench at a specific libnccl.
pub const NCCL_LIB_ENV: &str = "COLLBENCH_NCCL_LIB";
/// The environment variable that points collbench at a specific libcuda.
pub const CUDA_LIB_ENV: &str = "COLLBENCH_CUDA_LIB";

/// A non-success `ncclResult_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultCode {
    UnhandledCudaError,
    SystemError,
    InternalError,
    InvalidArgument,
    InvalidUsage,
    RemoteError,
    InProgress,
    Timeout,
    /// A code this build does not know (a newer NCCL).
    Unknown(i32),
}

impl ResultCode {
    /// `None` for `ncclSuccess`, the typed code otherwise.
    pub fn from_raw(raw: sys::ncclResult_t) -> Option<Self> {
        Some(match raw {
            sys::NCCL_SUCCESS => return None,
            sys::NCCL_UNHANDLED_CUDA_ERROR => ResultCode::UnhandledCudaError,
            sys::NCCL_SYSTEM_ERROR => ResultCode::SystemError,
            sys::NCCL_INTERNAL_ERROR => ResultCode::InternalError,
            sys::NCCL_INVALID_ARGUMENT => ResultCode::InvalidArgument,
            sys::NCCL_INVALID_USAGE => ResultCode::InvalidUsage,
            sys::NCCL_REMOTE_ERROR => ResultCode::RemoteError,
            sys::NCCL_IN_PROGRESS => ResultCode::InProgress,
            sys::NCCL_TIMEOUT => ResultCode::Timeout,
            other => ResultCode::Unknown(other),
        })
    }

    /// The raw value.
    pub fn raw(self) -> i32 {
        match self {
            ResultCode::UnhandledCudaError => sys::NCCL_UNHANDLED_CUDA_ERROR,
            ResultCode::SystemError => sys::NCCL_SYSTEM_ERROR,
            ResultCode::InternalError => sys::NCCL_INTERNAL_ERROR,
            ResultCode::InvalidArgument => sys::NCCL_INVALID_ARGUMENT,
            ResultCode::InvalidUsage => sys::NCCL_INVALID_USAGE,
            ResultCode::RemoteError => sys::NCCL_REMOTE_ERROR,
            ResultCode::InProgress => sys::NCCL_IN_PROGRESS,
            ResultCode::Timeout => sys::NCCL_TIMEOUT,
            ResultCode::Unknown(raw) => raw,
        }
    }

    /// The enumerator's name in `nccl.h`.
    pub fn name(self) -> &'static str {
        match self {
            ResultCode::UnhandledCudaError => "ncclUnhandledCudaError",
            ResultCode::SystemError => "ncclSystemError",
            ResultCode::InternalError => "ncclInternalError",
            ResultCode::InvalidArgument => "ncclInvalidArgument",
            ResultCode::InvalidUsage => "ncclInvalidUsage",
            ResultCode::RemoteError => "ncclRemoteError",
            ResultCode::InProgress => "ncclInProgress",
            ResultCode::Timeout => "ncclTimeout",
            ResultCode::Unknown(_) => "unknown ncclResult_t",
        }
    }

    /// What the code means, for when the library's own `ncclGetErrorString` is not at hand.
    pub fn message(self) -> &'static str {
        match self {
            ResultCode::UnhandledCudaError => "a CUDA call inside NCCL failed",
            ResultCode::SystemError => "a system call failed (memory, sockets, shared memory)",
            ResultCode::InternalError => "internal NCCL error",
            ResultCode::InvalidArgument => "invalid argument",
            ResultCode::InvalidUsage => "invalid usage of the NCCL API",
            ResultCode::RemoteError => "a remote rank exited or the network failed",
            ResultCode::InProgress => "operation still in progress",
            ResultCode::Timeout => "operation timed out",
            ResultCode::Unknown(_) => "unknown NCCL result code",
        }
    }
}

/// Every way NCCL use can fail.
#[derive(Debug, thiserror::Error)]
pub enum NcclError {
    /// An NCCL call returned a non-success code.
    #[error("{call} failed: {} ({}): {message}{}", .code.name(), .code.raw(), debug_hint(.message))]
    Call {
        call: &'static str,
        code: ResultCode,
        message: String,
    },
    /// libnccl could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A value does not fit NCCL's C interface.
    #[error("{0}")]
    Argument(String),
    /// The loaded library lacks an entry point an op needs: it is older than the NCCL that
    /// added it. Only that op fails; the others run.
    #[error("{what} needs {symbol}, which {library} lacks (added in NCCL {since}); point {NCCL_LIB_ENV} at NCCL {since} or later")]
    Missing {
        /// What needed it (`alltoall`).
        what: String,
        /// The missing entry point.
        symbol: &'static str,
        /// The NCCL version that added it (`2.7`).
        since: &'static str,
        /// The library loaded, with its version where known.
        library: String,
    },
}

/// How to learn more, unless NCCL's own message already says (it names `NCCL_DEBUG=INFO`).
fn debug_hint(message: &str) -> &'static str {
    if message.contains("NCCL_DEBUG") {
        ""
    } else {
        "; rerun with NCCL_DEBUG=WARN for details"
    }
}

/// Why libnccl (or libcuda) could not be loaded; each names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The override path could not be opened.
    #[error("{var}={}: cannot load it ({reason}); point {var} at an existing library", .path.display())]
    Override {
        var: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// None of the default names could be opened.
    #[error("{} not found ({reason}); {fix}", .tried.join(" / "))]
    NotFound {
        tried: Vec<String>,
        reason: String,
        fix: &'static str,
    },
    /// The library is older than the oldest NCCL collbench runs.
    #[error("{}: {reason}; point {NCCL_LIB_ENV} at a newer libnccl.so.2", .path.display())]
    Unsupported { path: PathBuf, reason: String },
    /// The library opened but lacks a symbol collbench needs.
    #[error("{}: no symbol {symbol} ({reason}); it is not a usable library, point {var} at the right one", .path.display())]
    Symbol {
        var: &'static str,
        path: PathBuf,
        symbol: &'static str,
        reason: String,
    },
}

/// Why the CUDA driver cannot run NCCL here.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// libcuda could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The driver has no device to offer.
    #[error(
        "no CUDA device: the NVIDIA driver sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)"
    )]
    NoDevice,
    /// A driver call failed.
    #[error("{call} failed: {name} ({code})")]
    Call {
        call: &'static str,
        code: i32,
        name: String,
    },
}

/// Turns a raw result into `Ok` or a typed error, with the library's message when given.
pub fn check(
    call: &'static str,
    raw: sys::ncclResult_t,
    message: impl FnOnce(ResultCode) -> String,
) -> Result<(), NcclError> {
    match ResultCode::from_raw(raw) {
        None => Ok(()),
        Some(code) => Err(NcclError::Call {
            call,
            code,
            message: message(code),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_to_a_name_and_back() {
        assert_eq!(ResultCode::from_raw(0), None);
        for raw in 1..=8 {
            let code = ResultCode::from_raw(raw).unwrap();
            assert_eq!(code.raw(), raw);
            assert!(code.name().starts_with("nccl"), "{code:?}");
            assert!(!code.message().is_empty());
        }
        assert_eq!(ResultCode::from_raw(6), Some(ResultCode::RemoteError));
        assert_eq!(ResultCode::from_raw(42), Some(ResultCode::Unknown(42)));
        assert_eq!(ResultCode::from_raw(-1).unwrap().raw(), -1);
    }

    #[test]
    fn a_missing_entry_point_names_the_op_the_symbol_and_the_version_needed() {
        let e = NcclError::Missing {
            what: "alltoall".into(),
            symbol: "ncclSend",
            since: "2.7",
            library: "libnccl.so.2 (NCCL 2.6.4)".into(),
        };
        assert_eq!(
            e.to_string(),
            "alltoall needs ncclSend, which libnccl.so.2 (NCCL 2.6.4) lacks (added in NCCL 2.7); \
             point COLLBENCH_NCCL_LIB at NCCL 2.7 or later"
        );
    }

    #[test]
    fn check_names_call_code_and_message() {
        assert!(check("ncclAllReduce", 0, |_| unreachable!()).is_ok());
        let e = check("ncclAllReduce", 4, |c| c.message().to_string()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("ncclAllReduce failed"), "{text}");
        assert!(text.contains("ncclInvalidArgument (4)"), "{text}");
        assert!(text.contains("invalid argument"), "{text}");
    }
}
