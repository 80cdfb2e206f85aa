//! Where the legend goes: the corner of the plot whose area the legend box would cover holds
//! the fewest points and line segments (the figure's preferred corner wins ties). Pure.

use super::figure::{Figure, Legend};
use super::ticks::{to_draw, Layout};

/// Approximate plot area in pixels (figure size less label areas and margins).
const PLOT_PX: (f64, f64) = (850.0, 460.0);

/// The legend box size in pixels for these labels.
fn box_px(labels: &[&str]) -> (f64, f64) {
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

/// The corner for the legend and how many points and line samples it would cover.
pub fn place(fig: &Figure, xl: &Layout, yl: &Layout) -> (Legend, usize) {
    let (w, h) = box_px(&fig.legend_labels());
    let (lw, lh) = ((w + 24.0) / PLOT_PX.0, (h + 24.0) / PLOT_PX.1);
    let pts = occupied(fig, xl, yl);
    let covered = |c: Legend| {
        let left = matches!(c, Legend::UpperLeft | Legend::LowerLeft);
        let upper = matches!(c, Legend::UpperLeft | Legend::UpperRight);
        pts.iter()
            .filter(|(x, y)| {
                let in_x = if left { *x <= lw } else { *x >= 1.0 - lw };
                let in_y = if upper { *y >= 1.0 - lh } else { *y <= lh };
                in_x && in_y
            })
            .count()
    };
    let mut best = (fig.legend, covered(fig.legend));
    for c in [
        Legend::UpperLeft,
        Legend::UpperRight,
        Legend::LowerRight,
        Legend::LowerLeft,
    ] {
        let n = covered(c);
        if n < best.1 {
            best = (c, n);
        }
    }
    best
}

/// The fraction of the plot's height the legend box takes (with its margin).
pub fn legend_height(fig: &Figure) -> f64 {
    let (_, h) = box_px(&fig.legend_labels());
    ((h + 24.0) / PLOT_PX.1).min(0.6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::figure::{Axis, Scale, Series, Style, TickFormat};
    use crate::plot::ticks::layout;

    #[test]
    fn the_legend_avoids_the_lines() {
        // A line rising from lower left to upper right leaves the upper left and lower right
        // free; a second line along the top leaves only the lower right.
        let line = |pts: Vec<(f64, f64)>| Series {
            label: "a".into(),
            color: 0,
            style: Style::Measured,
            points: pts,
        };
        let mut fig = Figure {
            name: "t".into(),
            title: "t".into(),
            x: Axis::new("x", Scale::Linear, TickFormat::Number),
            y: Axis::new("y", Scale::Linear, TickFormat::Number),
            series: vec![line(vec![(0.0, 0.0), (10.0, 10.0)])],
            legend: Legend::UpperLeft,
            note: None,
            y_from_zero: false,
        };
        let xl = layout(&fig.x, 0.0, 10.0, false);
        let yl = layout(&fig.y, 0.0, 10.0, false);
        assert_eq!(place(&fig, &xl, &yl), (Legend::UpperLeft, 0));
        fig.series.push(line(vec![(0.0, 10.0), (10.0, 10.0)]));
        assert_eq!(place(&fig, &xl, &yl), (Legend::LowerRight, 0));
    }
}
