//! What a local launcher hands its rank processes (the sweep's options, a replay's plan): an
//! environment variable, or where the value is too long for one (Linux takes at most 128 KiB
//! per environment string, `MAX_ARG_STRLEN`, and a traffic matrix of many ranks is longer) an
//! inherited memfd holding it, named by `NAME_FD`.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};

use crate::error::{Error, Result};
use crate::input::{read_text_capped, MAX_DOCUMENT_BYTES};

/// Values up to this long travel in the environment itself.
const IN_ENV_MAX: usize = 64 << 10;

/// The environment a child is started with, and the memfds it inherits (open until dropped).
pub struct Handoff {
    pub env: Vec<(String, String)>,
    _files: Vec<File>,
}

/// `pairs` as the environment of rank processes: each value itself, or a memfd of it.
pub fn hand(pairs: &[(&str, &str)]) -> Result<Handoff> {
    let mut out = Handoff {
        env: Vec::new(),
        _files: Vec::new(),
    };
    for &(name, value) in pairs {
        if value.len() <= IN_ENV_MAX {
            out.env.push((name.into(), value.into()));
            continue;
        }
        let file = memfd_holding(value)?;
        out.env.push((fd_name(name), file.as_raw_fd().to_string()));
        out._files.push(file);
    }
    Ok(out)
}

/// What the launcher handed this rank as `name`: the variable, else its memfd; `None` where it
/// handed nothing.
pub fn received(name: &str) -> Result<Option<String>> {
    if let Ok(v) = std::env::var(name) {
        return Ok(Some(v));
    }
    let Ok(fd) = std::env::var(fd_name(name)) else {
        return Ok(None);
    };
    let fd: i32 = (fd.parse())
        .map_err(|_| Error::usage(format!("{}={fd} is not a descriptor", fd_name(name))))?;
    // A path of its own, so the read starts at the beginning whatever the launcher's offset.
    let path = std::path::PathBuf::from(format!("/proc/self/fd/{fd}"));
    read_text_capped(&path, MAX_DOCUMENT_BYTES, name).map(Some)
}

fn fd_name(name: &str) -> String {
    format!("{name}_FD")
}

/// An anonymous file holding `value`, inherited by children (no close-on-exec).
fn memfd_holding(value: &str) -> Result<File> {
    let name = c"collbench-handoff";
    // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new fd or -1.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    if fd < 0 {
        return Err(Error::os("memfd_create for the ranks' options"));
    }
    // SAFETY: `fd` is a new descriptor this process owns.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(value.as_bytes()).map_err(|e| Error::Os {
        what: "writing the ranks' options".into(),
        source: e,
    })?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_value_travels_in_a_memfd_that_reads_back_whole() {
        let long = "x".repeat(IN_ENV_MAX + 1);
        let h = hand(&[("A", "short"), ("B", &long)]).unwrap();
        assert_eq!(h.env[0], ("A".to_string(), "short".to_string()));
        assert_eq!(h.env[1].0, "B_FD");
        let path = format!("/proc/self/fd/{}", h.env[1].1);
        assert_eq!(std::fs::read_to_string(path).unwrap(), long);
    }
}
