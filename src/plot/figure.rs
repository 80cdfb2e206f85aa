//! What a figure shows, as plain data: axes (label, scale, tick format), series of points and
//! how each is drawn. Built by [`super::measured`], [`super::fitlines`] and
//! [`super::projection`]; drawn by [`super::draw`]. No plotting library types here, so the
//! figures can be checked in unit tests and reused by the HTML report.

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Logarithmic with ticks at powers of two (sizes in bytes, GPU counts).
    Log2,
    /// Logarithmic with ticks at powers of ten (times).
    Log10,
}

/// How tick labels are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickFormat {
    /// Byte counts: `8 B`, `1 KiB`, `64 MiB`.
    Bytes,
    /// Plain numbers: `0.5`, `20`, `1000`, `1e6`.
    Number,
    /// Fractions shown as percentages: 0.45 is `45%`.
    Percent,
    /// Whole counts (ranks, GPUs): ticks only at integers.
    Count,
}

/// One axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The label, with its unit, e.g. `message size S (bytes)`.
    pub label: String,
    pub scale: Scale,
    pub ticks: TickFormat,
}

impl Axis {
    pub fn new(label: impl Into<String>, scale: Scale, ticks: TickFormat) -> Axis {
        Axis {
            label: label.into(),
            scale,
            ticks,
        }
    }

    /// Whether `v` can be placed on this axis (log axes need positive values).
    pub fn accepts(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Measured points: a solid line through filled markers.
    Measured,
    /// A model: a dashed line, no markers (fitted alpha-beta lines).
    Model,
}

/// One line of a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The legend entry; empty for a series that shares its colour's entry (a fitted line
    /// drawn over the measured points it belongs to).
    pub label: String,
    /// Index into the palette.
    pub color: usize,
    pub style: Style,
    /// (x, y) in data units, in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// Where the legend goes: the figure's preference, moved by [`super::placement`] to the
/// corner its lines leave free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legend {
    UpperLeft,
    UpperRight,
    LowerLeft,
    LowerRight,
}

/// A whole figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// File stem, e.g. `busbw-allreduce`.
    pub name: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub legend: Legend,
    /// One line under the plot, e.g. what the dashed lines are.
    pub note: Option<String>,
    /// Start the y axis at zero (bandwidths, throughputs) rather than at the smallest value.
    pub y_from_zero: bool,
}

impl Figure {
    /// Every point that can be placed on both axes.
    pub fn drawable_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|&(x, y)| self.x.accepts(x) && self.y.accepts(y))
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        self.drawable_points().next().is_none()
    }

    /// The series names shown in the legend.
    pub fn legend_labels(&self) -> Vec<&str> {
        self.series
            .iter()
            .filter(|s| !s.label.is_empty())
            .map(|s| s.label.as_str())
            .collect()
    }
}

/// The palette (Tableau 10): distinguishable, and readable on white.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// The colour index of legend entries that stand for a kind of line rather than one series.
pub const INK: usize = usize::MAX;

/// The colour of palette index `i` (cycling), or near-black for [`INK`].
pub fn color(i: usize) -> (u8, u8, u8) {
    if i == INK {
        return (50, 50, 50);
    }
    PALETTE[i % PALETTE.len()]
}

/// A legend entry (no points) saying what dashed lines are.
pub fn fit_legend(what: &str) -> Series {
    Series {
        label: format!("{what} (dashed)"),
        color: INK,
        style: Style::Model,
        points: Vec::new(),
    }
}
