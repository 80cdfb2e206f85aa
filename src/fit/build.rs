//! Turning curves of samples into a [`FitFile`]: per-curve lines and regimes, then
//! cross-world models per (backend, op, algo, dtype, placement, protocol).

use super::curves::{group_curves, Curve};
use super::envelope;
use super::power::source_power;
use super::regress::{self, FitError, LinearFit, Obs, RobustOptions};
use super::schema::*;
use super::segments::{self, SegmentOptions};
use crate::report::run_reader::Run;

/// The fitting options (defaults: Huber k 1.345, 95% intervals, up to 3 regimes of 3+ sizes).
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildOptions {
    pub robust: RobustOptions,
    pub segments: SegmentOptions,
}

/// Fits every curve and every cross-world model the runs support.
pub fn build(runs: &[Run], opts: &BuildOptions) -> FitFile {
    let grouped = group_curves(runs);
    let advice = envelope::noise_advice(!runs.is_empty() && runs.iter().all(is_imported));
    let mut notes = grouped.notes;
    let faster = envelope::lower_halves(&grouped.curves);
    let mut curves = Vec::new();
    for (key, curve) in &faster {
        match fit_curve(key, curve, opts) {
            Ok(c) => {
                let q = &c.line.quality;
                let what = describe(key);
                notes.extend(envelope::too_noisy_advised(&what, q.r2, &c.points, advice));
                curves.push(c)
            }
            Err(e) => notes.push(format!("{}: no line: {e}", describe(key))),
        }
    }
    let models = fit_models(&faster, (opts, advice), &mut notes);
    FitFile {
        schema: FIT_SCHEMA.into(),
        collbench_version: env!("CARGO_PKG_VERSION").into(),
        created: crate::meta::now_rfc3339(),
        method: method(opts),
        sources: runs.iter().map(source).collect(),
        curves,
        models,
        notes,
        slowdowns: super::slowdowns::collect(runs),
    }
}

/// Whether a run was imported from another tool's log (`collbench import`).
pub fn is_imported(run: &Run) -> bool {
    run.meta.options.get("imported") == Some(&serde_json::Value::Bool(true))
}

fn method(opts: &BuildOptions) -> Method {
    Method {
        objective: "least squares on relative residuals of each size's faster half of samples \
                    (noise on a shared machine only ever slows), each sample weighted 1/(m²·n) \
                    with m the median and n the count of its size's faster half: every size \
                    weighted equally whatever its iteration count"
            .into(),
        robust: format!(
            "Huber IRLS, k = {} on the MAD scale of the relative residuals",
            opts.robust.huber_k
        ),
        intervals: "cluster-robust covariance (CR1, one cluster per size or size × world), \
                    Student t with clusters − parameters degrees of freedom"
            .into(),
        confidence: opts.robust.confidence,
        segments: "contiguous size ranges chosen by BIC on per-size medians".into(),
        max_segments: opts.segments.max_segments,
        min_sizes_per_segment: opts.segments.min_sizes,
    }
}

fn source(run: &Run) -> Source {
    let m = &run.meta;
    Source {
        path: run.dir.display().to_string(),
        backend: m.backend.clone(),
        transport: m.transport.clone(),
        hostname: m.host.hostname.clone(),
        cpu_model: m.host.cpu_model.clone(),
        cores: m.host.cores,
        ranks: m.ranks,
        nodes: m.nodes,
        started: m.started.clone(),
        ended: m.ended.clone(),
        collbench_version: m.collbench_version.clone(),
        points: run.points.len(),
        gpu_power: source_power(&run.telemetry),
    }
}

/// "host allreduce ring f32 world 4" ("nccl allreduce ring/ll128 bf16 world 8 in place").
pub fn describe(k: &CurveKey) -> String {
    format!(
        "{} {} {} {} world {}{}{}",
        k.backend,
        k.op,
        k.algo_label(),
        k.dtype,
        k.world,
        if k.nodes > 1 {
            format!(" on {} nodes", k.nodes)
        } else {
            String::new()
        },
        if k.in_place { " in place" } else { "" }
    )
}

/// Alpha-beta observations of one curve: x = [1, S in kB], one group per size.
fn curve_obs(curve: &Curve) -> Vec<Obs> {
    let mut obs = Vec::new();
    for (g, (&bytes, samples)) in curve.iter().enumerate() {
        for &y in samples {
            obs.push(Obs {
                x: vec![1.0, bytes as f64 / 1e3],
                y,
                group: g,
            });
        }
    }
    obs
}

fn fit_curve(key: &CurveKey, curve: &Curve, opts: &BuildOptions) -> Result<CurveFit, FitError> {
    let obs = curve_obs(curve);
    let fit = regress::fit(&obs, &opts.robust)?;
    let line = line_of(&fit, &obs);
    let loso = regress::leave_one_group_out(&obs, &opts.robust)
        .ok()
        .map(|h| holdout_summary(h.iter().map(|h| h.rel_err)));
    let (segments, bic) = match segments::segment(&obs, &opts.robust, &opts.segments) {
        Ok(s) => (
            s.segments
                .iter()
                .map(|seg| line_of(&seg.fit, &obs_in(&obs, seg.min_bytes, seg.max_bytes)))
                .collect(),
            s.bic
                .iter()
                .map(|&(segments, bic)| SegmentsBic { segments, bic })
                .collect(),
        ),
        Err(_) => (vec![line.clone()], Vec::new()),
    };
    let points = envelope::point_errors(curve, line.alpha_us.value, line.beta_ns_per_byte.value);
    let too_noisy = envelope::too_noisy("", line.quality.r2, &points).is_some();
    Ok(CurveFit {
        key: key.clone(),
        sizes: curve.len(),
        line,
        loso,
        segments,
        bic,
        points,
        too_noisy,
    })
}

/// The observations whose size feature (`x[1]`, kB) lies in `lo..=hi`, the range
/// `segments::segment` reports in the units of the features it was given.
fn obs_in(obs: &[Obs], lo: f64, hi: f64) -> Vec<Obs> {
    obs.iter()
        .filter(|o| (lo..=hi).contains(&o.x[1]))
        .cloned()
        .collect()
}

fn line_of(fit: &LinearFit, obs: &[Obs]) -> Line {
    let bytes = |o: &Obs| (o.x[1] * 1e3).round() as u64;
    let beta = param(fit, 1);
    Line {
        min_bytes: obs.iter().map(bytes).min().unwrap_or(0),
        max_bytes: obs.iter().map(bytes).max().unwrap_or(0),
        alpha_us: param(fit, 0),
        bandwidth_gbps: (beta.value > 0.0).then(|| 1.0 / beta.value),
        beta_ns_per_byte: beta,
        quality: quality(fit),
    }
}

pub(super) fn param(fit: &LinearFit, i: usize) -> Param {
    Param {
        value: fit.params[i],
        stderr: fit.stderr[i],
        ci: [fit.ci[i].0, fit.ci[i].1],
    }
}

pub(super) fn quality(fit: &LinearFit) -> Quality {
    Quality {
        r2: fit.r2,
        rel_err_mean: fit.rel_err_mean,
        rel_err_max: fit.rel_err_max,
        samples: fit.n,
        downweighted: fit.downweighted,
        groups: fit.groups,
    }
}

pub(super) fn holdout_summary(errs: impl Iterator<Item = f64>) -> Holdout {
    let errs: Vec<f64> = errs.collect();
    let n = errs.len().max(1) as f64;
    Holdout {
        rel_err_mean: errs.iter().sum::<f64>() / n,
        rel_err_max: errs.iter().cloned().fold(0.0, f64::max),
    }
}

mod models;
use models::fit_models;

#[cfg(test)]
mod tests;
