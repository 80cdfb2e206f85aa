//! Single-copy moves of large messages between the ranks of one host, by cross-memory attach
//! (`process_vm_readv`, as Open MPI's `vader` BTL moves large messages): instead of copying a
//! message into the channel's slots for the receiver to copy out again, the sender publishes a
//! [`Descriptor`] (its pid, the address and length of its bytes) in one slot, the receiver reads
//! the bytes straight from the sender's buffer into its own, and then frees the slot. The
//! sender's call returns only once that slot is free, so the bytes are never overwritten (by the
//! next step or the next iteration) while being read.
//!
//! Where the kernel refuses the read (no CMA, or ptrace rules that forbid it), the receiver marks
//! the channel refused and frees the slot; the sender sees the mark and sends the same message
//! through the slots, and every later message on that channel goes that way. The results are the
//! same either way; only one note is printed per launch.

use std::io;

use crate::error::{Error, Result};

/// The environment variable that picks how messages move over shared memory.
pub const COPY_ENV: &str = "COLLBENCH_SHM_COPY";

/// Messages of at least this many bytes go single-copy in `auto` mode: the crossover measured
/// in docs/PERFORMANCE.md ("Single-copy messages"), below which the read's fixed cost (a system
/// call and the kernel pinning the sender's pages) outweighs the copy it saves.
pub const AUTO_MIN_BYTES: usize = 64 * 1024;

/// How the shared-memory transport moves a message's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMode {
    /// Single copy for messages the receiver copies as they are (`send_recv_copy`) from
    /// [`AUTO_MIN_BYTES`] up; staged for smaller ones and for those the receiver reduces (which
    /// read the sender's bytes once either way).
    Auto,
    /// Always through the slots (two copies), as before single-copy existed.
    Staged,
    /// Single copy for every non-empty message, reduced ones included (for tests: exercises
    /// every way of receiving one).
    Single,
}

impl CopyMode {
    /// The mode `COLLBENCH_SHM_COPY` asks for (`auto` when unset).
    pub fn from_env() -> Result<CopyMode> {
        CopyMode::parse(std::env::var(COPY_ENV).ok().as_deref())
    }

    /// The name `COLLBENCH_SHM_COPY` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            CopyMode::Auto => "auto",
            CopyMode::Staged => "staged",
            CopyMode::Single => "single",
        }
    }

    /// Parses a value of `COLLBENCH_SHM_COPY`.
    pub fn parse(value: Option<&str>) -> Result<CopyMode> {
        match value.map(str::trim) {
            None | Some("") | Some("auto") => Ok(CopyMode::Auto),
            Some("staged") => Ok(CopyMode::Staged),
            Some("single") => Ok(CopyMode::Single),
            Some(other) => Err(Error::usage(format!(
                "{COPY_ENV}={other} is not a copy mode; use auto, staged or single"
            ))),
        }
    }
}

/// Where a message's bytes sit in the sender's address space; it fills the start of one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub pid: u32,
    pub addr: usize,
    pub len: usize,
}

impl Descriptor {
    /// Bytes a descriptor takes in a slot.
    pub const BYTES: usize = 24;

    /// The descriptor of `data`, held by process `pid`.
    pub fn of(pid: u32, data: &[u8]) -> Descriptor {
        Descriptor {
            pid,
            addr: data.as_ptr() as usize,
            len: data.len(),
        }
    }

    /// Writes the descriptor at `slot`.
    ///
    /// # Safety
    /// `slot` must be valid for writes of [`Descriptor::BYTES`] bytes.
    pub unsafe fn write_to(&self, slot: *mut u8) {
        let words = [self.pid as u64, self.addr as u64, self.len as u64];
        std::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, slot, Self::BYTES);
    }

    /// Reads a descriptor written by [`Descriptor::write_to`].
    ///
    /// # Safety
    /// `slot` must be valid for reads of [`Descriptor::BYTES`] bytes.
    pub unsafe fn read_from(slot: *const u8) -> Descriptor {
        let mut words = [0u64; 3];
        std::ptr::copy_nonoverlapping(slot, words.as_mut_ptr() as *mut u8, Self::BYTES);
        Descriptor {
            pid: words[0] as u32,
            addr: words[1] as usize,
            len: words[2] as usize,
        }
    }
}

/// Lets any process of this user read this one's memory where Yama's `ptrace_scope` = 1 would
/// only let ancestors do so (sibling ranks are not ancestors); Open MPI does the same. Kernels
/// without Yama reject the call, which changes nothing.
pub fn allow_peer_reads() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
}

/// Reads `dst.len()` bytes at `addr` in process `pid` into `dst`.
pub fn read_remote(pid: u32, addr: usize, dst: &mut [u8]) -> io::Result<()> {
    let base = dst.as_mut_ptr();
    move_all(dst.len(), io::ErrorKind::UnexpectedEof, |done, len| {
        let local = iovec(base as usize + done, len);
        let remote = iovec(addr + done, len);
        // SAFETY: `local` covers the unread rest of `dst`, which we borrow mutably; the kernel
        // checks `remote` against the other process's mappings and fails with EFAULT outside them.
        unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) }
    })
}

/// Writes `src` at `addr` in process `pid` (the receiver's own buffer, which it offered).
pub fn write_remote(pid: u32, addr: usize, src: &[u8]) -> io::Result<()> {
    let base = src.as_ptr();
    move_all(src.len(), io::ErrorKind::WriteZero, |done, len| {
        let local = iovec(base as usize + done, len);
        let remote = iovec(addr + done, len);
        // SAFETY: `local` covers the unwritten rest of `src`, which the kernel only reads; it
        // checks `remote` against the other process's mappings and fails with EFAULT outside
        // them. The receiver offered exactly this range and does not touch it until we are done.
        unsafe { libc::process_vm_writev(pid as libc::pid_t, &local, 1, &remote, 1, 0) }
    })
}

/// One iovec of `len` bytes at `addr`.
fn iovec(addr: usize, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    }
}

/// Calls `step(done, rest)` until `len` bytes have moved: the kernel may move fewer than asked
/// per call (a partial transfer); 0 bytes moved is `none_moved`, a negative result the OS error.
fn move_all(
    len: usize,
    none_moved: io::ErrorKind,
    mut step: impl FnMut(usize, usize) -> isize,
) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        match step(done, len - done) {
            n if n > 0 => done += n as usize,
            0 => return Err(io::Error::from(none_moved)),
            _ => return Err(io::Error::last_os_error()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_bad_values_name_the_fix() {
        assert_eq!(CopyMode::parse(None).unwrap(), CopyMode::Auto);
        assert_eq!(CopyMode::parse(Some(" staged")).unwrap(), CopyMode::Staged);
        assert_eq!(CopyMode::parse(Some("single")).unwrap(), CopyMode::Single);
        let e = CopyMode::parse(Some("once")).unwrap_err().to_string();
        assert!(e.contains("COLLBENCH_SHM_COPY=once") && e.contains("auto, staged or single"));
    }

    #[test]
    fn descriptor_round_trips_through_a_slot() {
        let data = [7u8; 100];
        let d = Descriptor::of(1234, &data[10..]);
        let mut slot = [0u8; 64];
        // SAFETY: the slot is 64 >= 24 bytes.
        let back = unsafe {
            d.write_to(slot.as_mut_ptr());
            Descriptor::read_from(slot.as_ptr())
        };
        assert_eq!(back, d);
        assert_eq!((back.len, back.addr), (90, data.as_ptr() as usize + 10));
    }

    #[test]
    fn reads_own_memory_and_reports_a_missing_process() {
        let src: Vec<u8> = (0..=255).cycle().take(300_000).collect();
        let mut dst = vec![0u8; src.len()];
        read_remote(std::process::id(), src.as_ptr() as usize, &mut dst).unwrap();
        assert_eq!(dst, src);
        // pid_max never exceeds 2^22, so this process cannot exist.
        let e = read_remote(1 << 30, src.as_ptr() as usize, &mut dst[..8]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn writes_own_memory_and_reports_a_missing_process() {
        let src: Vec<u8> = (0..=255).rev().cycle().take(300_000).collect();
        let mut dst = vec![0u8; src.len()];
        write_remote(std::process::id(), dst.as_mut_ptr() as usize, &src).unwrap();
        assert_eq!(dst, src);
        let e = write_remote(1 << 30, dst.as_mut_ptr() as usize, &src[..8]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
    }
}
