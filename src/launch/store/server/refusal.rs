//! Why the store turned a connection away, what it tells that peer, and the reason rank 0 logs
//! (through [`peers::Refusals`](crate::launch::peers::Refusals)).
//!
//! Nothing a peer sent is printed raw: a claimed rank is a number, and the first bytes of
//! something that is not a hello are shown escaped and cut to [`SHOWN_BYTES`]. Tokens are
//! never printed, neither ours nor theirs.

use std::time::Duration;

use crate::launch::peers::escaped;

/// How many bytes of a garbled opening a log line shows (escaped).
pub(super) const SHOWN_BYTES: usize = 16;

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The opening bytes are not a store hello (bad magic, bad length or bad fields).
    NotAHello {
        start: Vec<u8>,
    },
    /// No complete hello within the hello deadline.
    Silent(Duration),
    /// Still without a hello when the pending slots were all taken: the oldest goes.
    Crowded(usize),
    /// Closed (or reset) before its hello was complete.
    Closed,
    WrongToken {
        rank: u32,
    },
    OutOfRange {
        rank: u32,
        world: usize,
    },
    Duplicate {
        rank: usize,
    },
    AlreadyLeft {
        rank: usize,
    },
}

impl Refusal {
    /// The rank the peer claimed, when it got far enough to claim one.
    pub(super) fn claimed(&self) -> Option<usize> {
        match *self {
            Refusal::WrongToken { rank } | Refusal::OutOfRange { rank, .. } => Some(rank as usize),
            Refusal::Duplicate { rank } | Refusal::AlreadyLeft { rank } => Some(rank),
            _ => None,
        }
    }

    /// The reason, for rank 0's log and its "never connected" messages.
    pub(super) fn reason(&self) -> String {
        match self {
            Refusal::NotAHello { start } => format!(
                "not a collbench store hello (it starts with \"{}\")",
                escaped(start, SHOWN_BYTES)
            ),
            Refusal::Silent(d) => format!(
                "no complete hello within {}",
                humantime::format_duration(*d)
            ),
            Refusal::Crowded(n) => format!(
                "no complete hello yet when {n} connections were waiting to say hello (the \
                 oldest makes room)"
            ),
            Refusal::Closed => "closed the connection before completing its hello".into(),
            Refusal::WrongToken { rank } => format!("wrong token (claimed rank {rank})"),
            Refusal::OutOfRange { rank, world } => {
                format!("claimed rank {rank}, but this job has {world} ranks")
            }
            Refusal::Duplicate { rank } => {
                format!("claimed rank {rank}, which is already connected")
            }
            Refusal::AlreadyLeft { rank } => {
                format!("claimed rank {rank}, which has already left this store")
            }
        }
    }

    /// What the peer is told before the connection closes (None: it gets no answer, since it
    /// is gone or said nothing).
    pub(super) fn reply(&self) -> Option<String> {
        Some(match self {
            Refusal::NotAHello { .. } => {
                "this is a collbench store; the hello was not understood".into()
            }
            Refusal::Silent(_) | Refusal::Crowded(_) | Refusal::Closed => return None,
            Refusal::WrongToken { .. } => {
                "wrong token: this store belongs to another job, or the ranks were given \
                 different COLLBENCH_TOKEN values"
                    .into()
            }
            Refusal::OutOfRange { rank, world } => {
                format!("rank {rank} is out of range: this job has {world} ranks")
            }
            Refusal::Duplicate { rank } => {
                format!("rank {rank} is already connected (two processes claim that rank)")
            }
            Refusal::AlreadyLeft { rank } => format!("rank {rank} has already left this store"),
        })
    }
}
