//! The verdict as a table on stdout: one row per criterion and threshold, judged at its worst
//! point (every point is in verdict.json), then the other failing points, then one line with
//! the overall result.

use super::verdict::{CheckVerdict, CriterionVerdict, Outcome, PointVerdict, Verdict};

/// Failing points listed per row beyond the worst one.
const MORE_FAILING: usize = 6;

/// The whole table.
pub fn render(v: &Verdict) -> String {
    let mut rows: Vec<Vec<String>> = vec![[
        "criterion",
        "check",
        "worst point",
        "measured",
        "threshold",
        "margin",
        "result",
        "points ok",
        "note",
    ]
    .map(String::from)
    .to_vec()];
    let mut more: Vec<String> = Vec::new();
    for cv in &v.criteria {
        criterion_rows(cv, &mut rows, &mut more);
    }
    let mut out = layout(&rows);
    if !more.is_empty() {
        out.push('\n');
        for line in more {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push('\n');
    out.push_str(&summary_line(v));
    out.push('\n');
    out
}

/// The last line: the result and the counts behind it.
pub fn summary_line(v: &Verdict) -> String {
    let c = &v.counts;
    let what = match v.result {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
        Outcome::NoData => "COULD NOT JUDGE",
    };
    format!(
        "verdict: {what}: {} criteria ({} failed, {} without data), {} checks ({} failed, {} \
         without data) over {} repeat(s)",
        c.criteria,
        c.criteria_failed,
        c.criteria_no_data,
        c.checks,
        c.checks_failed,
        c.checks_no_data,
        v.repeats
    )
}

fn criterion_rows(cv: &CriterionVerdict, rows: &mut Vec<Vec<String>>, more: &mut Vec<String>) {
    if cv.points.is_empty() {
        let note = cv.note.clone().unwrap_or_default();
        let dash = || "-".to_string();
        rows.push(vec![
            cv.name.clone(),
            dash(),
            "(no point matched)".into(),
            dash(),
            dash(),
            dash(),
            cv.result.label().into(),
            "0/0".into(),
            note,
        ]);
        return;
    }
    let keys: Vec<&str> = cv.points[0]
        .checks
        .iter()
        .map(|c| c.check.as_str())
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let judged: Vec<(&PointVerdict, &CheckVerdict)> =
            cv.points.iter().map(|p| (p, &p.checks[i])).collect();
        let Some(&(wp, wc)) = judged.iter().max_by(|a, b| worse(a.1, b.1)) else {
            continue;
        };
        let ok = judged
            .iter()
            .filter(|(_, c)| c.result == Outcome::Pass)
            .count();
        rows.push(vec![
            cv.name.clone(),
            key.to_string(),
            format!("{}{}", wp.label, repeats_note(wp)),
            wc.measured.map_or("-".into(), |m| value(m, &wc.unit)),
            threshold(wc),
            wc.margin_pct.map_or("-".into(), |m| format!("{m:+.1}%")),
            wc.result.label().into(),
            format!("{ok}/{}", judged.len()),
            row_note(wp, wc),
        ]);
        let others: Vec<String> = judged
            .iter()
            .filter(|(p, c)| c.result != Outcome::Pass && p.label != wp.label)
            .map(|(p, c)| match c.measured {
                Some(m) => format!("{} ({})", p.label, value(m, &c.unit)),
                None => format!("{} (no data)", p.label),
            })
            .collect();
        if !others.is_empty() {
            let shown = others.len().min(MORE_FAILING);
            let rest = others.len() - shown;
            let tail = if rest > 0 {
                format!(", and {rest} more (verdict.json)")
            } else {
                String::new()
            };
            more.push(format!(
                "{} {key} also not met at: {}{tail}",
                cv.name,
                others[..shown].join(", ")
            ));
        }
    }
}

/// Orders points from best to worst for one check: no data worst, then failures, then by the
/// measured value in the unfavourable direction.
fn badness(c: &CheckVerdict) -> (u8, f64) {
    let rank = match c.result {
        Outcome::NoData => 2,
        Outcome::Fail => 1,
        Outcome::Pass => 0,
    };
    let m = c.measured.unwrap_or(0.0);
    (rank, if c.check == "min_busbw_gbps" { -m } else { m })
}

fn worse(a: &CheckVerdict, b: &CheckVerdict) -> std::cmp::Ordering {
    let (x, y) = (badness(a), badness(b));
    x.0.cmp(&y.0).then(x.1.total_cmp(&y.1))
}

fn repeats_note(p: &PointVerdict) -> String {
    let full = p.checks.first().map_or(0, |c| c.values.len());
    if p.repeats > 1 && full < p.repeats {
        format!(" ({full}/{} repeats)", p.repeats)
    } else {
        String::new()
    }
}

fn row_note(p: &PointVerdict, c: &CheckVerdict) -> String {
    let mut parts: Vec<String> = Vec::new();
    if c.result != Outcome::Pass {
        parts.extend(c.reason.map(|r| r.to_string()));
        parts.extend(p.blame());
    }
    if let Some(t) = c.predicted_us {
        parts.push(format!("reference {}", value(t, "us")));
    }
    parts.extend(c.note.clone());
    parts.join("; ")
}

/// `>= 10 GB/s`, `<= 5%`, `<= 0 elements`.
fn threshold(c: &CheckVerdict) -> String {
    let op = if c.check == "min_busbw_gbps" {
        ">="
    } else {
        "<="
    };
    format!("{op} {}", exact(c.threshold, &c.unit))
}

/// A threshold as the user wrote it (no padding zeros); fractions as percentages.
pub fn exact(x: f64, unit: &str) -> String {
    let trim = |t: String| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    };
    match unit {
        "fraction" => format!("{}%", trim(format!("{:.6}", x * 100.0))),
        "elements" => format!("{x:.0}"),
        u => format!("{} {u}", trim(sig(x))),
    }
}

/// A value with its unit; fractions as percentages.
pub fn value(x: f64, unit: &str) -> String {
    match unit {
        "fraction" => format!("{}%", sig(x * 100.0)),
        "elements" => format!("{x:.0}"),
        u => format!("{} {u}", sig(x)),
    }
}

/// Four significant digits, no exponent.
pub fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    let decimals = (3 - mag).clamp(0, 6) as usize;
    format!("{x:.decimals$}")
}

/// Pads every column but the last to its widest cell.
pub fn layout(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(sig(1234.5678), "1235");
        assert_eq!(sig(12.345678), "12.35");
        assert_eq!(sig(0.00123456), "0.001235");
        assert_eq!(sig(0.0), "0");
        assert_eq!(value(0.05, "fraction"), "5.000%");
        assert_eq!(value(3.0, "elements"), "3");
        assert_eq!(value(2.5, "GB/s"), "2.500 GB/s");
        assert_eq!(exact(0.05, "fraction"), "5%");
        assert_eq!(exact(0.125, "fraction"), "12.5%");
        assert_eq!(exact(0.01, "GB/s"), "0.01 GB/s");
        assert_eq!(exact(1500.0, "us"), "1500 us");
    }

    #[test]
    fn columns_line_up() {
        let rows = vec![
            vec!["a".to_string(), "bb".into(), "x".into()],
            vec!["ccc".to_string(), "d".into(), "yy".into()],
        ];
        assert_eq!(layout(&rows), "a    bb  x\nccc  d   yy\n");
    }
}
