//! The small CSV dialect of the results files, shared by their writers and readers.
//!
//! Written by hand rather than with a CSV crate because the dialect is tiny: every field is a
//! number, a fixed lower-case name or a backend name, so no field ever needs quoting (writers
//! refuse text that would). Owning the reader lets every error name the file, the line and the
//! column, and tell a row cut off by a crash (no final newline) from a bad value.
//!
//! Rules: comma-separated, first line is the header, every line ends with `\n` (a trailing `\r`
//! is tolerated), columns are found by name so columns added later are ignored by old readers.
//! Floats are written in Rust's shortest form that parses back to the same f64 (full precision,
//! never an exponent); a value that is not finite is written as an empty field and read back as
//! NaN. `NaN`, `inf` and the like are not accepted as text.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::record::PointKey;

/// The leading fields of samples.csv and ranks.csv: `point` (the 0-based row of summary.csv),
/// then `op, algo, dtype, world, bytes, in_place` so the file can be read on its own.
pub(crate) fn point_fields(point: usize, key: &PointKey) -> Vec<String> {
    vec![
        point.to_string(),
        key.op.to_string(),
        key.algo.to_string(),
        key.dtype.to_string(),
        key.world.to_string(),
        key.bytes.to_string(),
        boolean(key.in_place),
    ]
}

/// An open results CSV that rows are appended to.
#[derive(Debug)]
pub(crate) struct CsvFile {
    path: PathBuf,
    // A plain File: each append is one write(2), so a row that append returned for is in the
    // kernel and survives a crash of this process.
    file: File,
    /// Bytes of whole lines written so far.
    len: u64,
}

impl CsvFile {
    /// Creates `dir/name` with its header. Refuses an existing file: results are never
    /// overwritten.
    pub(crate) fn create(dir: &Path, name: &str, columns: &[&str]) -> Result<CsvFile> {
        let path = dir.join(name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut csv = CsvFile { path, file, len: 0 };
        csv.append(&format!("{}\n", columns.join(",")))?;
        Ok(csv)
    }

    /// Appends whole lines (each ending with `\n`) in one write.
    /// A failed write (a full disk) is cut back to the last whole line, so that the file never
    /// ends in half a row that this process wrote.
    pub(crate) fn append(&mut self, lines: &str) -> Result<()> {
        match self.file.write_all(lines.as_bytes()) {
            Ok(()) => {
                self.len += lines.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                let _ = self.file.seek(SeekFrom::Start(self.len));
                Err(Error::io(&self.path, e))
            }
        }
    }

    /// Path of the file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Appends one row (fields joined by commas, then `\n`) to `buf`.
pub(crate) fn push_row(buf: &mut String, fields: &[String]) {
    buf.push_str(&fields.join(","));
    buf.push('\n');
}

/// A float field: full round-trip precision, empty when not finite.
pub(crate) fn float(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// A boolean field.
pub(crate) fn boolean(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

/// A free-text field; refused when it would need quoting.
pub(crate) fn text(what: &str, s: &str) -> Result<String> {
    if s.contains([',', '"', '\n', '\r']) {
        return Err(Error::usage(format!(
            "{what} '{}' cannot be written to CSV: it contains a comma, quote or line break",
            s.escape_debug()
        )));
    }
    Ok(s.to_string())
}

mod read;
pub(crate) use read::{read_rows, read_rows_until_cut, Row};

#[cfg(test)]
mod tests;
