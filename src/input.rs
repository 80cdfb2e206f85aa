//! Reading the files users and other tools hand collbench: at most a cap plus one byte from
//! any source, whatever `metadata().len()` says (0 for a FIFO, a device or `/proc` file, whose
//! reads do not end), so that `/dev/zero` given as a fit, a criteria file or a log is refused in
//! one line instead of filling memory.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::units::format_size;

/// fit.json, verdict.json, projection JSON, meta.json: generous for a thousand-curve fit or a
/// million-rank meta.json, far below what a machine holds.
pub const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// Hand-written TOML (criteria, hardware and model specs): far beyond any real one.
pub const MAX_SPEC_BYTES: u64 = 4 << 20;

/// One line of a CSV results file; collbench's own longest (summary.csv) are under 1 KiB.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// The bytes of `path`, refused (naming the file, the cap and `what` it should be) when it holds
/// more than `cap` bytes.
pub fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > cap {
        return Err(Error::Input {
            path: path.to_path_buf(),
            msg: format!(
                "more than the {} a {what} may have; is this the right file?",
                format_size(usize::try_from(cap).unwrap_or(usize::MAX))
            ),
        });
    }
    Ok(bytes)
}

/// [`read_capped`] as UTF-8 text; other bytes are refused.
pub fn read_text_capped(path: &Path, cap: u64, what: &str) -> Result<String> {
    let bytes = read_capped(path, cap, what)?;
    String::from_utf8(bytes).map_err(|e| Error::Input {
        path: path.to_path_buf(),
        msg: format!(
            "not UTF-8 text at byte {}; expected a {what}",
            e.utf8_error().valid_up_to()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_without_end_is_read_to_its_cap_plus_one_byte_and_refused() {
        let e = read_capped(Path::new("/dev/zero"), 1 << 20, "fit.json").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("/dev/zero") && msg.contains("1 MiB a fit.json"),
            "{msg}"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_capped(&p, 5, "x").unwrap(), b"12345");
        assert!(read_capped(&p, 4, "x").is_err());
        std::fs::write(&p, [b'a', 0xff, b'b']).unwrap();
        let msg = read_text_capped(&p, 10, "criteria file")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("not UTF-8 text at byte 1; expected a criteria file"),
            "{msg}"
        );
    }
}
