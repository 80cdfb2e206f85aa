//! A communicator's life in NCCL calls: made (`ncclCommInitRank`, or `ncclCommInitRankConfig`
//! with the run's configuration), split, checked for asynchronous errors, destroyed or aborted.
//! Part of the thin unsafe layer beside [`super::loader`], whose [`Nccl`] holds the entry points.

use std::os::raw::c_int;

use super::error::NcclError;
use super::loader::{Nccl, UniqueId};
use super::sys;

impl Nccl {
    /// `ncclCommInitRankConfig` with `config` where given and the library has it (2.14+),
    /// else `ncclCommInitRank`, on the current CUDA device; collective across all `nranks`.
    pub fn comm_init_rank(
        &self,
        nranks: c_int,
        id: &UniqueId,
        rank: c_int,
        config: Option<&sys::ncclConfig_t>,
    ) -> Result<RawComm, NcclError> {
        let mut comm: sys::ncclComm_t = std::ptr::null_mut();
        let id = sys::ncclUniqueId {
            internal: id.0.map(|b| b as std::os::raw::c_char),
        };
        if let (Some(config), Some(init)) = (config, self.comm_init_rank_config) {
            let mut config = *config;
            // SAFETY: as below; `config` is a whole NCCL_CONFIG_INITIALIZER-made struct whose
            // `size` says how much of it there is, alive for the call.
            let raw = unsafe { init(&mut comm, nranks, id, rank, &mut config) };
            self.check("ncclCommInitRankConfig", raw)?;
            return Ok(RawComm(comm));
        }
        // SAFETY: `comm` is a valid out-pointer; `id` is passed by value as declared.
        let raw = unsafe { (self.comm_init_rank)(&mut comm, nranks, id, rank) };
        self.check("ncclCommInitRank", raw)?;
        Ok(RawComm(comm))
    }

    /// `ncclCommDestroy`. Consumes the handle so it cannot be destroyed twice.
    pub fn comm_destroy(&self, comm: RawComm) -> Result<(), NcclError> {
        if comm.0.is_null() {
            return Ok(());
        }
        // SAFETY: the handle came from ncclCommInitRank and is destroyed exactly once.
        self.check("ncclCommDestroy", unsafe { (self.comm_destroy)(comm.0) })
    }

    /// `ncclCommAbort`: frees the communicator without waiting for its peers (the failure path;
    /// never hangs on a dead rank). Consumes the handle.
    pub fn comm_abort(&self, comm: RawComm) -> Result<(), NcclError> {
        if comm.0.is_null() {
            return Ok(());
        }
        // SAFETY: the handle came from NCCL and is released exactly once (consumed here).
        self.check("ncclCommAbort", unsafe { (self.comm_abort)(comm.0) })
    }

    /// `ncclCommSplit(comm, color, key, &new, NULL)`: collective over `comm`. `None` for ranks
    /// that pass `NCCL_SPLIT_NOCOLOR`; an error naming the version when the library lacks it.
    pub fn comm_split(
        &self,
        comm: &RawComm,
        color: c_int,
        key: c_int,
    ) -> Result<Option<RawComm>, NcclError> {
        let Some(split) = self.comm_split else {
            return Err(NcclError::Argument(
                "this NCCL has no ncclCommSplit (added in NCCL 2.18)".into(),
            ));
        };
        let mut new: sys::ncclComm_t = std::ptr::null_mut();
        // SAFETY: `comm` is live; `new` is a valid out-pointer; a NULL config inherits the
        // parent's configuration (nccl.h).
        let raw = unsafe { split(comm.0, color, key, &mut new, std::ptr::null_mut()) };
        self.check("ncclCommSplit", raw)?;
        Ok((!new.is_null()).then_some(RawComm(new)))
    }

    /// `ncclCommGetAsyncError`: the communicator's pending asynchronous error, if any.
    pub fn async_error(&self, comm: &RawComm) -> Result<(), NcclError> {
        let mut state: sys::ncclResult_t = sys::NCCL_SUCCESS;
        // SAFETY: the handle is live (owned by `comm`); `state` is a valid out-pointer.
        let raw = unsafe { (self.comm_get_async_error)(comm.0, &mut state) };
        self.check("ncclCommGetAsyncError", raw)?;
        self.check("communicator (asynchronous error)", state)
    }
}

/// An opaque communicator handle; only [`Nccl`] methods use it.
#[derive(Debug)]
pub struct RawComm(sys::ncclComm_t);

// SAFETY: NCCL communicators may be used from any one thread at a time; `RawComm` is not `Sync`.
unsafe impl Send for RawComm {}

impl RawComm {
    /// The handle, for the calls of [`super::calls`].
    pub(super) fn as_ptr(&self) -> sys::ncclComm_t {
        self.0
    }
}
