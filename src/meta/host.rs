//! The machine a run was launched from, read from uname(2), /proc/cpuinfo and /proc/meminfo.

use std::fs;

use serde::{Deserialize, Serialize};

/// The machine a run was launched from.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct HostInfo {
    /// Network name of the host.
    pub hostname: String,
    /// Kernel name and release, e.g. `Linux 6.1.0-18-amd64`.
    pub os: String,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// The `model name` line of /proc/cpuinfo.
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// Physical memory in bytes.
    pub mem_total_bytes: u64,
    /// Memory available for new work when the run started, in bytes.
    pub mem_available_bytes: u64,
}

impl HostInfo {
    /// Describes this host. Never fails: what cannot be read is `"unknown"` or 0, because missing
    /// metadata must not stop a measurement.
    pub fn detect() -> HostInfo {
        let (hostname, os) = uname().unwrap_or_else(|| ("unknown".into(), "unknown".into()));
        HostInfo {
            hostname,
            os,
            arch: std::env::consts::ARCH.to_string(),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            mem_total_bytes: meminfo_bytes("MemTotal").unwrap_or(0),
            mem_available_bytes: mem_available_bytes().unwrap_or(0),
        }
    }
}

/// `MemAvailable` of /proc/meminfo in bytes; `None` where it cannot be read.
pub fn mem_available_bytes() -> Option<u64> {
    meminfo_bytes("MemAvailable")
}

/// A `kB` field of /proc/meminfo, in bytes.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, field)
}

/// Finds `field:   1234 kB` in meminfo text.
pub(super) fn parse_meminfo(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let kib: u64 = rest.split_whitespace().next()?.parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// The first `model name` of /proc/cpuinfo.
fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_model(&text)
}

/// Finds `model name : ...` in cpuinfo text.
pub(super) fn parse_cpu_model(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// Host name and `sysname release` from uname(2).
fn uname() -> Option<(String, String)> {
    // SAFETY: utsname is plain old data, so all-zero is a valid value; uname fills it and we
    // read it only when the call succeeded.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let os = format!("{} {}", field(&u.sysname), field(&u.release));
    Some((field(&u.nodename), os))
}
