//! `collbench import nccl-inspector LOG...`: every file of a job's NCCL Inspector output read
//! together (each process wrote its own), grouped by communicator, and written as one results
//! folder per communicator and collective ([`super::inspector_convert`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::files;
use super::inspector::{self, InspectorColl};
use super::inspector_convert::{convert_comm, Comm, Common};
use super::request::ImportRequest;
use super::write::{folder_names, shown, write_folder, Ready};
use crate::error::{Error, Result};

/// The most collective objects one import holds (each a few dozen bytes once grouped).
pub const MAX_COLLS: usize = 20_000_000;

/// Reads, groups, converts and writes; exit 0 when a folder was written.
pub fn run(req: &ImportRequest) -> Result<u8> {
    let mut refused = Vec::new();
    let found = files::expand(&req.logs, &mut refused)?;
    let (colls, p2p) = read_all(&found, &mut refused)?;
    for line in &refused {
        crate::say!("collbench: warning: left out: {line}");
    }
    if colls.is_empty() {
        return Err(Error::usage(format!(
            "no NCCL Inspector collective found in {}{}; nothing imported",
            shown(&req.logs),
            match p2p {
                0 => String::new(),
                n => format!(" ({n} point-to-point objects, which collbench does not import)"),
            }
        )));
    }
    let ready = convert_all(req, &colls)?;
    if ready.is_empty() {
        return Err(Error::usage(format!(
            "no collective collbench holds in {}; nothing imported",
            shown(&req.logs)
        )));
    }
    if p2p > 0 {
        crate::say!("collbench: note: {p2p} point-to-point objects (Send, Recv) left out");
    }
    let dirs = folder_names(req, &ready)?;
    for (run, dir) in ready.iter().zip(&dirs) {
        write_folder(run, dir)?;
    }
    Ok(0)
}

/// Every collective of every file, and the point-to-point objects counted; a named file that
/// is not an Inspector log is an error, one found in a folder is left out.
fn read_all(
    found: &[files::LogFile],
    refused: &mut Vec<String>,
) -> Result<(Vec<InspectorColl>, usize)> {
    let (mut colls, mut p2p) = (Vec::new(), 0);
    for file in found {
        let text = files::read_text(&file.path)?;
        let parsed = match inspector::parse(&text) {
            Ok(p) => p,
            Err(e) => {
                let msg = format!("line {}: {}", e.line, e.msg);
                if file.named {
                    return Err(Error::Input {
                        path: file.path.clone(),
                        msg,
                    });
                }
                refused.push(format!("{}: {msg}", file.path.display()));
                continue;
            }
        };
        p2p += parsed.p2p;
        colls.extend(parsed.colls);
        if colls.len() > MAX_COLLS {
            return Err(Error::usage(format!(
                "more than {MAX_COLLS} collectives in the logs; import fewer files at a time"
            )));
        }
    }
    Ok((colls, p2p))
}

/// One folder per communicator and collective.
fn convert_all(req: &ImportRequest, colls: &[InspectorColl]) -> Result<Vec<Ready>> {
    let grouped = inspector::group(colls).map_err(Error::Usage)?;
    let dtype = req
        .overrides
        .dtype
        .ok_or_else(|| Error::usage("NCCL Inspector records no element type: give --dtype"))?;
    let source = shown(&req.logs);
    let common = Common {
        dtype,
        source: &source,
        command_line: &req.command_line,
    };
    let comms = comms_of(colls);
    let mut ready = Vec::new();
    let mut skipped = Vec::new();
    for (id, series) in &grouped {
        let Some(comm) = comms.get(id.as_str()) else {
            continue;
        };
        for converted in convert_comm(comm, series, &common, &mut skipped) {
            if converted.records.is_empty() {
                skipped.extend(converted.warnings);
            } else {
                ready.push(Ready {
                    source: req.logs.first().cloned().unwrap_or_else(PathBuf::new),
                    converted,
                });
            }
        }
    }
    skipped.sort();
    skipped.dedup();
    for s in &skipped {
        crate::say!("collbench: warning: left out: {s}");
    }
    Ok(ready)
}

/// Every communicator by id: its first object's header, its version, and each rank's host.
fn comms_of(colls: &[InspectorColl]) -> BTreeMap<&str, Comm<'_>> {
    let mut comms: BTreeMap<&str, Comm> = BTreeMap::new();
    for c in colls {
        let comm = comms.entry(c.comm.id.as_str()).or_insert_with(|| Comm {
            header: &c.comm,
            hosts: BTreeMap::new(),
            version: &c.version,
        });
        if !c.hostname.is_empty() {
            comm.hosts
                .entry(c.comm.rank)
                .or_insert_with(|| c.hostname.clone());
        }
    }
    comms
}
