//! Reading values back out of a drawn SVG figure: its axes from the tick labels, its points
//! from the circles, so that a test can hold what is drawn to what summary.csv says.

/// The attribute `name` of an SVG element's text.
fn attr(element: &str, name: &str) -> Option<f64> {
    let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
    element[at..].split('"').next()?.parse().ok()
}

/// Every `<text ...>label</text>` as (x, y, label).
fn texts(svg: &str) -> Vec<(f64, f64, String)> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (head, rest) = t.split_once('>')?;
            let label = rest.split("</text>").next()?.trim().to_string();
            Some((attr(head, "x")?, attr(head, "y")?, label))
        })
        .collect()
}

/// Every circle's centre.
pub fn circles(svg: &str) -> Vec<(f64, f64)> {
    svg.split("<circle")
        .skip(1)
        .filter_map(|c| Some((attr(c, "cx")?, attr(c, "cy")?)))
        .collect()
}

/// "16 B", "1 KiB", "256 MiB" as bytes.
fn size_label(label: &str) -> Option<f64> {
    let (n, unit) = label.split_once(' ')?;
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n.parse::<f64>().ok()? * scale)
}

/// A linear map from value to pixel through two ticks (value, pixel).
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    v0: f64,
    p0: f64,
    per_unit: f64,
}

impl Axis {
    fn through(ticks: &[(f64, f64)]) -> Axis {
        assert!(ticks.len() >= 2, "an axis needs two ticks: {ticks:?}");
        let (a, b) = (ticks[0], ticks[ticks.len() - 1]);
        let axis = Axis {
            v0: a.0,
            p0: a.1,
            per_unit: (b.1 - a.1) / (b.0 - a.0),
        };
        // Every tick on the same line: the axis is linear in what it was built from.
        for &(v, p) in ticks {
            assert!(
                (axis.pixel(v) - p).abs() <= 1.0,
                "tick {v} at {p}: {ticks:?}"
            );
        }
        axis
    }

    pub fn pixel(&self, v: f64) -> f64 {
        self.p0 + (v - self.v0) * self.per_unit
    }
}

/// The x axis of a by-size figure (log2 of bytes, from the size labels under the plot) and its
/// y axis (linear, from the numeric labels left of it).
pub fn size_axes(svg: &str) -> (Axis, Axis) {
    let texts = texts(svg);
    let mut xs: Vec<(f64, f64)> = texts
        .iter()
        .filter_map(|(x, _, l)| Some((size_label(l)?.log2(), *x)))
        .collect();
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ys: Vec<(f64, f64)> = texts
        .iter()
        .filter(|(x, _, _)| *x < 100.0)
        .filter_map(|(_, y, l)| Some((l.parse::<f64>().ok()?, *y)))
        .collect();
    ys.sort_by(|a, b| a.0.total_cmp(&b.0));
    (Axis::through(&xs), Axis::through(&ys))
}
