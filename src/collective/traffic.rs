//! Uneven all-to-all (alltoallv) traffic: how many bytes each rank sends each peer, exactly as
//! nccl-tests 2.19 defines it (src/alltoallv.cu), plus a matrix of fractions.
//!
//! - **Spread** (nccl-tests' generated pattern, `NCCL_TESTS_ALLTOALLV_SPREAD`, 0 to 1): rank i
//!   sends rank j `(1 − s)·T/p + s·d·T/(p(p−1)/2)` bytes, `d = (j − i) mod p` its distance in
//!   rank order and T the per-rank total; 0 is uniform, 1 sends nothing to itself and most to
//!   the farthest rank. Every rank sends and receives the same total.
//! - **Bytes matrix** (nccl-tests' `NCCL_TESTS_ALLTOALLV_MATRIX_FILE`, times `..._MATRIX_SCALE`):
//!   cell [i][j] the bytes i sends j; whitespace-separated, square, at least p×p (the first p
//!   rows and columns are used); the size does not sweep.
//! - **Fraction matrix** (a CSV, as nccl-tests#157 asked): cell [i][j] the share of rank i's
//!   total T sent to j, each row summing to 1; it sweeps like the spread.
//!
//! Every per-peer amount is rounded down to a multiple of 16 bytes, as nccl-tests does. The
//! point's size (nccl-tests' `size` column) is the most any rank sends or receives; busbw is that
//! over the time times (p−1)/p (the op's row: `Factor::PeersOverP`).

use serde::{Deserialize, Serialize};

/// Per-peer amounts are multiples of this many bytes (nccl-tests aligns them so).
pub const ALIGN: usize = 16;

/// The largest matrix read: past any expert-parallel group, and small enough that the sweep's
/// options carrying it (to local ranks, and into meta.json, read back up to 64 MiB) stay a few
/// tens of MiB (1024² fractions are about 20 MiB of JSON). Larger worlds: a spread or the
/// routing model, which travel as a few numbers.
pub const MAX_DIM: usize = 1024;

/// The most a bytes matrix may have one rank send or receive (1 TiB): far past any buffer, and
/// so that every sum of cells stays exact.
pub const MAX_RANK_BYTES: usize = 1 << 40;

/// A row of fractions may miss 1 by this much (a CSV written with 6 decimals).
pub const ROW_SUM_TOLERANCE: f64 = 1e-4;

/// Who sends how much to whom.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Traffic {
    /// nccl-tests' distance-weighted spread, 0 (uniform) to 1.
    Spread(f64),
    /// Bytes per (sender, receiver), row-major, already scaled and aligned.
    Bytes { dim: usize, cells: Vec<usize> },
    /// Shares of the sender's total per (sender, receiver), row-major; rows sum to 1.
    Fractions { dim: usize, cells: Vec<f64> },
}

impl Traffic {
    /// Whether the pattern describes `p` ranks: any for a spread, at most its dimension for a
    /// bytes matrix (the first `p` rows and columns, as nccl-tests reads it), exactly its
    /// dimension for fractions (its rows are shares of all its columns).
    pub fn check_ranks(&self, p: usize) -> Result<(), String> {
        match self {
            _ if p == 0 => Err("no ranks".into()),
            Traffic::Spread(_) => Ok(()),
            Traffic::Bytes { dim, .. } if p > *dim => Err(format!(
                "the matrix has {dim} rows, fewer than the {p} ranks"
            )),
            Traffic::Fractions { dim, .. } if p != *dim => Err(format!(
                "the fractions describe {dim} ranks, not {p}: each row shares a rank's sends \
                 among all {dim}"
            )),
            _ => Ok(()),
        }
    }

    /// Bytes rank `i` sends rank `j` at `p` ranks when every rank sends `total` bytes in all
    /// (`total` is not used by a bytes matrix); 0 outside what [`Traffic::check_ranks`]
    /// accepts.
    pub fn peer_bytes(&self, i: usize, j: usize, p: usize, total: usize) -> usize {
        let aligned = |x: f64| (x as usize) & !(ALIGN - 1);
        let outside = |dim: usize| i >= dim || j >= dim || i >= p || j >= p;
        match self {
            Traffic::Spread(_) if i >= p || j >= p => 0,
            Traffic::Spread(_) if p == 1 => total & !(ALIGN - 1),
            Traffic::Spread(s) => {
                let distance = (j + p - i) % p;
                let sum_distances = (p * (p - 1) / 2) as f64;
                let uniform = total as f64 / p as f64;
                let weighted = distance as f64 * total as f64 / sum_distances;
                aligned((1.0 - s) * uniform + s * weighted)
            }
            Traffic::Bytes { dim, .. } | Traffic::Fractions { dim, .. } if outside(*dim) => 0,
            Traffic::Bytes { dim, cells } => cells[i * dim + j],
            Traffic::Fractions { dim, cells } => aligned(cells[i * dim + j] * total as f64),
        }
    }

    /// (bytes sent, bytes received) by each of `p` ranks, saturating at `usize::MAX`.
    pub fn rank_totals(&self, p: usize, total: usize) -> Vec<(usize, usize)> {
        let sum = |it: &mut dyn Iterator<Item = usize>| it.fold(0usize, usize::saturating_add);
        (0..p)
            .map(|r| {
                let sent = sum(&mut (0..p).map(|j| self.peer_bytes(r, j, p, total)));
                let received = sum(&mut (0..p).map(|i| self.peer_bytes(i, r, p, total)));
                (sent, received)
            })
            .collect()
    }

    /// Whether the pattern sweeps sizes (a bytes matrix fixes them).
    pub fn sweeps(&self) -> bool {
        !matches!(self, Traffic::Bytes { .. })
    }

    /// The ranks the pattern can describe (unbounded for a spread).
    pub fn max_ranks(&self) -> Option<usize> {
        match self {
            Traffic::Spread(_) => None,
            Traffic::Bytes { dim, .. } | Traffic::Fractions { dim, .. } => Some(*dim),
        }
    }
}

/// nccl-tests' per-rank total of a generated pattern for a requested size in bytes: the
/// per-peer count `(size/elt / p)` rounded down to whole 16-byte chunks, times `p` peers.
pub fn generated_total_bytes(size: usize, elt: usize, p: usize) -> usize {
    let elt = elt.max(1);
    let per_chunk = (ALIGN / elt).max(1);
    let param_count = ((size / elt) / p.max(1)) & !(per_chunk - 1);
    param_count * p * elt
}

/// A spread checked: a number from 0 to 1 (nccl-tests clamps; a typo should not pass).
pub fn spread(s: f64) -> Result<Traffic, String> {
    match (0.0..=1.0).contains(&s) {
        true => Ok(Traffic::Spread(s)),
        false => Err(format!("spread {s} is not from 0 (uniform) to 1")),
    }
}

/// Parses nccl-tests' whitespace-separated bytes matrix, every value times `scale` and rounded
/// down to 16 bytes. Errors name the row and column (from 1).
pub fn parse_bytes_matrix(text: &str, scale: f64) -> Result<Traffic, String> {
    if !(scale.is_finite() && scale >= 0.0) {
        return Err(format!("scale {scale} is not a finite number of 0 or more"));
    }
    let rows = rows_of(text, |l| l.split_whitespace().collect())?;
    let dim = square(&rows)?;
    let mut cells = Vec::with_capacity(dim * dim);
    for (r, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let v = number(cell, r, c)?;
            let scaled = v * scale;
            if scaled >= usize::MAX as f64 {
                return Err(format!(
                    "row {}, column {}: {v} × {scale} overflows",
                    r + 1,
                    c + 1
                ));
            }
            cells.push((scaled as usize) & !(ALIGN - 1));
        }
    }
    if cells.iter().all(|&b| b == 0) {
        return Err("every cell is 0 (below 16 bytes after scaling): nothing is sent".into());
    }
    check_rank_totals(dim, &cells)?;
    Ok(Traffic::Bytes { dim, cells })
}

/// Refuses a matrix in which a rank sends or receives more than [`MAX_RANK_BYTES`].
fn check_rank_totals(dim: usize, cells: &[usize]) -> Result<(), String> {
    let too_much = |what: &str, r: usize| {
        format!(
            "rank {r} {what} more than {MAX_RANK_BYTES} bytes (1 TiB) in all; scale the matrix down"
        )
    };
    for r in 0..dim {
        let total = |cell: &dyn Fn(usize) -> usize| {
            (0..dim).try_fold(0usize, |sum, k| {
                Some(sum.saturating_add(cell(k))).filter(|&s| s <= MAX_RANK_BYTES)
            })
        };
        total(&|k| cells[r * dim + k]).ok_or_else(|| too_much("sends", r))?;
        total(&|k| cells[k * dim + r]).ok_or_else(|| too_much("receives", r))?;
    }
    Ok(())
}

/// Parses a CSV of fractions (cell [i][j]: the share of rank i's total sent to j); every row
/// sums to 1 within [`ROW_SUM_TOLERANCE`]. Errors name the row and column (from 1).
pub fn parse_fraction_csv(text: &str) -> Result<Traffic, String> {
    let rows = rows_of(text, |l| l.split(',').map(str::trim).collect())?;
    let dim = square(&rows)?;
    let mut cells = Vec::with_capacity(dim * dim);
    for (r, row) in rows.iter().enumerate() {
        let values = (row.iter().enumerate())
            .map(|(c, cell)| number(cell, r, c))
            .collect::<Result<Vec<f64>, String>>()?;
        if let Some(c) = values.iter().position(|&v| v > 1.0) {
            return Err(format!(
                "row {}, column {}: {} is more than 1",
                r + 1,
                c + 1,
                values[c]
            ));
        }
        let sum: f64 = values.iter().sum();
        if (sum - 1.0).abs() > ROW_SUM_TOLERANCE {
            return Err(format!(
                "row {} sums to {sum}, not 1: each row is one rank's shares of what it sends",
                r + 1
            ));
        }
        cells.extend(values);
    }
    Ok(Traffic::Fractions { dim, cells })
}

/// The non-empty lines (outside `#` comments), split into cells.
fn rows_of<'a>(
    text: &'a str,
    split: impl Fn(&'a str) -> Vec<&'a str>,
) -> Result<Vec<Vec<&'a str>>, String> {
    let rows: Vec<Vec<&str>> = (text.lines())
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(split)
        .collect();
    match rows.is_empty() {
        true => Err("no rows: the matrix is empty".into()),
        false => Ok(rows),
    }
}

/// The dimension of a square matrix of at most [`MAX_DIM`] rows.
fn square(rows: &[Vec<&str>]) -> Result<usize, String> {
    let dim = rows.len();
    if dim > MAX_DIM {
        return Err(format!(
            "{dim} rows: more than {MAX_DIM} ranks; for larger worlds use a spread or moe="
        ));
    }
    match rows.iter().position(|r| r.len() != dim) {
        Some(r) => Err(format!(
            "row {} has {} values; the matrix has {dim} rows and must be square",
            r + 1,
            rows[r].len()
        )),
        None => Ok(dim),
    }
}

/// A cell: a finite number of 0 or more.
fn number(cell: &str, r: usize, c: usize) -> Result<f64, String> {
    let at = || format!("row {}, column {}", r + 1, c + 1);
    let v: f64 = cell
        .parse()
        .map_err(|_| format!("{}: {cell:?} is not a number", at()))?;
    match v.is_finite() && v >= 0.0 {
        true => Ok(v),
        false => Err(format!("{}: {v} is not a finite number of 0 or more", at())),
    }
}

#[cfg(test)]
#[path = "traffic_tests.rs"]
mod tests;
