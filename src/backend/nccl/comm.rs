//! The safe layer: an NCCL communicator that is destroyed exactly once, never panicking.

use std::io::Write;
use std::sync::Arc;

use super::error::NcclError;
use super::lifecycle::RawComm;
use super::loader::{Nccl, UniqueId};

/// One rank's NCCL communicator on the current CUDA device.
pub struct Communicator {
    nccl: Arc<Nccl>,
    raw: Option<RawComm>,
    rank: usize,
    nranks: usize,
    /// Handles of the buffers registered with it, released by [`Communicator::destroy`].
    registered: Vec<Handle>,
}

/// A registration handle (an address), by the call that made it: each is released by its own
/// counterpart.
#[derive(Clone, Copy, Debug)]
enum Handle {
    /// `ncclCommRegister`: `ncclCommDeregister`.
    Local(usize),
    /// `ncclCommWindowRegister`: `ncclCommWindowDeregister`.
    Window(usize),
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
        self.registered.push(Handle::Local(handle as usize));
        Ok(())
    }

    /// `ncclCommWindowRegister` of `len` bytes at `addr` with `NCCL_WIN_COLL_SYMMETRIC`
    /// (symmetric registration, NCCL 2.27+; collective: every rank registers its own buffer
    /// of the same size). The memory must come from `ncclMemAlloc`.
    pub fn register_window(&mut self, addr: u64, len: usize) -> Result<(), NcclError> {
        let Some(register) = self.nccl.window_register else {
            return Err(NcclError::Argument(
                "this NCCL has no ncclCommWindowRegister (added in NCCL 2.27)".into(),
            ));
        };
        let raw = self.live()?.as_ptr();
        let mut win: super::sys::ncclWindow_t = std::ptr::null_mut();
        // SAFETY: as in `register`; `win` is a valid out-pointer.
        let code = unsafe {
            register(
                raw,
                addr as usize as *mut std::ffi::c_void,
                len,
                &mut win,
                super::sys::NCCL_WIN_COLL_SYMMETRIC,
            )
        };
        self.nccl.check("ncclCommWindowRegister", code)?;
        // NCCL returns success without a window where the communicator cannot register
        // symmetrically (peers without P2P, cuMem off): the points would be mislabelled.
        if win.is_null() {
            return Err(NcclError::Argument(
                "ncclCommWindowRegister made no window: this communicator cannot register \
                 symmetrically (every peer needs P2P access and cuMem memory); drop --register \
                 symmetric"
                    .into(),
            ));
        }
        self.registered.push(Handle::Window(win as usize));
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
    /// Releases every registration by its own call, the first failure reported.
    fn deregister_all(&mut self) -> Result<(), NcclError> {
        let Some(raw) = &self.raw else { return Ok(()) };
        let comm = raw.as_ptr();
        let nccl = &self.nccl;
        let mut first = Ok(());
        for handle in self.registered.drain(..) {
            // SAFETY: each handle came from its registration call on this live communicator
            // and is released exactly once (drained); a library that registered has both calls.
            let (call, code) = unsafe {
                match (handle, nccl.comm_deregister, nccl.window_deregister) {
                    (Handle::Local(h), Some(f), _) => ("ncclCommDeregister", f(comm, h as _)),
                    (Handle::Window(w), _, Some(f)) => {
                        ("ncclCommWindowDeregister", f(comm, w as _))
                    }
                    _ => continue,
                }
            };
            if let (Ok(()), Err(e)) = (&first, nccl.check(call, code)) {
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
