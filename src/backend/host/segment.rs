//! The shared-memory segment all local ranks map: an anonymous memfd created by the launcher and
//! inherited by the rank processes, so no file is left behind in /dev/shm whatever way the run
//! ends (the kernel frees it when the last process holding it exits).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

use memmap2::{MmapMut, MmapOptions};

use crate::error::{Error, Result};

/// A mapped shared segment.
pub struct Segment {
    map: MmapMut,
    file: File,
}

impl Segment {
    /// Creates an anonymous segment of `len` bytes whose descriptor child processes inherit.
    pub fn create(len: usize) -> Result<Segment> {
        let name = c"collbench";
        // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
        if fd < 0 {
            return Err(Error::os("memfd_create for the shared segment"));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(len as u64).map_err(|e| Error::Os {
            what: format!("sizing the shared segment to {len} bytes"),
            source: e,
        })?;
        Self::map(file)
    }

    /// Maps a segment from a descriptor inherited from the launcher.
    pub fn from_inherited_fd(fd: RawFd) -> Result<Segment> {
        // SAFETY: fstat on an arbitrary integer is safe; it fails with EBADF if not open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(Error::os(format!("shared segment descriptor {fd}")));
        }
        // SAFETY: the descriptor is open (fstat succeeded) and this process takes ownership.
        let file = unsafe { File::from_raw_fd(fd) };
        Self::map(file)
    }

    fn map(file: File) -> Result<Segment> {
        // SAFETY: the segment is shared with the other ranks by design; all access to it goes
        // through atomics or through regions one side owns under the channel protocol.
        let map = unsafe { MmapOptions::new().map_mut(&file) }.map_err(|e| Error::Os {
            what: "mapping the shared segment".into(),
            source: e,
        })?;
        Ok(Segment { map, file })
    }

    /// The descriptor to hand to child processes.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Makes the descriptor survive exec, so rank processes can map it.
    pub fn make_inheritable(&self) -> Result<()> {
        // SAFETY: plain fcntl on our own descriptor.
        let rc = unsafe { libc::fcntl(self.fd(), libc::F_SETFD, 0) };
        if rc != 0 {
            return Err(Error::os("clearing FD_CLOEXEC on the shared segment"));
        }
        Ok(())
    }

    /// Base address of the mapping.
    pub fn base(&self) -> *mut u8 {
        self.map.as_ptr() as *mut u8
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
