//! `collbench fit --export FORMAT`: the fitted network parameters in the input form of tools
//! people feed such numbers to (docs/EXPORTS.md says, per format, which field gets what and
//! cites the tool's source for it).
//!
//! | format | tool | what we write |
//! | --- | --- | --- |
//! | `astra-sim` | ASTRA-sim 2.0, analytical network backend | network YAML: Ring per dimension |
//! | `calculon` | Calculon (calculon-ai/calculon) | the `networks` list of a system JSON |
//! | `nccl-tuner` | NCCL's example tuner plugin (ext-tuner/example) | CSV: fastest algorithm per size range |
//! | `inductor` | PyTorch Inductor's collective cost model | Python: `intra_node_bw`, `inter_node_bw` |
//! | `simai` | SimAI-Analytical's automatic busbw | its flags: `-nv`, `-nic`, `-n_p_s`, `-g`, `-g_p_s` |
//!
//! Everything here is pure: a [`FitFile`] in, the file's text out. Numbers the fit does not
//! have (how many NPUs, how many nodes) come from [`ExportOptions`], by default the largest
//! world the model was fitted on.

pub mod astra_sim;
pub mod calculon;
pub mod inductor;
pub mod nccl_tuner;
pub mod simai;

use std::path::PathBuf;

use super::forms::Form;
use super::schema::{FitFile, WorldModel};
use crate::collective::Op;
use crate::error::{Error, Result};
use crate::named::named_enum;

named_enum!(
    /// A format `--export` writes.
    ExportFormat, "export format", {
        AstraSim => "astra-sim",
        Calculon => "calculon",
        NcclTuner => "nccl-tuner",
        Inductor => "inductor",
        SimAi => "simai",
    }
);

/// What the fit cannot say and the export needs; None takes the default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportOptions {
    /// The op whose model gives the link numbers (astra-sim, calculon) [default: the first of
    /// allgather, reducescatter, allreduce that has a ring or two-level model].
    pub op: Option<Op>,
    /// Ranks (NPUs) in all [default: the largest world fitted].
    pub npus: Option<usize>,
    /// Nodes the ranks span [default: 1 for a single-level model; as fitted for two-level].
    pub nodes: Option<usize>,
}

/// An `--export` request as the command carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRequest {
    pub format: ExportFormat,
    pub opts: ExportOptions,
    /// Where the text goes (None: stdout).
    pub out: Option<PathBuf>,
}

/// The text of `fit` in `format`. Fails (a usage error, exit 2, one line) when the fit lacks the
/// model the format needs, naming it, or when the options do not fit the model.
pub fn export(fit: &FitFile, format: ExportFormat, opts: &ExportOptions) -> Result<String> {
    match format {
        ExportFormat::AstraSim => astra_sim::render(fit, opts),
        ExportFormat::Calculon => calculon::render(fit, opts),
        ExportFormat::NcclTuner => nccl_tuner::render(fit, opts),
        ExportFormat::Inductor => inductor::render(fit, opts),
        ExportFormat::SimAi => simai::render(fit, opts),
    }
}

/// Ring-shaped ops, in the order a reference op is picked: AllGather only moves data, while
/// ReduceScatter and AllReduce fold the cost of reducing into beta.
pub(crate) const RING_OPS: [Op; 3] = [Op::AllGather, Op::ReduceScatter, Op::AllReduce];

/// One level of the network: a ring of `npus` ranks with a per-step latency and a per-byte cost.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Level {
    /// "ranks", "within a node" or "between nodes".
    pub what: &'static str,
    pub npus: usize,
    pub alpha_us: f64,
    pub beta_ns_per_byte: f64,
    /// The parameter names these came from (to read the same level of another op's model).
    pub alpha_name: &'static str,
    pub beta_name: &'static str,
}

/// The network a model describes at a chosen size.
#[derive(Clone, Debug)]
pub(crate) struct Network<'a> {
    pub op: Op,
    pub model: &'a WorldModel,
    pub form: Form,
    pub npus: usize,
    pub nodes: usize,
    /// Where npus/nodes came from, for a comment.
    pub size_from: String,
    /// The levels with more than one rank: one (ring, or two-level on one node / one rank per
    /// node) or two (within a node, then between nodes).
    pub levels: Vec<Level>,
}

/// [`network`] of the AllReduce model where `--export-op` names none and the fit has one, else
/// of the op the default order picks: the tools whose ring relation is AllReduce's.
pub(crate) fn allreduce_first<'a>(
    fit: &'a FitFile,
    opts: &ExportOptions,
    format: ExportFormat,
) -> Result<Network<'a>> {
    let allreduce = ExportOptions {
        op: opts.op.or(Some(Op::AllReduce)),
        ..opts.clone()
    };
    network(fit, &allreduce, format).or_else(|_| network(fit, opts, format))
}

/// The ring or two-level network of the reference op (two-level first: it describes more).
pub(crate) fn network<'a>(
    fit: &'a FitFile,
    opts: &ExportOptions,
    format: ExportFormat,
) -> Result<Network<'a>> {
    let ops: Vec<Op> = match opts.op {
        Some(op) => vec![op],
        None => RING_OPS.to_vec(),
    };
    let found = ops.iter().find_map(|&op| {
        [Form::TwoLevel, Form::Ring]
            .into_iter()
            .find_map(|form| find_model(fit, op, form).map(|m| (op, form, m)))
    });
    let Some((op, form, model)) = found else {
        let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
        return Err(missing(
            format,
            &format!("ring or two-level model of {}", names.join(" or ")),
            fit,
        ));
    };
    let (npus, nodes, size_from) = target(model, form, opts)?;
    let mut levels = Vec::new();
    if form == Form::TwoLevel {
        levels.push(level(model, "within a node", npus / nodes, "intra")?);
        levels.push(level(model, "between nodes", nodes, "inter")?);
    } else {
        levels.push(Level {
            what: "ranks",
            npus,
            alpha_us: param(model, "alpha_us")?,
            beta_ns_per_byte: param(model, "beta_ns_per_byte")?,
            alpha_name: "alpha_us",
            beta_name: "beta_ns_per_byte",
        });
    }
    levels.retain(|l| l.npus > 1);
    Ok(Network {
        op,
        model,
        form,
        npus,
        nodes,
        size_from,
        levels,
    })
}

fn level(m: &WorldModel, what: &'static str, npus: usize, which: &str) -> Result<Level> {
    let (alpha_name, beta_name) = if which == "intra" {
        ("alpha_intra_us", "beta_intra_ns_per_byte")
    } else {
        ("alpha_inter_us", "beta_inter_ns_per_byte")
    };
    Ok(Level {
        what,
        npus,
        alpha_us: param(m, alpha_name)?,
        beta_ns_per_byte: param(m, beta_name)?,
        alpha_name,
        beta_name,
    })
}

/// Total ranks and nodes to write for `m`, and where they came from. Two-level defaults keep
/// the ranks per node of the largest fitted world (scaling out adds nodes).
fn target(m: &WorldModel, form: Form, opts: &ExportOptions) -> Result<(usize, usize, String)> {
    let (w0, n0) = m
        .worlds
        .iter()
        .zip(m.nodes.iter().chain(std::iter::repeat(&1)))
        .map(|(&w, &n)| (w, n.max(1)))
        .max()
        .ok_or_else(|| Error::usage(format!("model {} {}: no fitted worlds", m.op, m.form)))?;
    let two = form == Form::TwoLevel;
    let r0 = (w0 / n0).max(1);
    let fitted = if two {
        format!("the largest world fitted, {w0} ranks on {n0} nodes")
    } else {
        format!("the largest world fitted, {w0} ranks")
    };
    let (npus, nodes, from) = match (opts.npus, opts.nodes) {
        (Some(p), Some(n)) => (p, n, "--npus and --nodes".to_string()),
        (Some(p), None) if two => {
            if p % r0 != 0 {
                return Err(Error::usage(format!(
                    "--npus {p} is not a multiple of the {r0} ranks per node fitted; give \
                     --nodes too"
                )));
            }
            (p, p / r0, format!("--npus, {r0} ranks per node as fitted"))
        }
        (Some(p), None) => (p, 1, "--npus".to_string()),
        (None, Some(n)) if two => (n * r0, n, format!("--nodes, {r0} ranks per node as fitted")),
        (None, Some(n)) => (w0, n, format!("--nodes; ranks: {fitted}")),
        (None, None) => (w0, if two { n0 } else { 1 }, fitted),
    };
    if npus == 0 || nodes == 0 {
        return Err(Error::usage("--npus and --nodes must be at least 1"));
    }
    if npus % nodes != 0 {
        return Err(Error::usage(format!(
            "--npus {npus} is not a multiple of --nodes {nodes}"
        )));
    }
    Ok((npus, nodes, from))
}

/// The model of `op` in `form`: the library's default communicator setup before a registered
/// or CTA-bound one, out of place before in place, NCCL's own protocol choice (or none) before a
/// forced one, else in file order.
pub(crate) fn find_model(fit: &FitFile, op: Op, form: Form) -> Option<&WorldModel> {
    fit.models
        .iter()
        .filter(|m| m.op == op && m.form == form.name())
        .min_by_key(|m| {
            let proto = super::schema::proto_rank(m.proto);
            (!m.comm.is_default(), m.in_place, proto)
        })
}

/// A named parameter's value.
pub(crate) fn param(m: &WorldModel, name: &str) -> Result<f64> {
    m.params
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.param.value)
        .ok_or_else(|| {
            Error::usage(format!(
                "model {} {} ({}) has no parameter {name}",
                m.op, m.algo, m.form
            ))
        })
}

/// The error for a fit that lacks what a format needs: names the format, the missing model and
/// the models the fit has.
pub(crate) fn missing(format: ExportFormat, what: &str, fit: &FitFile) -> Error {
    let mut have: Vec<String> = fit
        .models
        .iter()
        .map(|m| format!("{} {} ({})", m.op, m.algo, m.form))
        .collect();
    have.dedup();
    let have = if have.is_empty() {
        "no models (see its notes)".to_string()
    } else {
        have.join(", ")
    };
    Error::usage(format!(
        "--export {format}: the fit has no {what}; it has {have}"
    ))
}

/// "ring model of allgather f32 (host), fitted on 2, 4, 8 ranks" (two-level: "... fitted on
/// ranks/nodes 8/1, 16/2, 32/4").
pub(crate) fn describe(m: &WorldModel) -> String {
    let nodes = |i: usize| m.nodes.get(i).copied().unwrap_or(1);
    let multi = (0..m.worlds.len()).any(|i| nodes(i) > 1);
    let worlds: Vec<String> = m
        .worlds
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if multi {
                format!("{w}/{}", nodes(i))
            } else {
                w.to_string()
            }
        })
        .collect();
    format!(
        "{} model of {} {}{} ({}), fitted on {}{}",
        m.form,
        m.op,
        m.dtype,
        if m.in_place { " in place" } else { "" },
        m.backend,
        if multi { "ranks/nodes " } else { "" },
        worlds.join(", ") + if multi { "" } else { " ranks" }
    )
}

/// Where the numbers come from, for the first comment of a file.
pub(crate) fn provenance(fit: &FitFile) -> String {
    format!(
        "written by collbench {} (`collbench fit --export`) from a fit made {} by collbench {}",
        env!("CARGO_PKG_VERSION"),
        fit.created,
        fit.collbench_version
    )
}

/// A number with 6 significant digits, without trailing zeros ("5000", "9.31323", "0.1").
pub(crate) fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_finite() {
            "0".into()
        } else {
            x.to_string()
        };
    }
    let decimals = (5 - x.abs().log10().floor() as i32).clamp(0, 17) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// [`num`] as a float (what JSON gets).
pub(crate) fn round6(x: f64) -> f64 {
    num(x).parse().unwrap_or(x)
}

#[cfg(test)]
pub(crate) mod testfit;

#[cfg(test)]
mod tests;
