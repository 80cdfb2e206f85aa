//! Why the store turned a connection away, what it tells that peer, and what rank 0 logs.
//!
//! Nothing a peer sent is printed raw: a claimed rank is a number, and the first bytes of
//! something that is not a hello are shown escaped and cut to [`SHOWN_BYTES`]. Tokens are
//! never printed, neither ours nor theirs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

/// How many bytes of a garbled opening a log line shows (escaped).
pub(super) const SHOWN_BYTES: usize = 16;
/// Log lines written for refused peers; later refusals are counted, not logged, so that a
/// flood of hostile connections cannot flood rank 0's stderr.
pub(in crate::launch::store) const MAX_LOGGED: usize = 100;

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
                escaped(start)
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

/// Printable ASCII as is, everything else (and quotes, backslashes) escaped, at most
/// [`SHOWN_BYTES`] bytes of input.
pub(super) fn escaped(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(SHOWN_BYTES)];
    let mut s = shown.escape_ascii().to_string();
    if bytes.len() > SHOWN_BYTES {
        s.push_str("...");
    }
    s
}

/// The refusals of one store: the log lines written so far and, per claimed rank, the last
/// refusal of a peer claiming it (for "rank 1 never connected" messages).
#[derive(Default)]
pub(super) struct Refusals {
    logged: usize,
    unlogged: usize,
    by_rank: HashMap<usize, (SocketAddr, String)>,
    #[cfg(test)]
    pub lines: Vec<String>,
}

impl Refusals {
    /// Records a refusal of `peer` and returns the line to log, unless [`MAX_LOGGED`] lines
    /// have been returned already. `world` bounds which claimed ranks are remembered.
    pub(super) fn record(
        &mut self,
        peer: SocketAddr,
        why: &Refusal,
        world: usize,
    ) -> Option<String> {
        let reason = why.reason();
        if let Some(r) = why.claimed().filter(|&r| r < world) {
            // The note names the claimed rank already.
            let cause = reason.replace(&format!(" (claimed rank {r})"), "");
            self.by_rank.insert(r, (peer, cause));
        }
        if self.logged >= MAX_LOGGED {
            self.unlogged += 1;
            return None;
        }
        self.logged += 1;
        let mut line = format!("collbench: rank 0's store refused {peer}: {reason}");
        if self.logged == MAX_LOGGED {
            line.push_str(" (further refusals are counted, not logged)");
        }
        #[cfg(test)]
        self.lines.push(line.clone());
        Some(line)
    }

    /// Refusals that were not logged.
    pub(super) fn unlogged(&self) -> usize {
        self.unlogged
    }

    /// "; a peer claiming rank 1 (127.0.0.1:4000) was refused: wrong token (claimed rank 1)"
    /// for each of `ranks` (up to four) that a refused peer claimed.
    pub(super) fn notes_for(&self, ranks: &[usize]) -> String {
        let notes: Vec<String> = ranks
            .iter()
            .filter_map(|r| self.by_rank.get(r).map(|(a, why)| (r, a, why)))
            .take(4)
            .map(|(r, a, why)| format!("a peer claiming rank {r} ({a}) was refused: {why}"))
            .collect();
        match notes.is_empty() {
            true => String::new(),
            false => format!(" ({})", notes.join("; ")),
        }
    }
}
