//! Where the legend goes: the place along the left or right edge of the plot where the legend
//! box would cover the fewest points and line segments, the figure's preferred corner first,
//! then corners, then positions further from the top. Pure.

use super::figure::{Figure, Legend};
use super::ticks::{to_draw, Layout};

/// Approximate plot area in pixels (figure size less label areas and margins).
const PLOT_PX: (f64, f64) = (850.0, 460.0);

/// A legend position: which edge, and the box's top as a fraction of the plot height from the
/// bottom (1 is the top edge).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spot {
    pub left: bool,
    pub top: f64,
    /// Points and line samples under the box.
    pub covered: usize,
}

/// The legend box size in pixels for these labels.
pub fn box_px(labels: &[&str]) -> (f64, f64) {
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (60.0 + 8.5 * chars as f64, 14.0 + 21.0 * labels.len() as f64)
}

/// Every drawn point and points along each line segment, as fractions of the plot (0..1,
/// y upwards).
fn occupied(fig: &Figure, xl: &Layout, yl: &Layout) -> Vec<(f64, f64)> {
    let norm = |(x, y): (f64, f64)| {
        (
            (to_draw(fig.x.scale, x) - xl.lo) / (xl.hi - xl.lo),
            (to_draw(fig.y.scale, y) - yl.lo) / (yl.hi - yl.lo),
        )
    };
    let mut out = Vec::new();
    for s in &fig.series {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| fig.x.accepts(x) && fig.y.accepts(y))
            .map(norm)
            .collect();
        out.extend(pts.iter().copied());
        for w in pts.windows(2) {
            for i in 1..12 {
                let t = i as f64 / 12.0;
                out.push((
                    w[0].0 + t * (w[1].0 - w[0].0),
                    w[0].1 + t * (w[1].1 - w[0].1),
                ));
            }
        }
    }
    out
}

/// The fraction of the plot's height the legend box takes (with its margin).
pub fn legend_height(fig: &Figure) -> f64 {
    let (_, h) = box_px(&fig.legend_labels());
    ((h + 24.0) / PLOT_PX.1).min(0.9)
}

/// Candidate spots in order of preference: the preferred corner, the other corners, then
/// down the edges from the top.
fn candidates(pref: Legend, lh: f64) -> Vec<(bool, f64)> {
    let corner = |c: Legend| match c {
        Legend::UpperLeft => (true, 1.0),
        Legend::UpperRight => (false, 1.0),
        Legend::LowerLeft => (true, lh),
        Legend::LowerRight => (false, lh),
    };
    let mut out = vec![corner(pref)];
    for c in [
        Legend::UpperLeft,
        Legend::UpperRight,
        Legend::LowerRight,
        Legend::LowerLeft,
    ] {
        out.push(corner(c));
    }
    let mut top = 0.95;
    while top - lh > 0.0 {
        out.push((true, top));
        out.push((false, top));
        top -= 0.05;
    }
    out
}

/// The spot for the legend.
pub fn place(fig: &Figure, xl: &Layout, yl: &Layout) -> Spot {
    let (w, _) = box_px(&fig.legend_labels());
    let lw = (w + 24.0) / PLOT_PX.0;
    let lh = legend_height(fig);
    let pts = occupied(fig, xl, yl);
    let covered = |left: bool, top: f64| {
        pts.iter()
            .filter(|(x, y)| {
                let in_x = if left { *x <= lw } else { *x >= 1.0 - lw };
                in_x && *y <= top && *y >= top - lh
            })
            .count()
    };
    let mut best: Option<Spot> = None;
    for (left, top) in candidates(fig.legend, lh) {
        let n = covered(left, top);
        if best.map_or(true, |b| n < b.covered) {
            best = Some(Spot {
                left,
                top,
                covered: n,
            });
        }
    }
    best.unwrap_or(Spot {
        left: true,
        top: 1.0,
        covered: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::figure::{Axis, Scale, Series, Style, TickFormat};
    use crate::plot::ticks::layout;

    fn line(pts: Vec<(f64, f64)>) -> Series {
        Series {
            label: "a".into(),
            color: 0,
            style: Style::Measured,
            points: pts,
        }
    }

    fn figure(series: Vec<Series>) -> Figure {
        Figure {
            name: "t".into(),
            title: "t".into(),
            x: Axis::new("x", Scale::Linear, TickFormat::Number),
            y: Axis::new("y", Scale::Linear, TickFormat::Number),
            series,
            legend: Legend::UpperLeft,
            note: None,
            y_from_zero: false,
        }
    }

    #[test]
    fn the_legend_avoids_the_lines() {
        // A line rising from lower left to upper right leaves the upper left free.
        let mut fig = figure(vec![line(vec![(0.0, 0.0), (10.0, 10.0)])]);
        let xl = layout(&fig.x, 0.0, 10.0, false);
        let yl = layout(&fig.y, 0.0, 10.0, false);
        let spot = place(&fig, &xl, &yl);
        assert_eq!((spot.left, spot.top, spot.covered), (true, 1.0, 0));
        // Lines along the top and the bottom leave room only in between.
        fig.series = vec![
            line(vec![(xl.lo, yl.hi), (xl.hi, yl.hi)]),
            line(vec![(xl.lo, yl.lo), (xl.hi, yl.lo)]),
        ];
        let spot = place(&fig, &xl, &yl);
        assert_eq!(spot.covered, 0);
        assert!(spot.top < 1.0 && spot.top > 0.2, "{spot:?}");
    }
}
