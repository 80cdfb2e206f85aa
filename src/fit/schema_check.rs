//! Reading a fit.json: its schema, then the physical check once it has parsed: every fitted
//! latency and inverse bandwidth non-negative and finite (the fit holds them at zero rather than
//! let them go negative), every world and node count within [`physical::WORLD`], the confidence
//! a probability. By the rule of [`crate::physical`], as the hardware and model readers use.

use std::path::Path;

use super::schema::{
    Extrapolation, FitFile, Line, NamedParam, Param, SourcePower, WorldModel, FIT_SCHEMA,
};
use crate::error::Error;
use crate::physical::{self, Range, WORLD};

impl FitFile {
    /// Reads a fit.json, refusing other schemas, malformed files and physically absurd values
    /// (negative latencies, NaN) with the file named.
    pub fn read(path: &Path) -> crate::error::Result<FitFile> {
        let bad = |msg: String| Error::Input {
            path: path.to_path_buf(),
            msg,
        };
        let text =
            crate::input::read_text_capped(path, crate::input::MAX_DOCUMENT_BYTES, "fit.json")?;
        if text.trim().is_empty() {
            return Err(bad(format!("empty file; expected a {FIT_SCHEMA} JSON")));
        }
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(FIT_SCHEMA) => {}
            Some(other) => return Err(bad(format!("schema '{other}', expected '{FIT_SCHEMA}'"))),
            None => return Err(bad(format!("no \"schema\" field; not a {FIT_SCHEMA} file"))),
        }
        let fit: FitFile =
            serde_json::from_value(value).map_err(|e| bad(format!("invalid {FIT_SCHEMA}: {e}")))?;
        check_fit(&fit).map_err(bad)?;
        Ok(fit)
    }
}

/// The first value of `fit` outside its physical range, as `where: why`.
pub fn check_fit(fit: &FitFile) -> Result<(), String> {
    physical::FRACTION.check("method.confidence", fit.method.confidence)?;
    for (i, s) in fit.sources.iter().enumerate() {
        if let Some(p) = &s.gpu_power {
            check_power(&format!("sources[{i}].gpu_power"), p)?;
        }
    }
    for (i, c) in fit.curves.iter().enumerate() {
        let at = format!("curves[{i}]");
        check_world(&at, c.key.world, c.key.nodes)?;
        check_line(&format!("{at}.line"), &c.line)?;
        for (j, l) in c.segments.iter().enumerate() {
            check_line(&format!("{at}.segments[{j}]"), l)?;
        }
    }
    for (i, m) in fit.models.iter().enumerate() {
        check_model(&format!("models[{i}]"), m)?;
    }
    for (i, s) in fit.slowdowns.iter().enumerate() {
        s.check(&format!("slowdowns[{i}]"))?;
    }
    Ok(())
}

fn check_power(at: &str, p: &SourcePower) -> Result<(), String> {
    physical::POWER_W.check(&format!("{at}.power_w_mean"), p.power_w_mean)?;
    physical::POWER_W.check(&format!("{at}.power_w_max"), p.power_w_max)?;
    Ok(())
}

fn check_world(at: &str, world: usize, nodes: usize) -> Result<(), String> {
    WORLD.check_usize(&format!("{at}.world"), world)?;
    WORLD.check_usize(&format!("{at}.nodes"), nodes)?;
    if nodes > world {
        return Err(format!("{at}: nodes {nodes} exceed world {world}"));
    }
    Ok(())
}

fn check_line(at: &str, l: &Line) -> Result<(), String> {
    if l.min_bytes > l.max_bytes {
        return Err(format!(
            "{at}: min_bytes {} exceeds max_bytes {}",
            l.min_bytes, l.max_bytes
        ));
    }
    check_param(
        &format!("{at}.alpha_us"),
        &l.alpha_us,
        physical::TIME_US_OR_ZERO,
    )?;
    check_param(
        &format!("{at}.beta_ns_per_byte"),
        &l.beta_ns_per_byte,
        physical::NS_PER_BYTE,
    )?;
    if let Some(bw) = l.bandwidth_gbps {
        Range::positive("GB/s", f64::MAX).check(&format!("{at}.bandwidth_gbps"), bw)?;
    }
    Ok(())
}

fn check_model(at: &str, m: &WorldModel) -> Result<(), String> {
    for (j, p) in m.params.iter().enumerate() {
        check_named(&format!("{at}.params[{j}]"), p)?;
    }
    for w in &m.worlds {
        WORLD.check_usize(&format!("{at}.worlds"), *w)?;
    }
    for n in &m.nodes {
        WORLD.check_usize(&format!("{at}.nodes"), *n)?;
    }
    let finite = m.covariance.iter().flatten().all(|x| x.is_finite());
    if !finite || !m.t_quantile.is_finite() || m.t_quantile < 0.0 {
        return Err(format!(
            "{at}: covariance and t_quantile must be finite numbers"
        ));
    }
    if let Some(e) = &m.extrapolation {
        check_extrapolation(&format!("{at}.extrapolation"), e)?;
    }
    Ok(())
}

/// The held-out world within [`WORLD`], its errors non-negative ratios.
fn check_extrapolation(at: &str, e: &Extrapolation) -> Result<(), String> {
    check_world(at, e.world, e.nodes)?;
    WORLD.check_usize(&format!("{at}.from_world"), e.from_world)?;
    let errors = [
        ("rel_err_mean", Some(e.rel_err_mean)),
        ("rel_err_max", Some(e.rel_err_max)),
        ("anchored_rel_err_mean", e.anchored_rel_err_mean),
        ("naive_rel_err_mean", e.naive_rel_err_mean),
    ];
    for (name, value) in errors {
        if let Some(v) = value {
            physical::RATIO.check(&format!("{at}.{name}"), v)?;
        }
    }
    Ok(())
}

/// A model parameter: its unit, hence its range, is in its name.
fn check_named(at: &str, p: &NamedParam) -> Result<(), String> {
    let range = if p.name.ends_with("_ns_per_byte") {
        physical::NS_PER_BYTE
    } else if p.name.ends_with("_us") {
        physical::TIME_US_OR_ZERO
    } else {
        return Err(format!(
            "{at}: parameter '{}' has no known unit (names end in _us or _ns_per_byte)",
            p.name
        ));
    };
    check_param(&format!("{at} ({})", p.name), &p.param, range)
}

/// The value and its standard error in `range`; the interval finite (it may reach below 0).
fn check_param(at: &str, p: &Param, range: Range) -> Result<(), String> {
    range.check(&format!("{at} value"), p.value)?;
    range.check(&format!("{at} stderr"), p.stderr)?;
    if !p.ci.iter().all(|x| x.is_finite()) {
        return Err(format!("{at}: ci {:?} must be finite", p.ci));
    }
    Ok(())
}
