//! Where the store is, and the token: parsing `COLLBENCH_STORE_ADDR`, `MASTER_ADDR`,
//! `MASTER_PORT` and `COLLBENCH_TOKEN` (see the parent module's notes for the rules).

use std::net::Ipv6Addr;

use super::{Launcher, Vars, DEFAULT_STORE_PORT, MAX_TOKEN_BYTES, STORE_ADDR_ENV, TOKEN_ENV};
use crate::error::{Error, Result};

/// `host:port`, with an IPv6 address in brackets.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Decodes a `COLLBENCH_TOKEN` value: hex (an optional `0x` is ignored), at least 16 digits (64
/// bits), an even count, at most [`MAX_TOKEN_BYTES`] bytes. A 16-digit token decodes to the
/// big-endian bytes of the u64 it spells, so `format!("{:016x}", t)` round-trips.
pub fn parse_token(text: &str) -> Result<Vec<u8>> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if let Some(why) = token_problem(digits) {
        return Err(Error::usage(format!(
            "{TOKEN_ENV} {why}, expected an even number (16 to {}) of hex digits; make one \
             with `openssl rand -hex 16` and give every rank the same value",
            2 * MAX_TOKEN_BYTES
        )));
    }
    Ok((0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("checked hex"))
        .collect())
}

/// What is wrong with a token's digits, in words that never repeat the secret.
fn token_problem(digits: &str) -> Option<String> {
    let n = digits.chars().count();
    if let Some(at) = digits.chars().position(|c| !c.is_ascii_hexdigit()) {
        return Some(format!(
            "has a character that is not a hex digit (character {} of {n})",
            at + 1
        ));
    }
    let ok = (16..=2 * MAX_TOKEN_BYTES).contains(&n) && n % 2 == 0;
    (!ok).then(|| format!("has {n} hex digits"))
}

/// Resolves where the store is (see the module notes), with a note of where that came from.
pub(super) fn store_address(
    v: &Vars,
    l: Launcher,
    world: usize,
    hosts: Option<(&str, &[String])>,
) -> Result<(Option<(String, u16)>, String)> {
    if let Some(text) = v.raw(STORE_ADDR_ENV) {
        let hp = parse_host_port(&text).map_err(|why| {
            Error::usage(format!(
                "{STORE_ADDR_ENV}='{text}' {why}; give host:port of the machine running rank 0, \
                 e.g. node01:{DEFAULT_STORE_PORT} or [fd00::1]:{DEFAULT_STORE_PORT}"
            ))
        })?;
        return Ok((Some(hp), STORE_ADDR_ENV.to_string()));
    }
    let host = match (v.raw("MASTER_ADDR"), hosts) {
        (Some(h), _) => {
            let h = h
                .strip_prefix('[')
                .and_then(|x| x.strip_suffix(']'))
                .map_or(h.clone(), str::to_string);
            check_host(&h).map_err(|why| {
                Error::usage(format!(
                    "MASTER_ADDR='{h}' {why}; set it to the host name or address of rank 0 \
                     (without a port), or set {STORE_ADDR_ENV}=host:port"
                ))
            })?;
            Some((h, "MASTER_ADDR".to_string()))
        }
        (None, Some((var, list))) => list
            .first()
            .map(|h| (h.clone(), format!("first host of {var}"))),
        (None, None) => None,
    };
    let Some((host, host_origin)) = host else {
        if world == 1 {
            return Ok((None, String::new()));
        }
        return Err(Error::usage(match l {
            Launcher::OpenMpi => format!(
                "Open MPI does not tell a rank where rank 0 runs: set {STORE_ADDR_ENV}=host:port \
                 (rank 0's host and a free port, e.g. {STORE_ADDR_ENV}=$(hostname):{DEFAULT_STORE_PORT}) \
                 and pass it to every rank with mpirun -x {STORE_ADDR_ENV}"
            ),
            Launcher::Slurm => format!(
                "no SLURM_STEP_NODELIST or SLURM_JOB_NODELIST tells where rank 0 runs: set \
                 {STORE_ADDR_ENV}=host:port of rank 0's host"
            ),
            Launcher::Torchrun => format!(
                "MASTER_ADDR is not set, so rank 0's host is unknown: set MASTER_ADDR (and \
                 MASTER_PORT) or {STORE_ADDR_ENV}=host:port"
            ),
        }));
    };
    let master_port = match v.raw("MASTER_PORT") {
        Some(text) => Some(parse_port(&text).map_err(|why| {
            Error::usage(format!(
                "MASTER_PORT='{text}' {why}; set a free TCP port on rank 0's host, or set \
                 {STORE_ADDR_ENV}=host:port"
            ))
        })?),
        None => None,
    };
    let agent_store = v.raw("TORCHELASTIC_USE_AGENT_STORE").as_deref() == Some("True");
    let (port, port_origin) = match master_port {
        Some(p) if l == Launcher::Torchrun && agent_store => {
            let next = p.checked_add(1).ok_or_else(|| {
                Error::usage(format!(
                    "MASTER_PORT=65535 leaves no port after it for the store (torchrun's agent \
                     holds MASTER_PORT); set {STORE_ADDR_ENV}=host:port"
                ))
            })?;
            (
                next,
                "MASTER_PORT+1 (torchrun's agent holds MASTER_PORT)".to_string(),
            )
        }
        Some(p) => (p, "MASTER_PORT".to_string()),
        None => (
            DEFAULT_STORE_PORT,
            format!("default port {DEFAULT_STORE_PORT}"),
        ),
    };
    Ok((Some((host, port)), format!("{host_origin}, {port_origin}")))
}

/// A TCP port others can connect to: 1 to 65535.
fn parse_port(text: &str) -> std::result::Result<u16, String> {
    match text.parse::<u16>() {
        Ok(p) if p > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err("is not a port number from 1 to 65535".into()),
    }
}

/// A host name or address (no port, no spaces); a colon only inside an IPv6 address.
fn check_host(host: &str) -> std::result::Result<(), String> {
    if host.is_empty() {
        return Err("has no host".into());
    }
    if host.chars().any(|c| c.is_whitespace() || "/[]".contains(c)) {
        return Err("is not a host name or address".into());
    }
    if host.contains(':') && host.parse::<Ipv6Addr>().is_err() {
        return Err("is not a host name or address (an IPv6 address goes in brackets)".into());
    }
    Ok(())
}

/// Splits `host:port` or `[v6]:port`.
fn parse_host_port(text: &str) -> std::result::Result<(String, u16), String> {
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (h, after) = rest.split_once(']').ok_or("has '[' without ']'")?;
            h.parse::<Ipv6Addr>()
                .map_err(|_| "has brackets around something that is not an IPv6 address")?;
            (h, after.strip_prefix(':').ok_or("has no :port")?)
        }
        None => text.rsplit_once(':').ok_or("has no :port")?,
    };
    if !text.starts_with('[') && host.contains(':') {
        return Err("has an IPv6 address outside brackets".into());
    }
    check_host(host)?;
    Ok((host.to_string(), parse_port(port)?))
}
