//! The tables `collbench fit` prints: one row per curve (alpha, bandwidth, quality of the single
//! line, leave-one-size-out error, number of regimes and the largest error of the regime model),
//! then one row per cross-world model (largest error over held-out world sizes).

use crate::fit::schema::{CurveFit, FitFile, WorldModel};

/// Both tables, with a line per note at the end.
pub fn render(fit: &FitFile) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# {:<14} {:<18} {:<5} {:>5} {:>5} {:>6} {:>11} {:>10} {:>8} {:>8} {:>8} {:>4} {:>8}\n",
        "op",
        "algo",
        "type",
        "world",
        "nodes",
        "place",
        "alpha(us)",
        "bw(GB/s)",
        "R2",
        "maxerr",
        "loso",
        "regs",
        "regerr"
    ));
    for c in &fit.curves {
        out.push_str(&curve_row(c));
    }
    if !fit.models.is_empty() {
        out.push_str(&format!(
            "#\n# {:<14} {:<18} {:<5} {:<18} {:<44} {:>8} {:>8} {:>9} {:>8}\n",
            "op", "algo", "type", "model", "parameters", "R2", "maxerr", "holdout", "extrap"
        ));
        for m in &fit.models {
            out.push_str(&model_row(m));
        }
    }
    for m in fit.models.iter().filter(|m| m.selected) {
        if let Some(why) = &m.selection {
            let what = format!("{} {} {}", m.op.name(), m.algo_label(), m.dtype.name());
            out.push_str(&format!("# model*: {what}: {} ({why})\n", m.form));
        }
    }
    for n in &fit.notes {
        out.push_str(&format!("# note: {n}\n"));
    }
    out
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn curve_row(c: &CurveFit) -> String {
    let k = &c.key;
    let l = &c.line;
    format!(
        "  {:<14} {:<18} {:<5} {:>5} {:>5} {:>6} {:>11.3} {:>10} {:>8.4} {:>8} {:>8} {:>4} {:>8}\n",
        k.op.name(),
        k.algo_label(),
        k.dtype.name(),
        k.world,
        k.nodes,
        if k.in_place { "in" } else { "out" },
        l.alpha_us.value,
        l.bandwidth_gbps
            .map_or("inf".to_string(), |b| format!("{b:.3}")),
        l.quality.r2,
        pct(l.quality.rel_err_max),
        c.loso.map_or("-".to_string(), |h| pct(h.rel_err_max)),
        c.segments.len(),
        pct(c
            .segments
            .iter()
            .map(|s| s.quality.rel_err_max)
            .fold(0.0, f64::max))
    )
}

fn model_row(m: &WorldModel) -> String {
    let params: Vec<String> = m
        .params
        .iter()
        .map(|p| format!("{}={:.4}", short(&p.name), p.param.value))
        .collect();
    let holdout = m
        .holdout
        .iter()
        .map(|h| h.rel_err_max)
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
    let form = if m.selected {
        format!("{}*", m.form)
    } else {
        m.form.clone()
    };
    let extrap = m.extrapolation.as_ref().map(|e| e.rel_err_mean);
    format!(
        "  {:<14} {:<18} {:<5} {:<18} {:<44} {:>8.4} {:>8} {:>9} {:>8}\n",
        m.op.name(),
        m.algo_label(),
        m.dtype.name(),
        form,
        params.join(" "),
        m.quality.r2,
        pct(m.quality.rel_err_max),
        holdout.map_or("-".to_string(), pct),
        extrap.map_or("-".to_string(), pct)
    )
}

/// "alpha_us" → "alpha(us)", "beta_ns_per_byte" → "beta(ns/B)".
fn short(name: &str) -> String {
    name.replace("_ns_per_byte", "(ns/B)")
        .replace("_us", "(us)")
}
