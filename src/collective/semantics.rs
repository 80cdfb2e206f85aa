//! The small vocabularies an op's row is written in: what a call leaves in the outputs, where
//! its bytes sit, its bandwidth factors, the world sizes it runs at and the scratch an
//! algorithm needs. Code outside the table matches on these, never on an `Op`, so that an op
//! with the semantics of another (nccl-tests' hypercube is an AllGather) needs only its row.

/// What a call leaves in the ranks' outputs, named after the collective that defines it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semantics {
    /// Every rank holds the reduction of all inputs.
    AllReduce,
    /// Every rank holds every rank's block, in rank order.
    AllGather,
    /// Rank r holds block r of the reduction.
    ReduceScatter,
    /// Every rank holds the root's buffer.
    Broadcast,
    /// The root holds the reduction of all inputs.
    Reduce,
    /// Rank r holds, in block j, rank j's block for r.
    AllToAll,
    /// As AllToAll with blocks of each pair's own size, packed in rank order.
    AllToAllV,
    /// Rank r holds what rank r-1 sent.
    SendRecv,
    /// The root holds every rank's block, in rank order.
    Gather,
    /// Rank r holds block r of the root's buffer.
    Scatter,
}

/// Where the S bytes of a call sit in one rank's buffers (nccl-tests' layouts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Input and output of S each.
    Whole,
    /// Input of S/p, output of S: a block from every rank (AllGather, Gather); in place the
    /// input is the rank's block of the output.
    Collect,
    /// Input of S, output of S/p: a block for every rank (ReduceScatter, Scatter); in place the
    /// output is the rank's block of the input.
    Distribute,
    /// Input and output of S, a block of S/p for (and from) every rank (AllToAll).
    Exchange,
    /// Blocks of each pair's own size (AllToAllV): an input as long as the most any rank
    /// sends, an output as long as the most any rank receives, each packed in rank order.
    Uneven,
}

impl Semantics {
    /// Where the bytes sit.
    pub fn layout(self) -> Layout {
        match self {
            Semantics::AllReduce
            | Semantics::Broadcast
            | Semantics::Reduce
            | Semantics::SendRecv => Layout::Whole,
            Semantics::AllGather | Semantics::Gather => Layout::Collect,
            Semantics::ReduceScatter | Semantics::Scatter => Layout::Distribute,
            Semantics::AllToAll => Layout::Exchange,
            Semantics::AllToAllV => Layout::Uneven,
        }
    }

    /// Whether the result combines values (and so the call takes a reduction).
    pub fn reduces(self) -> bool {
        match self {
            Semantics::AllReduce | Semantics::ReduceScatter | Semantics::Reduce => true,
            Semantics::AllGather
            | Semantics::Broadcast
            | Semantics::AllToAll
            | Semantics::AllToAllV
            | Semantics::SendRecv
            | Semantics::Gather
            | Semantics::Scatter => false,
        }
    }

    /// Whether one rank is the root: the source of Broadcast and Scatter, the destination of
    /// Reduce and Gather.
    pub fn rooted(self) -> bool {
        match self {
            Semantics::Broadcast | Semantics::Reduce | Semantics::Gather | Semantics::Scatter => {
                true
            }
            Semantics::AllReduce
            | Semantics::AllGather
            | Semantics::ReduceScatter
            | Semantics::AllToAll
            | Semantics::AllToAllV
            | Semantics::SendRecv => false,
        }
    }
}

/// A bandwidth factor as a function of the world size p (nccl-tests' `*GetBw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factor {
    /// 1.
    One,
    /// (p-1)/p.
    PeersOverP,
    /// 2(p-1)/p.
    TwicePeersOverP,
}

impl Factor {
    /// The factor at `p` ranks.
    pub fn at(self, p: usize) -> f64 {
        let p = p as f64;
        match self {
            Factor::One => 1.0,
            Factor::PeersOverP => (p - 1.0) / p,
            Factor::TwicePeersOverP => 2.0 * (p - 1.0) / p,
        }
    }
}

/// The world sizes an op runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worlds {
    /// Any number of ranks.
    Any,
    /// Powers of two only (nccl-tests' hypercube skips the others).
    PowersOfTwo,
}

impl Worlds {
    /// Whether `p` ranks qualify.
    pub fn admits(self, p: usize) -> bool {
        match self {
            Worlds::Any => true,
            Worlds::PowersOfTwo => p.is_power_of_two(),
        }
    }
}

/// The scratch a rank allocates beside its buffers to run an op with an algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scratch {
    /// None.
    None,
    /// Two slices of at most 256 KiB of the output (the host's ring ReduceScatter).
    RingSlices,
    /// One partner buffer of the output's size (recursive-doubling AllReduce).
    Partner,
    /// One step's outgoing and incoming blocks: 2·⌊p/2⌋ blocks of S/p (Bruck's AllToAll).
    BruckBlocks,
    /// A subtree of ⌊p/2⌋ blocks of S/p (binomial Gather and Scatter; the root works in its
    /// own buffer).
    Subtree,
    /// In place, a copy of the input (S) made before the exchange (`Buffers::separate`).
    InPlaceCopy,
}
