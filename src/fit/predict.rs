//! `collbench fit --predict op=allgather,algo=ring,world=64,bytes=1G`: the time of one call
//! from a fit.json's cross-world models, with a confidence interval. `proto=ll128` asks for
//! one NCCL protocol's model; without it, NCCL's own choice (or no protocol) is preferred and
//! the answer names the protocol used.

use serde::Serialize;

use super::schema::{algo_label, proto_rank, FitFile, WorldModel};
use crate::collective::{Algo, DType, Op, Proto};
use crate::error::{Error, Result};
use crate::model::comm_setup::CommSetup;
use crate::units::parse_size;

mod anchor;
mod beyond;
mod evaluate;
use evaluate::evaluate;

/// What to predict.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub op: Op,
    pub algo: Algo,
    /// Only this protocol's models; None: any, NCCL's own choice first.
    pub proto: Option<Proto>,
    pub dtype: Option<DType>,
    pub world: usize,
    pub nodes: usize,
    pub bytes: usize,
    /// Only models of this NCCL communicator setup (the default: nothing set, as every other
    /// backend's).
    pub comm: CommSetup,
    /// Whether `algo` was asked for; when not, and the fit has no ring model of the op, the
    /// algorithm is taken from what the fit has ([`default_algo`]) and said.
    pub algo_given: bool,
}

/// The answer (also the `--json` object).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub op: Op,
    pub algo: Algo,
    /// The protocol of the model used; absent for backends without protocols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    pub dtype: DType,
    pub world: usize,
    pub nodes: usize,
    pub bytes: usize,
    pub time_us: f64,
    /// Confidence interval of the predicted mean time, [low, high] µs.
    pub interval_us: [f64; 2],
    pub confidence: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// The model used.
    pub form: String,
    pub formula: String,
    /// World sizes the model was fitted on.
    pub fitted_worlds: Vec<usize>,
    /// True when `world` lies outside the fitted world sizes.
    pub extrapolated: bool,
    /// The model's mean error predicting its largest world from the smaller ones (absent when
    /// never validated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_rel_err: Option<f64>,
    /// world / the largest fitted world.
    pub beyond_factor: f64,
    /// Relative half-width added to the interval for the distance beyond the fitted worlds.
    pub widened_rel: f64,
    /// Set beyond 4x the largest fitted world.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Beyond the largest fitted world: the measurement the model's ratio was applied to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<anchor::Anchor>,
    /// The model's own time, before anchoring (equal to `time_us` when not anchored).
    pub model_time_us: f64,
    /// How `time_us` was made: `model`, or beyond the fitted worlds `anchored` (the model's
    /// ratio on the largest world's measured curve) or `same-busbw` (that curve at its bus
    /// bandwidth), whichever predicted the model's largest world held out best.
    pub method: String,
    /// Where `algo=` was not given and the fit lacks the default: which algorithm was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algo_default: Option<String>,
    /// With `algo=auto`: the algorithm whose model was fastest (as NCCL's tuner chooses), and
    /// the others' times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_choice: Option<String>,
}

/// Parses `key=value,...` with keys op, algo (default ring), proto, dtype, world, nodes (default
/// 1), bytes (K/M/G suffixes), and for NCCL models fitted with `--register`, `--cta-policy` or
/// `--ctas` the keys register, cta_policy, ctas (default: none set).
pub fn parse_query(spec: &str) -> Result<Query> {
    let mut q = Query {
        op: Op::AllReduce,
        algo: Algo::Ring,
        proto: None,
        dtype: None,
        world: 0,
        nodes: 1,
        bytes: 0,
        comm: CommSetup::default(),
        algo_given: false,
    };
    let (mut have_op, mut have_bytes) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(bad_spec(format!("'{part}' is not key=value")));
        };
        let k = k.trim();
        if seen.contains(&k) {
            return Err(bad_spec(format!(
                "key '{k}' is given twice; give each key once"
            )));
        }
        seen.push(k);
        match k {
            "op" => (q.op, have_op) = (v.parse()?, true),
            "algo" => (q.algo, q.algo_given) = (v.parse()?, true),
            "proto" => q.proto = Some(v.parse()?),
            "dtype" => q.dtype = Some(v.parse()?),
            "world" => q.world = positive("world", v)?,
            "nodes" => q.nodes = positive("nodes", v)?,
            "bytes" => (q.bytes, have_bytes) = (parse_size(v)?, true),
            "register" => {
                let r: crate::model::call::Register = v.parse()?;
                q.comm.register = (r != crate::model::call::Register::None).then_some(r);
            }
            "cta_policy" => q.comm.cta_policy = Some(v.parse()?),
            "ctas" => q.comm.ctas = Some(v.parse()?),
            other => {
                return Err(bad_spec(format!(
                    "unknown key '{other}' (known: op, algo, proto, dtype, world, nodes, bytes, \
                     register, cta_policy, ctas)"
                )))
            }
        }
    }
    if !have_op || q.world == 0 || !have_bytes {
        return Err(bad_spec("op, world and bytes are required".into()));
    }
    if q.world % q.nodes != 0 {
        return Err(bad_spec(format!(
            "world {} is not a multiple of nodes {}",
            q.world, q.nodes
        )));
    }
    Ok(q)
}

fn bad_spec(msg: String) -> Error {
    Error::usage(format!(
        "--predict: {msg}; e.g. --predict op=allgather,algo=ring,world=64,bytes=1G"
    ))
}

/// A world or node count: a positive integer within [`crate::physical::WORLD`].
fn positive(key: &str, v: &str) -> Result<usize> {
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => crate::physical::WORLD.check_usize(key, n).map_err(bad_spec),
        _ => Err(bad_spec(format!("{key} '{v}' is not a positive integer"))),
    }
}

/// Predicts `q` from the fit's models; refuses (exit 2) when no model covers the op and
/// algorithm, saying which models the file has.
pub fn predict(fit: &FitFile, q: &Query) -> Result<Prediction> {
    let (q, note) = match (q.algo_given, default_algo(fit, q)) {
        (false, Some((algo, note))) => (Query { algo, ..q.clone() }, Some(note)),
        _ => (q.clone(), None),
    };
    let mut p = match q.algo {
        Algo::Auto => match predict_auto(fit, &q) {
            Some(p) => p,
            None => predict_algo(fit, &q)?,
        },
        _ => predict_algo(fit, &q)?,
    };
    p.algo_default = note;
    Ok(p)
}

/// Without `algo=`, where the fit has no model of the query's (default) algorithm for the op:
/// the op's first host algorithm (the sweep's default: direct for SendRecv, binomial for
/// Gather, ...), else `auto` (the library's own choice, as NCCL and MPI runs are measured),
/// else the first the fit has; with a note saying which and why. `None` where the default is
/// fine or the fit has nothing for the op.
pub fn default_algo(fit: &FitFile, q: &Query) -> Option<(Algo, String)> {
    let has = |algo: Algo| choose(fit, &Query { algo, ..q.clone() }).is_some();
    if has(q.algo) {
        return None;
    }
    let host = q.op.host_algos().first().copied();
    let mut candidates: Vec<Algo> = host.into_iter().chain([Algo::Auto]).collect();
    let mut others: Vec<Algo> = fit
        .models
        .iter()
        .filter(|m| m.op == q.op)
        .map(|m| m.algo)
        .collect();
    others.sort();
    candidates.append(&mut others);
    let algo = candidates.into_iter().find(|&a| has(a))?;
    Some((
        algo,
        format!(
            "algo not given and the fit has no {} model of {}: used {algo}",
            q.algo, q.op
        ),
    ))
}

/// `algo=auto` as NCCL's tuner decides: the fastest of the models the fit holds for the op's
/// forced algorithms at this size and world; None when it holds none (then the models of
/// runs left to the library's own choice answer).
fn predict_auto(fit: &FitFile, q: &Query) -> Option<Prediction> {
    let mut algos: Vec<Algo> = fit
        .models
        .iter()
        .filter(|m| m.op == q.op && m.algo != Algo::Auto)
        .map(|m| m.algo)
        .collect();
    algos.sort();
    algos.dedup();
    let mut answers: Vec<Prediction> = algos
        .into_iter()
        .filter_map(|algo| predict_algo(fit, &Query { algo, ..q.clone() }).ok())
        .collect();
    answers.sort_by(|a, b| a.time_us.total_cmp(&b.time_us));
    let others: Vec<String> = answers
        .iter()
        .skip(1)
        .map(|p| format!("{} {:.3} us", algo_label(p.algo, p.proto), p.time_us))
        .collect();
    let mut best = answers.into_iter().next()?;
    best.auto_choice = Some(format!(
        "{} is the fastest model{}",
        algo_label(best.algo, best.proto),
        if others.is_empty() {
            " (the only one)".to_string()
        } else {
            format!(" (then {})", others.join(", "))
        }
    ));
    Some(best)
}

fn predict_algo(fit: &FitFile, q: &Query) -> Result<Prediction> {
    let model = choose(fit, q).ok_or_else(|| {
        let mut have: Vec<String> = fit
            .models
            .iter()
            .map(|m| {
                format!(
                    "{} {} {}{} ({}{})",
                    m.op,
                    m.algo_label(),
                    m.dtype,
                    if m.in_place { " in place" } else { "" },
                    m.form,
                    if m.spans_nodes() {
                        ", across nodes"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        have.dedup();
        Error::usage(format!(
            "the fit has no model for {} {}{}{}; it has: {}",
            q.op,
            algo_label(q.algo, q.proto),
            q.dtype.map_or(String::new(), |d| format!(" {d}")),
            if q.nodes > 1 { " across nodes" } else { "" },
            if have.is_empty() {
                "none (see its notes)".to_string()
            } else {
                have.join(", ")
            }
        ))
    })?;
    evaluate(fit, model, q)
}

/// The model for a query: one fitted across nodes when it spans nodes, else one fitted within
/// a node (falling back to one fitted across nodes, evaluated with one node); the form `fit`
/// selected first; out of place before in place; NCCL's own protocol choice before a forced one.
fn choose<'a>(fit: &'a FitFile, q: &Query) -> Option<&'a WorldModel> {
    let mut found: Vec<&WorldModel> = fit
        .models
        .iter()
        .filter(|m| m.op == q.op && m.algo == q.algo && m.comm == q.comm)
        .filter(|m| q.proto.map_or(true, |p| m.proto == Some(p)))
        .filter(|m| q.dtype.map_or(true, |d| d == m.dtype))
        .filter(|m| q.nodes == 1 || m.spans_nodes())
        .collect();
    found.sort_by_key(|m| {
        (
            m.spans_nodes(),
            !m.selected,
            m.in_place,
            proto_rank(m.proto),
        )
    });
    found.into_iter().next()
}

/// One readable line.
pub fn describe(p: &Prediction) -> String {
    format!(
        "{} {} {} world {}{} {}: {:.3} us [{:.3} .. {:.3}] ({:.0}% interval{}), busbw {:.3} \
         GB/s ({} model fitted on worlds {:?}{}{}{}{}{})",
        p.op,
        algo_label(p.algo, p.proto),
        p.dtype,
        p.world,
        if p.nodes > 1 {
            format!(" on {} nodes", p.nodes)
        } else {
            String::new()
        },
        crate::units::format_size(p.bytes),
        p.time_us,
        p.interval_us[0],
        p.interval_us[1],
        p.confidence * 100.0,
        if p.widened_rel > 0.0 {
            format!(" widened {:.0}% for the distance", 100.0 * p.widened_rel)
        } else {
            String::new()
        },
        p.busbw_gbps,
        p.form,
        p.fitted_worlds,
        p.held_out_rel_err
            .map(|e| format!("; largest world held out: {:.1}% error", 100.0 * e))
            .unwrap_or_default(),
        if p.extrapolated { "; extrapolated" } else { "" },
        p.anchor
            .as_ref()
            .map(|a| format!(
                "; {} on world {}'s {} {:.3} us",
                p.method,
                a.world,
                if a.size_measured {
                    "measured"
                } else {
                    "regime line at"
                },
                a.measured_us
            ))
            .unwrap_or_default(),
        p.auto_choice
            .as_ref()
            .map(|c| format!("; auto: {c}"))
            .unwrap_or_default(),
        p.algo_default
            .as_ref()
            .map(|c| format!("; {c}"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
#[path = "predict_tests.rs"]
mod tests;
