//! A seeded mixture-of-experts routing model: the alltoallv traffic of a dispatch (or, sender
//! and receiver swapped, of a combine). Every rank holds `tokens` tokens and `experts` experts;
//! each token goes to `top_k` distinct experts of the `p · experts` in all, drawn with
//! probability proportional to `1 / (1 + popularity)^zipf`, popularity a seeded shuffle of the
//! experts so that hot experts land on any rank. `zipf` 0 is a perfectly balanced router; a
//! larger exponent sends more tokens to a few hot experts: pick the one whose
//! [`Routing::load_ratio`] (the busiest rank's load over the mean) matches what your router
//! logs. The result is a [`Traffic::Fractions`]: rank i's share of
//! its sends that goes to rank j (its tokens' choices of j's experts over all its choices), so
//! it sweeps sizes like any pattern. Deterministic: the same parameters and seed give the same
//! matrix on every machine (splitmix64, no library generator whose stream could change).

use serde::{Deserialize, Serialize};

use super::traffic::{Traffic, MAX_DIM};

/// The most work a model may take: tokens × ranks × top_k × (experts in all + retries), a
/// choice being a few draws or, where a skewed router keeps drawing the chosen ones, a scan
/// of the experts; about 10 s.
pub const MAX_WORK: u128 = 1 << 34;

/// Draws of an expert already chosen tolerated per choice before the rest are drawn exactly.
const RETRIES_PER_CHOICE: usize = 64;

/// The routing model's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Routing {
    pub tokens: usize,
    pub experts: usize,
    pub top_k: usize,
    pub zipf: f64,
    pub seed: u64,
}

impl Routing {
    /// The parameters checked for `p` ranks; errors name the value and the fix.
    pub fn check(&self, p: usize) -> Result<(), String> {
        let all = p.saturating_mul(self.experts);
        if self.tokens == 0 || self.experts == 0 || self.top_k == 0 {
            return Err("tokens, experts and top_k must each be 1 or more".into());
        }
        if self.top_k > all {
            return Err(format!(
                "top_k {} is more than the {all} experts of {p} ranks",
                self.top_k
            ));
        }
        if !(self.zipf.is_finite() && (0.0..=4.0).contains(&self.zipf)) {
            return Err(format!("zipf {} is not from 0 (balanced) to 4", self.zipf));
        }
        if p > MAX_DIM {
            return Err(format!("{p} ranks: more than {MAX_DIM}"));
        }
        // A choice is a draw, or (a skewed router drawing the chosen ones again) a scan.
        let per_choice = all as u128 + RETRIES_PER_CHOICE as u128;
        let work = self.tokens as u128 * p as u128 * self.top_k as u128 * per_choice;
        if work > MAX_WORK {
            return Err(format!(
                "{} tokens x {p} ranks x top_k {} x {all} experts is more than {MAX_WORK} to draw; \
                 fewer tokens give the same shares",
                self.tokens, self.top_k
            ));
        }
        Ok(())
    }

    /// Tokens' choices per (sending rank, receiving rank), row-major `p × p`.
    pub fn choices(&self, p: usize) -> Result<Vec<u64>, String> {
        self.check(p)?;
        let mut rng = SplitMix64(self.seed);
        let cumulative = self.popularity(p, &mut rng);
        let mut counts = vec![0u64; p * p];
        let mut picked = Chosen {
            list: Vec::with_capacity(self.top_k),
            taken: vec![false; cumulative.len()],
        };
        for sender in 0..p {
            for _ in 0..self.tokens {
                self.choose(&cumulative, &mut rng, &mut picked);
                for &e in &picked.list {
                    counts[sender * p + e / self.experts] += 1;
                }
            }
        }
        Ok(counts)
    }

    /// One token's `top_k` distinct experts: drawn by weight, a repeat drawn again; where a
    /// skewed router keeps drawing the chosen ones, the rest are drawn exactly from the
    /// experts not yet chosen.
    fn choose(&self, cumulative: &[f64], rng: &mut SplitMix64, chosen: &mut Chosen) {
        chosen.clear();
        let mut draws = 0;
        while chosen.list.len() < self.top_k {
            draws += 1;
            let e = match draws <= RETRIES_PER_CHOICE * self.top_k {
                true => draw(cumulative, rng.unit()),
                false => draw_excluding(cumulative, &chosen.taken, rng.unit()),
            };
            chosen.take(e);
        }
    }

    /// The traffic: each sender's choices of each receiver over all its choices.
    pub fn traffic(&self, p: usize) -> Result<Traffic, String> {
        let counts = self.choices(p)?;
        let per_sender = (self.tokens * self.top_k) as f64;
        let cells = counts.iter().map(|&c| c as f64 / per_sender).collect();
        Ok(Traffic::Fractions { dim: p, cells })
    }

    /// The most choices any rank's experts receive over the mean: 1 for a balanced router.
    pub fn load_ratio(&self, p: usize) -> Result<f64, String> {
        let counts = self.choices(p)?;
        let received: Vec<u64> = (0..p)
            .map(|j| (0..p).map(|i| counts[i * p + j]).sum())
            .collect();
        let mean = received.iter().sum::<u64>() as f64 / p as f64;
        Ok(received.iter().copied().max().unwrap_or(0) as f64 / mean)
    }

    /// The cumulative draw weights of the `p · experts` experts (expert e on rank e / experts).
    fn popularity(&self, p: usize, rng: &mut SplitMix64) -> Vec<f64> {
        let n = p * self.experts;
        let mut rank: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            rank.swap(i, j);
        }
        let mut total = 0.0;
        rank.iter()
            .map(|&r| {
                total += 1.0 / (1.0 + r as f64).powf(self.zipf);
                total
            })
            .collect()
    }
}

/// The index whose cumulative weight first exceeds `u` of the total.
fn draw(cumulative: &[f64], u: f64) -> usize {
    let target = u * cumulative.last().copied().unwrap_or(0.0);
    cumulative
        .partition_point(|&c| c <= target)
        .min(cumulative.len() - 1)
}

/// An expert not in `picked`, drawn by weight among those (weights from `cumulative`).
fn draw_excluding(cumulative: &[f64], taken: &[bool], u: f64) -> usize {
    let weight = |e: usize| cumulative[e] - if e == 0 { 0.0 } else { cumulative[e - 1] };
    let free = || (0..cumulative.len()).filter(|&e| !taken[e]);
    let total: f64 = free().map(weight).sum();
    let mut left = u * total;
    let mut last = 0;
    for e in free() {
        last = e;
        left -= weight(e);
        if left < 0.0 {
            return e;
        }
    }
    last
}

/// One token's experts so far: in order, and as a set.
struct Chosen {
    list: Vec<usize>,
    taken: Vec<bool>,
}

impl Chosen {
    fn clear(&mut self) {
        for &e in &self.list {
            self.taken[e] = false;
        }
        self.list.clear();
    }

    fn take(&mut self, e: usize) {
        if !self.taken[e] {
            self.taken[e] = true;
            self.list.push(e);
        }
    }
}

/// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a fixed stream for a seed, on every machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(zipf: f64) -> Routing {
        Routing {
            tokens: 4096,
            experts: 4,
            top_k: 2,
            zipf,
            seed: 7,
        }
    }

    #[test]
    fn every_token_makes_top_k_distinct_choices() {
        let counts = model(1.0).choices(8).unwrap();
        for sender in 0..8 {
            let row: u64 = counts[sender * 8..(sender + 1) * 8].iter().sum();
            assert_eq!(row, 4096 * 2);
        }
        // Every expert chosen: top_k equal to all experts sends each token everywhere.
        let all = Routing {
            tokens: 3,
            experts: 1,
            top_k: 4,
            zipf: 2.0,
            seed: 1,
        };
        assert_eq!(all.choices(4).unwrap(), vec![3; 16]);
    }

    #[test]
    fn a_skewed_router_loads_some_ranks_more_and_the_seed_fixes_the_stream() {
        let balanced = model(0.0).load_ratio(8).unwrap();
        let skewed = model(1.2).load_ratio(8).unwrap();
        assert!(balanced < 1.1, "{balanced}");
        assert!(skewed > 1.5, "{skewed}");
        assert_eq!(model(1.2).choices(8), model(1.2).choices(8));
        let other = Routing {
            seed: 8,
            ..model(1.2)
        };
        assert_ne!(other.choices(8), model(1.2).choices(8));
        // Fractions: each sender's row sums to 1.
        let Traffic::Fractions { cells, .. } = model(1.2).traffic(8).unwrap() else {
            panic!("fractions")
        };
        for row in cells.chunks(8) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn a_skew_that_keeps_drawing_the_same_experts_still_ends_with_distinct_choices() {
        // 16 experts, 15 chosen per token at the highest skew: the coldest are drawn exactly.
        let hot = Routing {
            tokens: 200,
            experts: 4,
            top_k: 15,
            zipf: 4.0,
            seed: 3,
        };
        let counts = hot.choices(4).unwrap();
        for row in counts.chunks(4) {
            assert_eq!(row.iter().sum::<u64>(), 200 * 15);
            // No rank can take more than its 4 experts' worth of a token's 15 choices.
            assert!(row.iter().all(|&c| c <= 200 * 4), "{row:?}");
        }
    }

    #[test]
    fn impossible_models_are_refused_naming_the_value() {
        let bad = |r: Routing, says: &str| {
            let e = r.check(4).unwrap_err();
            assert!(e.contains(says), "{e}");
        };
        bad(
            Routing {
                top_k: 17,
                ..model(1.0)
            },
            "top_k 17",
        );
        bad(
            Routing {
                tokens: 0,
                ..model(1.0)
            },
            "1 or more",
        );
        bad(
            Routing {
                zipf: -1.0,
                ..model(1.0)
            },
            "zipf -1",
        );
        bad(
            Routing {
                zipf: f64::NAN,
                ..model(1.0)
            },
            "zipf NaN",
        );
        bad(
            Routing {
                tokens: 1 << 30,
                ..model(1.0)
            },
            "fewer tokens",
        );
    }
}
