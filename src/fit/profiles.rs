//! The bundled network profiles: public hardware numbers and NCCL's tuning constants written
//! as fit.json files (bench-configs/profiles/), embedded so the binary works from anywhere.
//! `collbench project` builds on them and `accept --expect` judges against them.

use crate::error::{Error, Result};
use crate::fit::schema::{FitFile, FIT_SCHEMA};

/// The bundled network profiles (fit.json form), embedded so the binary works from anywhere.
const PROFILES: [(&str, &str); 3] = [
    (
        "v100-ib100",
        include_str!("../../bench-configs/profiles/v100-ib100.json"),
    ),
    (
        "a100-ib200",
        include_str!("../../bench-configs/profiles/a100-ib200.json"),
    ),
    (
        "h100-ib400",
        include_str!("../../bench-configs/profiles/h100-ib400.json"),
    ),
];

/// Names of the bundled profiles.
pub fn profile_names() -> Vec<&'static str> {
    PROFILES.iter().map(|(n, _)| *n).collect()
}

/// A bundled network profile by name.
pub fn profile(name: &str) -> Result<FitFile> {
    let want = name.trim().to_ascii_lowercase();
    let (_, text) = PROFILES.iter().find(|(n, _)| *n == want).ok_or_else(|| {
        Error::usage(format!(
            "unknown profile '{name}'; known: {}",
            profile_names().join(", ")
        ))
    })?;
    let fit: FitFile = serde_json::from_str(text)
        .map_err(|e| Error::usage(format!("bundled profile {want} is not a {FIT_SCHEMA}: {e}")))?;
    crate::fit::schema_check::check_fit(&fit)
        .map_err(|m| Error::usage(format!("bundled profile {want}: {m}")))?;
    Ok(fit)
}
