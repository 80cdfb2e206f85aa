//! Turning `--model`, `--hardware` and `--profile` arguments into specifications: a bundled
//! name, or a TOML file (model, hardware) whose optional `base = "<preset>"` starts from a
//! bundled spec so that a file may change only a few fields. The thin I/O edge of the module.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::hardware::{self, HardwareSpec};
use super::model::{self, ModelSpec};
use crate::error::{Error, Result};

pub use crate::fit::profiles::{profile, profile_names};

/// The hardware preset a bundled profile was built for (`h100-ib400` → `h100`).
pub fn profile_hardware(profile: &str) -> Option<HardwareSpec> {
    let gpu = profile.trim().to_ascii_lowercase();
    let gpu = gpu.split('-').next()?;
    hardware::presets().into_iter().find(|h| h.name == gpu)
}

/// `--model`: a preset name or a TOML file.
pub fn model(arg: &str) -> Result<ModelSpec> {
    let spec: ModelSpec = resolve(arg, "model", model::presets(), |m| &m.name)?;
    spec.validate().map_err(|e| in_file(arg, e))?;
    Ok(spec)
}

/// `--hardware`: a preset name or a TOML file.
pub fn hardware(arg: &str) -> Result<HardwareSpec> {
    let spec: HardwareSpec = resolve(arg, "hardware", hardware::presets(), |h| &h.name)?;
    spec.validate().map_err(|e| in_file(arg, e))?;
    Ok(spec)
}

/// A spec's error, naming the file when the spec came from one.
fn in_file(arg: &str, e: Error) -> Error {
    let path = Path::new(arg.trim());
    if path.is_file() {
        Error::Input {
            path: path.to_path_buf(),
            msg: e.to_string(),
        }
    } else {
        e
    }
}

fn resolve<T>(arg: &str, what: &str, presets: Vec<T>, name: fn(&T) -> &String) -> Result<T>
where
    T: Serialize + DeserializeOwned,
{
    let path = Path::new(arg.trim());
    if arg.trim().ends_with(".toml") || path.is_file() {
        return from_toml(path, what, &presets, name);
    }
    let want = arg.trim().to_ascii_lowercase();
    let known: Vec<&str> = presets.iter().map(|p| name(p).as_str()).collect();
    let known = known.join(", ");
    presets
        .into_iter()
        .find(|p| *name(p) == want)
        .ok_or_else(|| {
            Error::usage(format!(
                "unknown {what} '{arg}'; known: {known}; or give a TOML file (docs/FORMATS.md)"
            ))
        })
}

fn from_toml<T>(path: &Path, what: &str, presets: &[T], name: fn(&T) -> &String) -> Result<T>
where
    T: Serialize + DeserializeOwned,
{
    let bad = |msg: String| Error::Input {
        path: path.to_path_buf(),
        msg,
    };
    let text = crate::input::read_text_capped(path, crate::input::MAX_SPEC_BYTES, "spec file")?;
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        bad(format!("not valid TOML: {}", one_line(&e.to_string())))
    })?;
    let named = table.contains_key("name");
    let mut merged = match table.remove("base") {
        Some(toml::Value::String(base)) => {
            let preset = presets.iter().find(|p| *name(p) == base).ok_or_else(|| {
                let known: Vec<&str> = presets.iter().map(|p| name(p).as_str()).collect();
                bad(format!(
                    "base '{base}' is not a known {what}; known: {}",
                    known.join(", ")
                ))
            })?;
            match toml::Value::try_from(preset) {
                Ok(toml::Value::Table(t)) => t,
                _ => return Err(bad(format!("cannot start from {what} {base}"))),
            }
        }
        Some(other) => return Err(bad(format!("base must be a string, not {other}"))),
        None => toml::Table::new(),
    };
    merged.extend(table);
    if !named {
        let stem = path
            .file_stem()
            .map_or(what.to_string(), |s| s.to_string_lossy().into());
        merged.insert("name".into(), toml::Value::String(stem));
    }
    toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| {
            bad(format!("invalid {what} spec: {}", one_line(&e.to_string())))
        })
}

/// A multi-line parser message on one line.
fn one_line(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::schema::FIT_SCHEMA;

    #[test]
    fn profiles_load_and_name_their_hardware() {
        for name in profile_names() {
            let fit = profile(name).unwrap();
            assert_eq!(fit.schema, FIT_SCHEMA);
            assert!(
                fit.models.len() >= 4,
                "{name}: ring models and a tree AllReduce"
            );
            assert!(profile_hardware(name).is_some(), "{name}");
        }
        let e = profile("h100-ib999").unwrap_err().to_string();
        assert!(e.contains("v100-ib100, a100-ib200, h100-ib400"), "{e}");
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let e = model("llama9").unwrap_err().to_string();
        assert!(
            e.contains("unknown model 'llama9'") && e.contains("llama3-70b"),
            "{e}"
        );
        let e = hardware("b200").unwrap_err().to_string();
        assert!(e.contains("v100, a100, h100, h200"), "{e}");
    }

    #[test]
    fn toml_files_override_a_base() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tiny.toml");
        std::fs::write(&p, "base = \"llama2-7b\"\nlayers = 2\n").unwrap();
        let m = model(p.to_str().unwrap()).unwrap();
        assert_eq!((m.name.as_str(), m.layers, m.hidden), ("tiny", 2, 4096));
        std::fs::write(&p, "base = \"h100\"\nidle_w = 100.0\n").unwrap();
        let h = hardware(p.to_str().unwrap()).unwrap();
        assert_eq!((h.idle_w, h.max_w), (100.0, 700.0));
        std::fs::write(&p, "name = \"x\"\nlayers = 2\n").unwrap();
        let e = model(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("missing field") && !e.contains('\n'), "{e}");
        std::fs::write(&p, "base = \"llama2-7b\"\nlayerz = 2\n").unwrap();
        let e = model(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("layerz"), "{e}");
    }
}
