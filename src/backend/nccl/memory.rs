//! One device buffer of a rank, allocated as nccl-tests 2.19.6 allocates its buffers
//! (`AllocateBuffs` in src/common.cu): `ncclMemAlloc` where the library has it (2.19+), which
//! maps cuMem allocations with the granularity NCCL's registration and NVLS need, and plain
//! device memory (`cuMemAlloc`) otherwise. Symmetric registration (`--register symmetric`)
//! needs the former. Copies in and out go through the driver on the rank's stream.

use std::io::Write;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice};

use super::gpu::{driver_error, Gpu};
use super::loader::Nccl;
use crate::error::{Error, Result};

/// Who allocated a buffer, and so who frees it.
enum Owner {
    /// cudarc's allocation (`cuMemAllocAsync`), freed with the slice.
    Cuda { _slice: CudaSlice<u8> },
    /// `ncclMemAlloc`; freed with `ncclMemFree` while the context is current.
    Nccl {
        nccl: Arc<Nccl>,
        ctx: Arc<CudaContext>,
    },
}

/// A device buffer of `len` bytes at `ptr`.
pub struct DeviceMemory {
    ptr: u64,
    len: usize,
    owner: Owner,
}

/// Which allocator made the buffers, as meta.json records it.
pub fn allocator_name(nccl: &Nccl) -> &'static str {
    if nccl.mem_alloc.is_some() && nccl.mem_free.is_some() {
        "ncclMemAlloc"
    } else {
        "cuMemAlloc"
    }
}

impl DeviceMemory {
    /// `n` zeroed bytes (at least 1) on `gpu`, from `ncclMemAlloc` where `nccl` has it; running
    /// out of memory names the size and the fix.
    pub fn alloc(gpu: &Gpu, nccl: &Arc<Nccl>, n: usize) -> Result<DeviceMemory> {
        let len = n.max(1);
        let (Some(alloc), Some(_)) = (nccl.mem_alloc, nccl.mem_free) else {
            let slice = gpu.alloc(len)?;
            let ptr = gpu.address(&slice);
            return Ok(DeviceMemory {
                ptr,
                len,
                owner: Owner::Cuda { _slice: slice },
            });
        };
        let mut raw: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: ncclMemAlloc writes one pointer; the rank's context is current (Gpu::open).
        let code = unsafe { alloc(&mut raw, len) };
        nccl.check("ncclMemAlloc", code).map_err(|e| {
            Error::Rank(format!(
                "GPU {}: cannot allocate {} ({e}); lower -e",
                gpu.ordinal,
                crate::units::format_size(len)
            ))
        })?;
        let memory = DeviceMemory {
            ptr: raw as usize as u64,
            len,
            owner: Owner::Nccl {
                nccl: Arc::clone(nccl),
                ctx: Arc::clone(&gpu.ctx),
            },
        };
        memory.zero(gpu)?;
        Ok(memory)
    }

    /// The device address.
    pub fn address(&self) -> u64 {
        self.ptr
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never: at least one byte is allocated).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets `len` bytes from `offset` to `byte` on the rank's stream.
    pub fn set(&self, gpu: &Gpu, (offset, len): (usize, usize), byte: u8) -> Result<()> {
        self.check_range(offset, len)?;
        // SAFETY: the range is inside this allocation (checked) and used on this stream only.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                self.ptr + offset as u64,
                byte,
                len,
                gpu.stream.cu_stream(),
            )
        }
        .map_err(|e| driver_error("cuMemsetD8Async", e))
    }

    /// Copies `bytes` to `offset` on the rank's stream.
    pub fn copy_in(&self, gpu: &Gpu, offset: usize, bytes: &[u8]) -> Result<()> {
        self.check_range(offset, bytes.len())?;
        // SAFETY: the range is inside this allocation (checked); from pageable host memory the
        // driver stages `bytes` before it returns.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(
                self.ptr + offset as u64,
                bytes,
                gpu.stream.cu_stream(),
            )
        }
        .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))
    }

    /// Copies `out.len()` bytes from `offset` and waits for them.
    pub fn copy_out(&self, gpu: &Gpu, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check_range(offset, out.len())?;
        // SAFETY: the range is inside this allocation (checked); the stream is synchronised
        // below, before `out` is read.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                out,
                self.ptr + offset as u64,
                gpu.stream.cu_stream(),
            )
        }
        .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
        gpu.stream
            .synchronize()
            .map_err(|e| driver_error("cuStreamSynchronize", e))
    }

    fn zero(&self, gpu: &Gpu) -> Result<()> {
        self.set(gpu, (0, self.len), 0)?;
        gpu.stream
            .synchronize()
            .map_err(|e| driver_error("cuStreamSynchronize", e))
    }

    fn check_range(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::Rank(format!(
                "{len} bytes at offset {offset} do not fit a device buffer of {} bytes",
                self.len
            ))),
        }
    }
}

/// `ncclMemFree` with the context current; a failure is said, never a panic (it runs on
/// failure paths too, where the GPU may be gone).
impl Drop for DeviceMemory {
    fn drop(&mut self) {
        let Owner::Nccl { nccl, ctx } = &self.owner else {
            return;
        };
        let Some(free) = nccl.mem_free else { return };
        if ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: `ptr` came from ncclMemAlloc and is freed once, here.
        let code = unsafe { free(self.ptr as usize as *mut std::ffi::c_void) };
        if let Err(e) = nccl.check("ncclMemFree", code) {
            let _ = writeln!(std::io::stderr(), "collbench: {e}");
        }
    }
}
