//! Regime detection: piecewise alpha-beta lines over message size.
//!
//! One alpha-beta line rarely spans 8 B to 1 GiB: protocols and algorithms switch with size (eager
//! to rendezvous, a different chunking, the cache giving way to memory), and each regime has its
//! own latency and bandwidth. [`segment`] cuts the sorted sizes into at most `max_segments`
//! contiguous runs and fits a line to each.
//!
//! **Choosing the cuts.** More segments always fit better, so the count is chosen by the Bayesian
//! information criterion, `BIC = m·ln(RSS/m) + q·ln(m)`, which charges every parameter `ln m`:
//! `q = 2c + 4(c − 1)` for `c` segments (two line parameters each, plus the `c − 1` breakpoints,
//! each charged as four parameters; see below). BIC, rather than AIC, because its heavier penalty keeps a curve at one line unless
//! the evidence for a break is strong; a spurious regime would be reported as a property of the
//! system. For each count every admissible cut is searched (dynamic programming over the sizes),
//! and the count with the lowest BIC wins; a tie goes to fewer segments.
//!
//! **Why a breakpoint costs four parameters** (`BREAKPOINT_PARAMS`). A breakpoint is the best of
//! many positions, so it buys more fit than one parameter does. Charged as one parameter, a
//! spurious break was chosen on synthetic straight lines (24 sizes, 2% noise) in about one noise
//! draw in five, and a two-regime curve got a spurious third segment about as often; charged as
//! three, a few percent; as four, none in 100 draws, while the real break of a two-regime curve
//! was still found every time.
//!
//! **Medians for selection.** The criterion is computed on the per-size medians (one point per
//! size, `m` the number of sizes), each line a plain relative least-squares fit of its medians
//! (non-negative when the fit options say so), `RSS = Σ ((median − ŷ)/median)²`. The samples of one
//! size share a launch and are not independent, so counting them as `n` observations would make
//! `ln n` and the likelihood overstate the evidence and split curves at every wobble; medians are
//! also robust to outliers and make the search cheap. RSS is floored at `m·(1e-9)²` (a relative
//! error of 1e-9 is below any timer's resolution), so a noise-free line, whose RSS is rounding
//! noise, has equal likelihood at every count and the penalty picks one segment.
//!
//! **Many sizes.** Up to [`MAX_EXACT_SIZES`] sizes (every sweep of powers of two from 8 B to
//! 16 EiB) a breakpoint may fall between any two sizes. Beyond that (a log of nccl-tests run with
//! linear steps holds thousands) breakpoints are searched among [`MAX_EXACT_SIZES`] evenly spaced
//! positions, so that the search costs `O(positions² · sizes)`, linear in the sizes, instead of
//! cubic (800 sizes took 56 s, 10,000 sizes 800 MB); each breakpoint found is then moved to the
//! best size between its neighbouring positions, coarse to fine (`O(sizes · log sizes)`). Every
//! size is still fitted.
//!
//! **Minimum sizes.** Each segment needs at least `min_sizes` distinct sizes, and never fewer than
//! 3: a line through two medians fits them exactly whatever the data, and the robust refit needs
//! `k + 1 = 3` groups for its interval. The chosen segments are then refitted from their samples
//! with the full robust [`fit`], which gives their parameters, intervals and quality.

use super::regress::{fit, group_medians, FitError, LinearFit, Obs, RobustOptions};

/// How breakpoints are searched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentOptions {
    /// Most segments considered.
    pub max_segments: usize,
    /// Fewest distinct sizes in a segment.
    pub min_sizes: usize,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        SegmentOptions {
            max_segments: 3,
            min_sizes: 3,
        }
    }
}

/// One regime: sizes `min_bytes..=max_bytes` and their line.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub min_bytes: f64,
    pub max_bytes: f64,
    pub fit: LinearFit,
}

/// The chosen segmentation and the information criterion of every candidate count.
#[derive(Clone, Debug, PartialEq)]
pub struct Segmentation {
    pub segments: Vec<Segment>,
    /// (number of segments, best BIC with that many), for every count that could be fitted.
    pub bic: Vec<(usize, f64)>,
}

/// Fewest sizes a segment may have, whatever the options say.
const MIN_SIZES: usize = 3;
/// Relative residual below which a fit counts as exact (floors the RSS).
const RESOLUTION: f64 = 1e-9;
/// Parameters a breakpoint counts for in the BIC penalty (see the caveat in the module docs).
const BREAKPOINT_PARAMS: usize = 4;
/// Most sizes for which a breakpoint may fall between any two; beyond, the positions searched.
pub const MAX_EXACT_SIZES: usize = 64;

/// Splits alpha-beta observations (`x = [1, bytes]`, `group` = size index, ascending with size)
/// into at most `max_segments` contiguous regimes, chosen by BIC.
///
/// Errors: [`FitError::NonFinite`] for empty or malformed input (as [`fit`]), [`FitError::Singular`]
/// when a feature vector is not `[1, bytes]`-shaped (length 2) or no segmentation can be fitted,
/// [`FitError::TooFewGroups`] when there are fewer sizes than `max(min_sizes, 3)`. A
/// `max_segments` of 0 is taken as 1.
pub fn segment(
    obs: &[Obs],
    fit_opts: &RobustOptions,
    opts: &SegmentOptions,
) -> Result<Segmentation, FitError> {
    let medians = size_medians(obs)?;
    let m = medians.len();
    let min = opts.min_sizes.max(MIN_SIZES);
    if m < min {
        return Err(FitError::TooFewGroups { need: min, have: m });
    }
    let positions = cut_positions(m);
    let cost = run_costs(&medians, &positions, min, fit_opts);
    let mut best: Option<(f64, Vec<usize>)> = None;
    let mut bic = Vec::new();
    for (c, rss, bounds) in best_cuts(&cost, &positions, min, opts.max_segments.max(1)) {
        let (rss, bounds) = refine(&medians, (rss, bounds), min, fit_opts);
        let b = m as f64 * (rss.max(m as f64 * RESOLUTION * RESOLUTION) / m as f64).ln()
            + (2 * c + BREAKPOINT_PARAMS * (c - 1)) as f64 * (m as f64).ln();
        bic.push((c, b));
        if best.as_ref().map_or(true, |(lowest, _)| b < *lowest) {
            best = Some((b, bounds));
        }
    }
    let (_, bounds) = best.ok_or(FitError::Singular)?;
    let runs = bounds.windows(2).map(|w| &medians[w[0]..w[1]]);
    let segments = runs
        .map(|run| refit(obs, run, fit_opts))
        .collect::<Result<_, _>>()?;
    Ok(Segmentation { segments, bic })
}

/// One point per size: (group, bytes, median time), ascending group.
type SizeMedian = (usize, f64, f64);

fn size_medians(obs: &[Obs]) -> Result<Vec<SizeMedian>, FitError> {
    let finite = |o: &Obs| o.y > 0.0 && o.y.is_finite() && o.x.iter().all(|x| x.is_finite());
    if obs.is_empty() || !obs.iter().all(finite) {
        return Err(FitError::NonFinite);
    }
    if obs.iter().any(|o| o.x.len() != 2) {
        return Err(FitError::Singular);
    }
    // One pass, not one search per size: logs hold thousands of sizes.
    let mut bytes: std::collections::BTreeMap<usize, f64> = std::collections::BTreeMap::new();
    for o in obs {
        bytes.entry(o.group).or_insert(o.x[1]);
    }
    let bytes_of = |group: usize| bytes.get(&group).copied().unwrap_or(0.0);
    let medians = group_medians(obs).into_iter();
    Ok(medians
        .map(|(g, median)| (g, bytes_of(g), median))
        .collect())
}

/// The size indices where a segment may start or end: every one up to [`MAX_EXACT_SIZES`]
/// sizes, else that many evenly spaced (always 0 and `m`).
fn cut_positions(m: usize) -> Vec<usize> {
    if m <= MAX_EXACT_SIZES {
        return (0..=m).collect();
    }
    let mut out: Vec<usize> = (0..=MAX_EXACT_SIZES)
        .map(|k| k * m / MAX_EXACT_SIZES)
        .collect();
    out.dedup();
    out
}

/// `cost[a][b]`: the relative RSS of one line through the medians of sizes
/// `positions[a]..positions[b]`, infinite when the run is shorter than `min` or cannot be fitted.
fn run_costs(
    medians: &[SizeMedian],
    positions: &[usize],
    min: usize,
    fit_opts: &RobustOptions,
) -> Vec<Vec<f64>> {
    let n = positions.len();
    let plain = RobustOptions {
        max_iter: 0,
        ..*fit_opts
    };
    let mut cost = vec![vec![f64::INFINITY; n]; n];
    for a in 0..n {
        for b in a + 1..n {
            let (i, j) = (positions[a], positions[b]);
            if j - i >= min {
                cost[a][b] = line_rss(&medians[i..j], &plain);
            }
        }
    }
    cost
}

/// The relative RSS of one plain line through `run`'s medians; infinite where none fits.
fn line_rss(run: &[SizeMedian], plain: &RobustOptions) -> f64 {
    let points = run.iter().map(|&(group, bytes, y)| Obs {
        x: vec![1.0, bytes],
        y,
        group,
    });
    let points: Vec<Obs> = points.collect();
    match fit(&points, plain) {
        Ok(line) => {
            let rel = |o: &Obs| (o.y - line.params[0] - line.params[1] * o.x[1]) / o.y;
            points.iter().map(|o| rel(o).powi(2)).sum()
        }
        Err(_) => f64::INFINITY,
    }
}

/// Beyond [`MAX_EXACT_SIZES`] sizes, moves each breakpoint found among the coarse positions to
/// the best size between its neighbouring positions, coarse to fine ([`MAX_EXACT_SIZES`]
/// candidates a round, the window shrinking as many times each round): `O(sizes · log sizes)`
/// fits of the sizes' medians. Returns the refined total RSS and boundaries.
fn refine(
    medians: &[SizeMedian],
    (rss, mut bounds): (f64, Vec<usize>),
    min: usize,
    fit_opts: &RobustOptions,
) -> (f64, Vec<usize>) {
    let m = medians.len();
    if m <= MAX_EXACT_SIZES {
        return (rss, bounds);
    }
    let plain = RobustOptions {
        max_iter: 0,
        ..*fit_opts
    };
    let pair = |prev: usize, x: usize, next: usize| {
        line_rss(&medians[prev..x], &plain) + line_rss(&medians[x..next], &plain)
    };
    for k in 1..bounds.len().saturating_sub(1) {
        let (prev, next) = (bounds[k - 1], bounds[k + 1]);
        // Both neighbouring runs keep at least `min` sizes.
        let (mut lo, mut hi) = (prev + min, next - min);
        let mut best = (pair(prev, bounds[k], next), bounds[k]);
        while hi > lo {
            let step = ((hi - lo) / MAX_EXACT_SIZES).max(1);
            for x in (lo..=hi).step_by(step) {
                let c = pair(prev, x, next);
                if c < best.0 {
                    best = (c, x);
                }
            }
            if step == 1 {
                break;
            }
            (lo, hi) = (best.1.saturating_sub(step).max(lo), (best.1 + step).min(hi));
        }
        bounds[k] = best.1;
    }
    let total = bounds
        .windows(2)
        .map(|w| line_rss(&medians[w[0]..w[1]], &plain))
        .sum();
    (total, bounds)
}

/// For every count `c` in `1..=max_c` that has a feasible cut: (c, least total RSS, boundaries
/// `[0, b1, …, m]` as size indices). Dynamic programming over the positions: `best[c][b]` is the
/// least RSS of sizes `0..positions[b]` in `c` runs.
fn best_cuts(
    cost: &[Vec<f64>],
    positions: &[usize],
    min: usize,
    max_c: usize,
) -> Vec<(usize, f64, Vec<usize>)> {
    let n = positions.len();
    let m = positions[n - 1];
    let max_c = max_c.min(m / min);
    let mut best = vec![vec![(f64::INFINITY, 0usize); n]; max_c + 1];
    best[0][0].0 = 0.0;
    for c in 1..=max_c {
        for b in 1..n {
            for a in 0..b {
                let total = best[c - 1][a].0 + cost[a][b];
                if total < best[c][b].0 {
                    best[c][b] = (total, a);
                }
            }
        }
    }
    let feasible = (1..=max_c).filter(|&c| best[c][n - 1].0.is_finite());
    let trace = |c: usize| {
        let mut at = vec![n - 1];
        for level in (1..=c).rev() {
            at.push(best[level][at[at.len() - 1]].1);
        }
        at.reverse();
        let bounds = at.into_iter().map(|k| positions[k]).collect();
        (c, best[c][n - 1].0, bounds)
    };
    feasible.map(trace).collect()
}

/// The robust fit of the samples of one run of sizes.
fn refit(obs: &[Obs], run: &[SizeMedian], fit_opts: &RobustOptions) -> Result<Segment, FitError> {
    let (first, last) = (run[0].0, run[run.len() - 1].0);
    let samples: Vec<Obs> = obs
        .iter()
        .filter(|o| (first..=last).contains(&o.group))
        .cloned()
        .collect();
    let bytes = samples.iter().map(|o| o.x[1]);
    let min_bytes = bytes.clone().fold(f64::INFINITY, f64::min);
    let max_bytes = bytes.fold(f64::NEG_INFINITY, f64::max);
    Ok(Segment {
        min_bytes,
        max_bytes,
        fit: fit(&samples, fit_opts)?,
    })
}

#[cfg(test)]
mod tests;
