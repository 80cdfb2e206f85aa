//! The safe layer: an NCCL communicator that is destroyed exactly once, never panicking.

use std::io::Write;
use std::sync::Arc;

use super::error::NcclError;
use super::loader::{Nccl, RawComm, UniqueId};

/// One rank's NCCL communicator on the current CUDA device.
pub struct Communicator {
    nccl: Arc<Nccl>,
    raw: Option<RawComm>,
    rank: usize,
    nranks: usize,
    /// Handles of the buffers registered with it (`ncclCommRegister`), as addresses.
    registered: Vec<usize>,
}

impl Communicator {
    /// Joins the communicator identified by `id` as `rank` of `nranks` (collective: every rank
    /// must call it).
    pub fn init(
        nccl: Arc<Nccl>,
        nranks: usize,
        id: &UniqueId,
        rank: usize,
        config: Option<&super::sys::ncclConfig_t>,
    ) -> Result<Self, NcclError> {
        let (n, r) = ranks_as_c(nranks, rank)?;
        let raw = nccl.comm_init_rank(n, id, r, config)?;
        Ok(Communicator {
            nccl,
            raw: Some(raw),
            rank,
            nranks,
            registered: Vec::new(),
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// The library this communicator belongs to.
    pub fn nccl(&self) -> &Nccl {
        &self.nccl
    }

    /// `ncclCommSplit` of this communicator (collective over it): members get a communicator of
    /// `nranks` ranks where they are `rank`; ranks passing `NCCL_SPLIT_NOCOLOR` get `None`.
    pub fn split(
        &self,
        color: i32,
        nranks: usize,
        rank: usize,
    ) -> Result<Option<Communicator>, NcclError> {
        let raw = self.live()?;
        let key = i32::try_from(self.rank).unwrap_or(i32::MAX);
        let new = self.nccl.comm_split(raw, color, key)?;
        Ok(new.map(|raw| Communicator {
            nccl: Arc::clone(&self.nccl),
            raw: Some(raw),
            rank,
            nranks,
            registered: Vec::new(),
        }))
    }

    /// The live handle.
    pub fn live(&self) -> Result<&RawComm, NcclError> {
        self.raw
            .as_ref()
            .ok_or_else(|| NcclError::Argument("the communicator was already destroyed".into()))
    }

    /// Fails with the communicator's asynchronous error, if one is pending.
    pub fn check_async(&self) -> Result<(), NcclError> {
        match &self.raw {
            Some(raw) => self.nccl.async_error(raw),
            None => Ok(()),
        }
    }

    /// `ncclCommRegister` of `len` bytes of device memory at `addr` (local registration,
    /// NCCL 2.19+); deregistered by [`Communicator::destroy`] (an aborted communicator frees
    /// them with itself).
    pub fn register(&mut self, addr: u64, len: usize) -> Result<(), NcclError> {
        let Some(register) = self.nccl.comm_register else {
            return Err(NcclError::Argument(
                "this NCCL has no ncclCommRegister (added in NCCL 2.19)".into(),
            ));
        };
        let raw = self.live()?.as_ptr();
        let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `addr` and `len` describe a live device allocation of this rank (the caller's
        // buffers, alive longer than the communicator); `handle` is a valid out-pointer.
        let code = unsafe {
            register(
                raw,
                addr as usize as *mut std::ffi::c_void,
                len,
                &mut handle,
            )
        };
        self.nccl.check("ncclCommRegister", code)?;
        self.registered.push(handle as usize);
        Ok(())
    }

    /// Destroys the communicator, reporting a failure instead of only logging it.
    pub fn destroy(mut self) -> Result<(), NcclError> {
        self.deregister_all()?;
        match self.raw.take() {
            Some(raw) => self.nccl.comm_destroy(raw),
            None => Ok(()),
        }
    }
}

impl Communicator {
    /// `ncclCommDeregister` of every registered buffer, the first failure reported.
    fn deregister_all(&mut self) -> Result<(), NcclError> {
        let (Some(deregister), Some(raw)) = (self.nccl.comm_deregister, &self.raw) else {
            return Ok(());
        };
        let comm = raw.as_ptr();
        let mut first = Ok(());
        for handle in self.registered.drain(..) {
            // SAFETY: each handle came from ncclCommRegister on this live communicator and is
            // released exactly once (drained).
            let code = unsafe { deregister(comm, handle as *mut std::ffi::c_void) };
            if let (Ok(()), Err(e)) = (&first, self.nccl.check("ncclCommDeregister", code)) {
                first = Err(e);
            }
        }
        first
    }
}

/// A communicator dropped without [`Communicator::destroy`] is on a failure path, where peers
/// may be dead: it is aborted (`ncclCommAbort` never waits for them) rather than destroyed.
impl Drop for Communicator {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            if let Err(e) = self.nccl.comm_abort(raw) {
                // Never panic in Drop: a failed write to stderr is ignored too.
                let _ = writeln!(std::io::stderr(), "collbench: rank {}: {e}", self.rank);
            }
        }
    }
}

/// Checks `rank < nranks` and that both fit a C int.
pub fn ranks_as_c(nranks: usize, rank: usize) -> Result<(i32, i32), NcclError> {
    if rank >= nranks {
        return Err(NcclError::Argument(format!(
            "rank {rank} is not below the number of ranks {nranks}"
        )));
    }
    let n = i32::try_from(nranks).map_err(|_| {
        NcclError::Argument(format!("{nranks} ranks are more than NCCL can address"))
    })?;
    Ok((n, rank as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_arguments_are_checked() {
        assert_eq!(ranks_as_c(4, 3).unwrap(), (4, 3));
        assert!(ranks_as_c(4, 4).unwrap_err().to_string().contains("rank 4"));
        assert!(ranks_as_c(0, 0).is_err());
        assert!(ranks_as_c(usize::MAX, 1).is_err());
    }
}
