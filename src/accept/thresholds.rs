//! The thresholds of a criterion and the statistic taken across repeats: what each key
//! measures, its unit, whether it is a floor or a ceiling, and the margin of a measured value.

/// The statistic taken across repeats of a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    Median,
    Mean,
    Min,
    Max,
    /// The least favourable repeat for the check (lowest bandwidth, highest time, ...).
    Worst,
}

/// One threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    MinBusbw(f64),
    MaxTime(f64),
    MaxCv(f64),
    MaxRankSkew(f64),
    MaxNodeSkew(f64),
    /// How far the rank slowest most often is from chance toward always: 0 at chance (1/p of
    /// the iterations), 1 when it is the slowest of every iteration.
    MaxSlowestBias(f64),
    /// The same for nodes: how far the node slowest most often is from its chance (its share
    /// of the point's ranks) toward always; one node is judged as [`Check::MaxSlowestBias`].
    MaxNodeSlowestBias(f64),
    /// How much slower the point got from the first quarter of its cycles and repeats to the
    /// last ([`crate::stats::drift`]): 0.1 is 10% slower at the end.
    MaxDrift(f64),
    MaxFitDeviation(f64),
    MaxFitSlowdown(f64),
    MaxWrong(u64),
}

/// Whether a threshold is a floor or a ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    AtLeast,
    AtMost,
}

impl Stat {
    /// The name used in the file.
    pub fn name(self) -> &'static str {
        match self {
            Stat::Median => "median",
            Stat::Mean => "mean",
            Stat::Min => "min",
            Stat::Max => "max",
            Stat::Worst => "worst",
        }
    }

    /// Parses a name used in the file.
    pub fn parse(s: &str) -> Option<Stat> {
        [Stat::Median, Stat::Mean, Stat::Min, Stat::Max, Stat::Worst]
            .into_iter()
            .find(|st| st.name() == s.trim())
    }
}

impl Check {
    /// The key of the threshold in the file (and in verdict.json).
    pub fn key(self) -> &'static str {
        match self {
            Check::MinBusbw(_) => "min_busbw_gbps",
            Check::MaxTime(_) => "max_time_us",
            Check::MaxCv(_) => "max_cv",
            Check::MaxRankSkew(_) => "max_rank_skew",
            Check::MaxNodeSkew(_) => "max_node_skew",
            Check::MaxSlowestBias(_) => "max_slowest_bias",
            Check::MaxNodeSlowestBias(_) => "max_node_slowest_bias",
            Check::MaxDrift(_) => "max_drift",
            Check::MaxFitDeviation(_) => "max_fit_deviation",
            Check::MaxFitSlowdown(_) => "max_fit_slowdown",
            Check::MaxWrong(_) => "max_wrong",
        }
    }

    /// The unit of measured value and threshold (`fraction` for ratios such as CV).
    pub fn unit(self) -> &'static str {
        match self {
            Check::MinBusbw(_) => "GB/s",
            Check::MaxTime(_) => "us",
            Check::MaxWrong(_) => "elements",
            _ => "fraction",
        }
    }

    /// The threshold as a number.
    pub fn threshold(self) -> f64 {
        match self {
            Check::MinBusbw(x)
            | Check::MaxTime(x)
            | Check::MaxCv(x)
            | Check::MaxRankSkew(x)
            | Check::MaxNodeSkew(x)
            | Check::MaxSlowestBias(x)
            | Check::MaxNodeSlowestBias(x)
            | Check::MaxDrift(x)
            | Check::MaxFitDeviation(x)
            | Check::MaxFitSlowdown(x) => x,
            Check::MaxWrong(n) => n as f64,
        }
    }

    /// Floor or ceiling.
    pub fn bound(self) -> Bound {
        match self {
            Check::MinBusbw(_) => Bound::AtLeast,
            _ => Bound::AtMost,
        }
    }

    /// Whether `measured` meets the threshold.
    pub fn passes(self, measured: f64) -> bool {
        match self.bound() {
            Bound::AtLeast => measured >= self.threshold(),
            Bound::AtMost => measured <= self.threshold(),
        }
    }

    /// Headroom in percent of the threshold: positive passes, negative fails; `None` when the
    /// threshold is 0 (no percentage of nothing).
    pub fn margin_pct(self, measured: f64) -> Option<f64> {
        let t = self.threshold();
        if t == 0.0 || !measured.is_finite() {
            return None;
        }
        Some(match self.bound() {
            Bound::AtLeast => (measured - t) / t * 100.0,
            Bound::AtMost => (t - measured) / t * 100.0,
        })
    }

    /// Whether it needs a reference fit.
    pub fn needs_fit(self) -> bool {
        matches!(self, Check::MaxFitDeviation(_) | Check::MaxFitSlowdown(_))
    }

    /// Whether it reads ranks.csv.
    pub fn needs_ranks(self) -> bool {
        matches!(self, Check::MaxRankSkew(_) | Check::MaxNodeSkew(_))
    }
}

/// Every threshold key, for messages.
pub const THRESHOLD_KEYS: &str = "min_busbw_gbps, max_time_us, max_cv, max_rank_skew, \
     max_node_skew, max_slowest_bias, max_node_slowest_bias, max_drift, max_fit_deviation, \
     max_fit_slowdown, max_wrong";
