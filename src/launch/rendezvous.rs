//! Where the ranks of a launch meet: rank 0's store address and bind address, each rank's data
//! listener (on `COLLBENCH_LISTEN_ADDR`, or the interface that routes to the store), the name that
//! decides which ranks share a node, and the line that says how to pass the job's token.

use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};

use crate::error::{Error, Result};
use crate::launch::env::{Bootstrap, TOKEN_ENV};

/// The IP address a rank's data listener binds and advertises.
pub const LISTEN_ADDR_ENV: &str = "COLLBENCH_LISTEN_ADDR";
/// Overrides the host name that decides which ranks share a node.
pub const NODE_NAME_ENV: &str = "COLLBENCH_NODE_NAME";

/// The one line that says how to give every rank the job's token.
pub fn missing_token(boot: &Bootstrap) -> Error {
    let pass = match boot.launcher {
        crate::launch::env::Launcher::OpenMpi => {
            format!(" and pass it with `mpirun -x {TOKEN_ENV}`")
        }
        _ => String::new(),
    };
    Error::usage(format!(
        "started by {} but {TOKEN_ENV} is not set: every rank needs the job's secret, e.g. \
         `export {TOKEN_ENV}=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')` before launching{pass}",
        boot.launcher.name()
    ))
}

/// Where rank 0's store listens: on `COLLBENCH_LISTEN_ADDR` when set (only that interface),
/// else on every interface, at the store's port.
pub fn store_bind(boot: &Bootstrap) -> Result<Option<String>> {
    let (Some(all), Some((_, port))) = (boot.store_bind_addr(), boot.master.as_ref()) else {
        return Ok(None);
    };
    match listen_ip()? {
        Some(ip) => Ok(Some(SocketAddr::from((ip, *port)).to_string())),
        None => Ok(Some(all)),
    }
}

/// `COLLBENCH_LISTEN_ADDR`, if set.
fn listen_ip() -> Result<Option<IpAddr>> {
    match std::env::var(LISTEN_ADDR_ENV) {
        Ok(v) => v.trim().parse::<IpAddr>().map(Some).map_err(|_| {
            Error::usage(format!(
                "{LISTEN_ADDR_ENV}='{v}' is not an IP address such as 10.0.0.5; unset it to use the interface toward the store"
            ))
        }),
        Err(_) => Ok(None),
    }
}

/// This rank's data listener, on the address other hosts reach it at.
pub fn listen(boot: &Bootstrap) -> Result<TcpListener> {
    let ip = match listen_ip()? {
        Some(ip) => ip,
        None => route_to_store(boot)?,
    };
    TcpListener::bind((ip, 0)).map_err(|e| {
        Error::Rank(format!(
            "rank {}: cannot listen on {ip}: {e}; set {LISTEN_ADDR_ENV} to an address of this host",
            boot.rank
        ))
    })
}

/// The local address of the interface the kernel would use to reach the store.
fn route_to_store(boot: &Bootstrap) -> Result<IpAddr> {
    let (host, port) = boot
        .master
        .clone()
        .unwrap_or_else(|| ("127.0.0.1".into(), 1));
    let fail = |e: std::io::Error| {
        Error::Rank(format!(
            "rank {}: no route toward the store at {host}:{port} to pick this host's address ({e}); set {LISTEN_ADDR_ENV}",
            boot.rank
        ))
    };
    let v6 = host.parse::<std::net::Ipv6Addr>().is_ok();
    let sock = UdpSocket::bind(if v6 { "[::]:0" } else { "0.0.0.0:0" }).map_err(fail)?;
    sock.connect((host.as_str(), port)).map_err(fail)?;
    Ok(sock.local_addr().map_err(fail)?.ip())
}

/// Slurm's name for the node a task runs on, set by slurmd in every task's environment
/// (srun(1), "OUTPUT ENVIRONMENT VARIABLES"). It names the node as the job's node list does,
/// also where several slurmd run on one host or a host's name differs from its node name.
pub const SLURM_NODE_ENV: &str = "SLURMD_NODENAME";

/// The name that decides which ranks share a node: `COLLBENCH_NODE_NAME`, else Slurm's node
/// name (`SLURMD_NODENAME`), else the host name.
pub fn node_name() -> String {
    [NODE_NAME_ENV, SLURM_NODE_ENV]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| crate::meta::HostInfo::detect().hostname)
}
