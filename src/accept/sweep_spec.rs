//! The `[sweep]` table of a criteria file: the options of `collbench sweep`, by the same names
//! (`world_sizes` for `--world-sizes`, `min_bytes`/`max_bytes`/`factor` for `-b`/`-e`/`-f`).
//! It is turned into a sweep command line and parsed by the sweep's own parser, so every value
//! means, defaults and is checked exactly as on the command line.

use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::sweep::args::parse_sweep_line;
use crate::sweep::request::SweepRequest;

/// `[sweep]`; absent keys take the sweep's defaults.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    backend: Option<toml::Value>,
    op: Option<toml::Value>,
    algo: Option<toml::Value>,
    dtype: Option<toml::Value>,
    redop: Option<toml::Value>,
    ranks: Option<toml::Value>,
    world_sizes: Option<toml::Value>,
    min_bytes: Option<toml::Value>,
    max_bytes: Option<toml::Value>,
    factor: Option<toml::Value>,
    iters: Option<toml::Value>,
    warmup: Option<toml::Value>,
    in_place: Option<toml::Value>,
    transport: Option<toml::Value>,
    bind: Option<toml::Value>,
    timeout: Option<toml::Value>,
    /// `--metrics FILE`: every point as Prometheus gauges (each repeat replaces the file).
    metrics: Option<toml::Value>,
    /// `--pairs`: measure every pair of nodes alone (multi-host launches).
    pairs: Option<bool>,
}

impl SweepSpec {
    /// (key, flag, value) of every key given, in a fixed order.
    fn given(&self) -> Vec<(&'static str, &'static str, &toml::Value)> {
        let all = [
            ("backend", "--backend", &self.backend),
            ("op", "--op", &self.op),
            ("algo", "--algo", &self.algo),
            ("dtype", "--dtype", &self.dtype),
            ("redop", "--redop", &self.redop),
            ("ranks", "--ranks", &self.ranks),
            ("world_sizes", "--world-sizes", &self.world_sizes),
            ("min_bytes", "-b", &self.min_bytes),
            ("max_bytes", "-e", &self.max_bytes),
            ("factor", "-f", &self.factor),
            ("iters", "--iters", &self.iters),
            ("warmup", "--warmup", &self.warmup),
            ("in_place", "--in-place", &self.in_place),
            ("transport", "--transport", &self.transport),
            ("bind", "--bind", &self.bind),
            ("timeout", "--timeout", &self.timeout),
            ("metrics", "--metrics", &self.metrics),
        ];
        all.into_iter()
            .filter_map(|(k, f, v)| v.as_ref().map(|v| (k, f, v)))
            .collect()
    }

    /// Checks the value types (the values themselves are checked by the sweep's parser).
    pub fn check(&self) -> Result<(), String> {
        for (key, _, v) in self.given() {
            flag_value(key, v)?;
        }
        Ok(())
    }

    /// The `collbench sweep` arguments this table stands for, writing into `out`.
    pub fn args(&self, out: &Path) -> Result<Vec<String>, String> {
        let mut args: Vec<String> = vec!["collbench".into(), "sweep".into()];
        for (key, flag, v) in self.given() {
            args.push(flag.into());
            args.push(flag_value(key, v)?);
        }
        if self.pairs == Some(true) {
            args.push("--pairs".into());
        }
        args.push("--out".into());
        args.push(out.to_string_lossy().into_owned());
        Ok(args)
    }

    /// The sweep request, parsed by the sweep's own parser. Errors start with `[sweep]`.
    pub fn request(&self, out: &Path, command_line: Vec<String>) -> Result<SweepRequest> {
        let here = |msg: String| Error::usage(format!("[sweep]: {msg}"));
        let args = self.args(out).map_err(here)?;
        let sweep = parse_sweep_line(&args).map_err(|e| here(clap_line(&e)))?;
        sweep.into_request(command_line).map_err(|e| match e {
            Error::Usage(m) => here(m),
            other => other,
        })
    }
}

/// The first line of a clap error, without its `error: ` prefix.
fn clap_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("invalid value");
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// A value as the text of its flag: strings as they are, integers in decimal, lists joined
/// with commas, `in_place = true/false` as on/off.
fn flag_value(key: &str, v: &toml::Value) -> Result<String, String> {
    let item = |x: &toml::Value| match x {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Boolean(b) if key == "in_place" => Ok(if *b { "on" } else { "off" }.into()),
        other => Err(format!(
            "{key} = {other} is not a {}",
            if key == "in_place" {
                "placement (\"off\", \"on\", \"both\" or true/false)"
            } else {
                "string or whole number"
            }
        )),
    };
    match v {
        toml::Value::Array(items) if items.is_empty() => {
            Err(format!("{key} = [] is empty; leave it out for the default"))
        }
        toml::Value::Array(items) => {
            let parts: Result<Vec<String>, String> = items.iter().map(item).collect();
            Ok(parts?.join(","))
        }
        other => item(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> SweepSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn keys_become_sweep_flags() {
        let s = spec(
            "op = [\"allreduce\", \"allgather\"]\nranks = 2\nworld_sizes = [2]\n\
             min_bytes = \"1K\"\nmax_bytes = 4096\nin_place = true\niters = 5\npairs = false\n\
             metrics = \"/tmp/m.prom\"",
        );
        let args = s.args(Path::new("/tmp/x")).unwrap();
        assert_eq!(
            args.join(" "),
            "collbench sweep --op allreduce,allgather --ranks 2 --world-sizes 2 -b 1K -e 4096 \
             --iters 5 --in-place on --metrics /tmp/m.prom --out /tmp/x"
        );
        let req = s.request(Path::new("/tmp/x"), vec![]).unwrap();
        assert_eq!(req.view.metrics.as_deref(), Some(Path::new("/tmp/m.prom")));
        assert_eq!(req.opts.ranks, 2);
        assert_eq!(req.opts.sizes, vec![1024, 2048, 4096]);
    }

    #[test]
    fn bad_values_name_the_table() {
        let e = spec("op = \"allgatherr\"").request(Path::new("x"), vec![]);
        let msg = e.err().unwrap().to_string();
        assert!(
            msg.starts_with("[sweep]: ") && msg.contains("allgatherr"),
            "{msg}"
        );
        let e = spec("ranks = 1.5").check().unwrap_err();
        assert!(e.contains("ranks = 1.5"), "{e}");
        let e = spec("iters = -3").request(Path::new("x"), vec![]);
        let msg = e.err().unwrap().to_string();
        assert!(msg.starts_with("[sweep]: ") && !msg.contains('\n'), "{msg}");
        assert!(toml::from_str::<SweepSpec>("opp = 1").is_err());
    }
}
