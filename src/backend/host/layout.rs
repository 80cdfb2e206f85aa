//! Where everything lives in the shared segment, and typed access to it.
//!
//! ```text
//! [control: 4 KiB] [rank states: n × 128 B] [channel heads: n² × 128 B] [slots: n² × K × slot]
//! [sample area: n × max_iters × f64] [error messages: n × 512 B]
//! ```
//! A channel carries bytes one way between an ordered pair of ranks through a ring of K slots:
//! the sender fills slot `head % K` and advances `head`; the receiver consumes slot `tail % K` and
//! advances `tail`. Head and tail sit on their own cache lines so the two sides never write the
//! same line. The head's line also says which slot holds a single-copy descriptor (written by the
//! sender), the tail's line whether the receiver's kernel refused single-copy reads (written by
//! the receiver); see `transport::single_copy`.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

use super::segment::Segment;
use crate::error::{Error, Result};

const LINE: usize = 64;
const PAGE: usize = 4096;
const CONTROL_BYTES: usize = PAGE;
const RANK_STATE_BYTES: usize = 2 * LINE;
const CHANNEL_HEAD_BYTES: usize = 2 * LINE;
/// Room for the error message a failing rank leaves for the launcher.
const ERROR_BYTES: usize = 512;
const MAGIC: u64 = 0x636f_6c6c_6265_6e31; // "collben1"

/// Sizes that fix the layout; the launcher computes them and every rank derives the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub nranks: usize,
    pub slot_bytes: usize,
    pub slots: usize,
    pub max_iters: usize,
}

impl Layout {
    /// The layout for `nranks` ranks timing up to `max_iters` iterations per point. Slots are
    /// large enough to stream at memory speed but small enough to stay in cache; with many ranks
    /// they shrink so the (sparse) segment stays modest.
    pub fn new(nranks: usize, max_iters: usize) -> Layout {
        let (slot_bytes, slots) = if nranks <= 16 {
            (64 * 1024, 8)
        } else {
            (16 * 1024, 4)
        };
        Layout {
            nranks,
            slot_bytes,
            slots,
            max_iters,
        }
    }

    fn ranks_off(&self) -> usize {
        CONTROL_BYTES
    }
    fn heads_off(&self) -> usize {
        self.ranks_off() + self.nranks * RANK_STATE_BYTES
    }
    fn slots_off(&self) -> usize {
        let end = self.heads_off() + self.nranks * self.nranks * CHANNEL_HEAD_BYTES;
        end.div_ceil(PAGE) * PAGE
    }
    fn channel_bytes(&self) -> usize {
        self.slots * self.slot_bytes
    }
    fn samples_off(&self) -> usize {
        self.slots_off() + self.nranks * self.nranks * self.channel_bytes()
    }

    fn errors_off(&self) -> usize {
        self.samples_off() + self.nranks * self.max_iters * 8
    }

    /// Total bytes of the segment.
    pub fn total_bytes(&self) -> usize {
        let end = self.errors_off() + self.nranks * ERROR_BYTES;
        end.div_ceil(PAGE) * PAGE
    }

    /// Encodes the layout for the rank processes' command line.
    pub fn encode(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.nranks, self.slot_bytes, self.slots, self.max_iters
        )
    }

    /// Decodes `encode`'s output.
    pub fn decode(s: &str) -> Result<Layout> {
        let v: Vec<usize> = s
            .split(':')
            .map(|x| x.parse::<usize>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::usage(format!("bad segment layout '{s}'")))?;
        match v[..] {
            [nranks, slot_bytes, slots, max_iters] if nranks > 0 && slots > 0 => Ok(Layout {
                nranks,
                slot_bytes,
                slots,
                max_iters,
            }),
            _ => Err(Error::usage(format!("bad segment layout '{s}'"))),
        }
    }
}

/// The segment seen through its layout.
pub struct Shared {
    seg: Segment,
    pub layout: Layout,
}

impl Shared {
    /// Creates and initialises a segment for `layout` (launcher side).
    pub fn create(layout: Layout) -> Result<Shared> {
        let seg = Segment::create(layout.total_bytes())?;
        let shared = Shared { seg, layout };
        // SAFETY: the segment is at least CONTROL_BYTES long and 8-aligned.
        unsafe { (shared.seg.base() as *mut u64).write(MAGIC) };
        Ok(shared)
    }

    /// Maps the segment a launcher created (rank side) and checks it matches `layout`.
    pub fn attach(fd: i32, layout: Layout) -> Result<Shared> {
        let seg = Segment::from_inherited_fd(fd)?;
        // SAFETY: the length is checked before reading the magic word.
        let ok = seg.len() == layout.total_bytes()
            && unsafe { (seg.base() as *const u64).read() } == MAGIC;
        if !ok {
            return Err(Error::usage(format!(
                "descriptor {fd} is not a collbench segment for layout {}",
                layout.encode()
            )));
        }
        Ok(Shared { seg, layout })
    }

    /// The underlying segment.
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    fn at<T>(&self, off: usize) -> &T {
        debug_assert!(off + std::mem::size_of::<T>() <= self.seg.len());
        debug_assert_eq!(off % std::mem::align_of::<T>(), 0);
        // SAFETY: offsets come from the layout, inside the mapping and aligned; the atomics
        // have no invalid bit patterns and the mapping lives as long as `self`.
        unsafe { &*(self.seg.base().add(off) as *const T) }
    }

    /// Set by the launcher when every rank must stop.
    pub fn abort_flag(&self) -> &AtomicU32 {
        self.at(LINE)
    }

    /// Points whose samples rank 0 has published for the launcher.
    pub fn points_published(&self) -> &AtomicU32 {
        self.at(2 * LINE)
    }

    /// Points the launcher has read back; ranks do not overwrite samples before this catches up.
    pub fn points_consumed(&self) -> &AtomicU32 {
        self.at(3 * LINE)
    }

    /// Non-zero while the launcher may be asleep on `points_published`.
    pub fn launcher_sleeping(&self) -> &AtomicU32 {
        self.at(3 * LINE + 4)
    }

    /// The launch's random token, which TCP connections between its ranks must present.
    pub fn token(&self) -> &AtomicU64 {
        self.at(4 * LINE)
    }

    /// The loopback TCP port rank `r` listens on (0 until it has published one).
    pub fn listen_port(&self, r: usize) -> &AtomicU32 {
        self.at(self.rank_off(r) + LINE + 24)
    }

    fn rank_off(&self, rank: usize) -> usize {
        self.layout.ranks_off() + rank * RANK_STATE_BYTES
    }

    /// Rank `r`'s doorbell: bumped by anyone who changes something `r` may wait on.
    pub fn doorbell(&self, r: usize) -> &AtomicU32 {
        self.at(self.rank_off(r))
    }

    /// Non-zero while rank `r` may be asleep on its doorbell.
    pub fn sleeping(&self, r: usize) -> &AtomicU32 {
        self.at(self.rank_off(r) + 4)
    }

    /// Iterations (of any kind) rank `r` has completed; read by the launcher's watchdog.
    pub fn progress(&self, r: usize) -> &AtomicU64 {
        self.at(self.rank_off(r) + LINE)
    }

    /// The peer rank `r` is asleep waiting for, or -1.
    pub fn waiting_on(&self, r: usize) -> &AtomicI32 {
        self.at(self.rank_off(r) + LINE + 8)
    }

    /// Wrong elements rank `r` found in the current point.
    pub fn wrong(&self, r: usize) -> &AtomicU64 {
        self.at(self.rank_off(r) + LINE + 16)
    }

    fn channel_index(&self, from: usize, to: usize) -> usize {
        from * self.layout.nranks + to
    }

    /// Chunks published on channel `from → to`.
    pub fn head(&self, from: usize, to: usize) -> &AtomicU64 {
        let off = self.layout.heads_off() + self.channel_index(from, to) * CHANNEL_HEAD_BYTES;
        self.at(off)
    }

    /// Chunks consumed on channel `from → to`.
    pub fn tail(&self, from: usize, to: usize) -> &AtomicU64 {
        let off = self.layout.heads_off() + self.channel_index(from, to) * CHANNEL_HEAD_BYTES;
        self.at(off + LINE)
    }

    /// The head value that published the newest single-copy descriptor on channel `from → to`
    /// (0: none yet). Written by the sender before it stores that head.
    pub fn descriptor_at(&self, from: usize, to: usize) -> &AtomicU64 {
        let off = self.layout.heads_off() + self.channel_index(from, to) * CHANNEL_HEAD_BYTES;
        self.at(off + 8)
    }

    /// Non-zero once the receiver of channel `from → to` could not read the sender's memory
    /// (written by the receiver before it frees the descriptor's slot), or the sender could not
    /// write the receiver's (written by the sender before it frees the offer's slot).
    pub fn single_copy_refused(&self, from: usize, to: usize) -> &AtomicU32 {
        let off = self.layout.heads_off() + self.channel_index(from, to) * CHANNEL_HEAD_BYTES;
        self.at(off + LINE + 8)
    }

    /// Set by the first rank that falls back to staged copies, so the launch prints one note.
    pub fn fallback_noted(&self) -> &AtomicU32 {
        self.at(5 * LINE)
    }

    /// Pointer to slot `k` of channel `from → to`.
    pub fn slot(&self, from: usize, to: usize, k: usize) -> *mut u8 {
        let l = &self.layout;
        let off = l.slots_off()
            + self.channel_index(from, to) * l.channel_bytes()
            + (k % l.slots) * l.slot_bytes;
        // SAFETY: inside the mapping by construction of the layout.
        unsafe { self.seg.base().add(off) }
    }

    /// Rank `r`'s sample area (`max_iters` f64 values).
    pub fn samples_ptr(&self, r: usize) -> *mut f64 {
        let off = self.layout.samples_off() + r * self.layout.max_iters * 8;
        // SAFETY: inside the mapping; 8-aligned since samples_off is page aligned.
        unsafe { self.seg.base().add(off) as *mut f64 }
    }

    /// Leaves rank `r`'s error message for the launcher (cut to fit, at a character boundary).
    /// Written once, by the rank itself, just before it exits.
    pub fn set_error(&self, r: usize, msg: &str) {
        let mut end = msg.len().min(ERROR_BYTES - 1);
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        let off = self.layout.errors_off() + r * ERROR_BYTES;
        // SAFETY: inside the mapping; only rank r writes its area, and the launcher reads it
        // after rank r has exited (process exit orders the writes before the wait).
        unsafe {
            let dst = self.seg.base().add(off);
            std::ptr::copy_nonoverlapping(msg.as_ptr(), dst, end);
            dst.add(end).write(0);
        }
    }

    /// The error message rank `r` left, if any (launcher side, after the rank exited).
    pub fn error(&self, r: usize) -> Option<String> {
        let off = self.layout.errors_off() + r * ERROR_BYTES;
        // SAFETY: inside the mapping; see set_error for the ordering.
        let area = unsafe { std::slice::from_raw_parts(self.seg.base().add(off), ERROR_BYTES) };
        let len = area.iter().position(|&b| b == 0).unwrap_or(0);
        (len > 0).then(|| String::from_utf8_lossy(&area[..len]).into_owned())
    }
}
