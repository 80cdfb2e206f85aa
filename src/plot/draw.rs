//! Draws a [`Figure`] with plotters: to a PNG or SVG file, or to an SVG string for the HTML
//! report. Axes use the layouts of [`super::ticks`] (drawing coordinates are logarithms on log
//! axes), so one chart type serves every figure.

use std::path::Path;

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::DrawingErrorKind;

use super::figure::{color, Figure, Series, Style};
use super::font::{ensure_registered, FAMILY};
use super::placement::{box_px, legend_height, place, Spot};
use super::ticks::{from_draw, layout, to_draw, Layout};
use crate::error::{Error, Result};

/// Pixel size of every figure.
pub const SIZE: (u32, u32) = (960, 600);

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<AxisRange, AxisRange>>;

/// A linear range in drawing coordinates whose grid lines are the layout's ticks.
struct AxisRange {
    lo: f64,
    hi: f64,
    major: Vec<f64>,
    minor: Vec<f64>,
}

impl Ranged for AxisRange {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let frac = (v - self.lo) / (self.hi - self.lo);
        let px = limit.0 as f64 + frac * (limit.1 - limit.0) as f64;
        px.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.major.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Writes `fig` as a PNG file.
pub fn write_png(fig: &Figure, path: &Path) -> Result<()> {
    ensure_registered();
    crate::output::file::write_atomic_with(path, |tmp| {
        let root = BitMapBackend::new(tmp, SIZE).into_drawing_area();
        draw(&root, fig).map_err(|e| failed(path, &e))?;
        root.present()
            .map_err(|e| failed(path, &readable(&e.to_string())))
    })
}

/// One readable phrase from the bitmap encoder's error, which plotters renders as a nested
/// Debug string (`backend error: Drawing backend error: ImageError(IoError(Os { code: 28, ..`):
/// the operating system's message when it carries one.
fn readable(text: &str) -> String {
    let code = text
        .split_once("code: ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse::<i32>().ok());
    match code {
        Some(c) => std::io::Error::from_raw_os_error(c).to_string(),
        None => text
            .rsplit("error: ")
            .next()
            .unwrap_or(text)
            .replace(['\n', '\t'], " "),
    }
}

/// Writes `fig` as an SVG file.
pub fn write_svg(fig: &Figure, path: &Path) -> Result<()> {
    let text = svg_string(fig)?;
    crate::output::file::write_atomic(path, text.as_bytes())
}

/// `fig` as SVG text (for files and for inlining into HTML).
pub fn svg_string(fig: &Figure) -> Result<String> {
    ensure_registered();
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        draw(&root, fig).map_err(|e| Error::usage(format!("figure {}: {e}", fig.name)))?;
        root.present()
            .map_err(|e| Error::usage(format!("figure {}: {e}", fig.name)))?;
    }
    Ok(text)
}

fn failed(path: &Path, msg: &str) -> Error {
    Error::Input {
        path: path.to_path_buf(),
        msg: format!("cannot draw the figure: {msg}"),
    }
}

/// Draws the whole figure onto `root`.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (xl, yl, spot) = layouts(fig);
    let foot_px = if fig.note.is_some() { 26 } else { 4 };
    let (plot, foot) = root.split_vertically(SIZE.1 as i32 - foot_px);
    if let Some(note) = &fig.note {
        let style = TextStyle::from((FAMILY, 14).into_font()).color(&RGBColor(80, 80, 80));
        foot.draw(&Text::new(note.clone(), (20, 2), style))
            .map_err(e)?;
    }
    let mut chart = ChartBuilder::on(&plot)
        .caption(&fig.title, (FAMILY, 22).into_font())
        .margin(14)
        .x_label_area_size(52)
        .y_label_area_size(78)
        .build_cartesian_2d(axis_range(&xl), axis_range(&yl))
        .map_err(e)?;
    mesh(&mut chart, fig, &xl, &yl).map_err(e)?;
    for s in &fig.series {
        series(&mut chart, fig, s).map_err(e)?;
    }
    if !fig.legend_labels().is_empty() {
        legend(&mut chart, fig, spot).map_err(e)?;
    }
    Ok(())
}

/// The layouts of both axes over the drawable points (a unit range when there are none), and
/// the legend's spot. When no place along the edges is free, the y axis grows upwards until
/// the legend fits above the lines.
fn layouts(fig: &Figure) -> (Layout, Layout, Spot) {
    let mut xs = (f64::INFINITY, f64::NEG_INFINITY);
    let mut ys = xs;
    for (x, y) in fig.drawable_points() {
        xs = (xs.0.min(x), xs.1.max(x));
        ys = (ys.0.min(y), ys.1.max(y));
    }
    if !xs.0.is_finite() {
        (xs, ys) = ((1.0, 2.0), (1.0, 2.0));
    }
    let xl = layout(&fig.x, xs.0, xs.1, false);
    let yl = layout(&fig.y, ys.0, ys.1, fig.y_from_zero);
    let spot = place(fig, &xl, &yl);
    if spot.covered == 0 || fig.legend_labels().is_empty() {
        return (xl, yl, spot);
    }
    let top = to_draw(fig.y.scale, ys.1);
    let room = yl.lo + (top - yl.lo) / (1.0 - legend_height(fig));
    let yl = layout(&fig.y, ys.0, from_draw(fig.y.scale, room), fig.y_from_zero);
    let spot = place(fig, &xl, &yl);
    (xl, yl, spot)
}

fn axis_range(l: &Layout) -> AxisRange {
    AxisRange {
        lo: l.lo,
        hi: l.hi,
        major: l.major.iter().map(|(p, _)| *p).collect(),
        minor: l.minor.clone(),
    }
}

fn mesh<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    fig: &Figure,
    xl: &Layout,
    yl: &Layout,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let xf = |v: &f64| xl.label_at(*v);
    let yf = |v: &f64| yl.label_at(*v);
    chart
        .configure_mesh()
        .x_desc(fig.x.label.as_str())
        .y_desc(fig.y.label.as_str())
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style((FAMILY, 15).into_font())
        .axis_desc_style((FAMILY, 17).into_font())
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
}

fn rgb(i: usize) -> RGBColor {
    let (r, g, b) = color(i);
    RGBColor(r, g, b)
}

/// One series in drawing coordinates, points off the axes left out.
fn draw_points(fig: &Figure, s: &Series) -> Vec<(f64, f64)> {
    s.points
        .iter()
        .filter(|&&(x, y)| fig.x.accepts(x) && fig.y.accepts(y))
        .map(|&(x, y)| (to_draw(fig.x.scale, x), to_draw(fig.y.scale, y)))
        .collect()
}

fn series<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    fig: &Figure,
    s: &Series,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let pts = draw_points(fig, s);
    let c = rgb(s.color);
    let line = c.stroke_width(2);
    let anno = match s.style {
        Style::Measured => {
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            chart.draw_series(LineSeries::new(pts, line))?
        }
        Style::Model => chart.draw_series(DashedLineSeries::new(pts, 9, 6, line))?,
    };
    if !s.label.is_empty() {
        anno.label(s.label.as_str()).legend(legend_mark(c, s.style));
    }
    Ok(())
}

/// The legend's sample of a series: a line through a dot, or two dashes for a model. An
/// element of its own because plotters' composed elements tie legends to `'static` backends.
struct LegendMark {
    at: (i32, i32),
    color: RGBColor,
    style: Style,
}

fn legend_mark(color: RGBColor, style: Style) -> impl Fn((i32, i32)) -> LegendMark {
    move |at| LegendMark { at, color, style }
}

impl<'p> PointCollection<'p, (i32, i32)> for &'p LegendMark {
    type Point = &'p (i32, i32);
    type IntoIter = std::iter::Once<&'p (i32, i32)>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for LegendMark {
    fn draw<I: Iterator<Item = (i32, i32)>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let line = self.color.stroke_width(2);
        let gap = match self.style {
            Style::Measured => (11, 11),
            Style::Model => (8, 14),
        };
        backend.draw_line((x, y), (x + gap.0, y), &line)?;
        backend.draw_line((x + gap.1, y), (x + 22, y), &line)?;
        if self.style == Style::Measured {
            backend.draw_circle((x + 11, y), 4, &self.color.filled(), true)?;
        }
        Ok(())
    }
}

fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    fig: &Figure,
    spot: Spot,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    const MARGIN: i32 = 12;
    let (w, h) = chart.plotting_area().dim_in_pixel();
    let (box_w, box_h) = box_px(&fig.legend_labels());
    let pos = match (spot.left, spot.top >= 1.0) {
        (true, true) => SeriesLabelPosition::UpperLeft,
        (false, true) => SeriesLabelPosition::UpperRight,
        (left, false) => {
            let x = if left {
                MARGIN
            } else {
                w as i32 - box_w as i32 - MARGIN
            };
            let y = ((1.0 - spot.top) * h as f64) as i32 + MARGIN;
            SeriesLabelPosition::Coordinate(x, y.min(h as i32 - box_h as i32 - MARGIN).max(0))
        }
    };
    chart
        .configure_series_labels()
        .position(pos)
        .margin(MARGIN)
        .legend_area_size(30)
        .label_font((FAMILY, 15).into_font())
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()
}
