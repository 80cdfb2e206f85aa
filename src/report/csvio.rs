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

use std::fmt::Display;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, ErrorKind, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

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

/// One data line of a file being read, with its columns located by name.
pub(crate) struct Row<'a> {
    path: &'a Path,
    line: usize,
    fields: Vec<&'a str>,
    columns: &'a [&'a str],
    index: &'a [usize],
    header: &'a [&'a str],
}

impl Row<'_> {
    /// An error about this row.
    pub(crate) fn error(&self, msg: String) -> Error {
        Error::Input {
            path: self.path.to_path_buf(),
            msg: format!("line {}: {msg}", self.line),
        }
    }

    /// The raw text of a column.
    pub(crate) fn get(&self, column: &str) -> Result<&str> {
        let at = self.columns.iter().position(|c| *c == column);
        match at.and_then(|i| self.fields.get(self.index[i])) {
            Some(field) => Ok(field),
            None => Err(self.error(format!("no column '{column}'"))),
        }
    }

    /// A column added after the file's schema first appeared, parsed with `FromStr`; `default`
    /// where the file predates it.
    pub(crate) fn parse_or<T>(&self, column: &str, default: T) -> Result<T>
    where
        T: FromStr,
        T::Err: Display,
    {
        match self.header.iter().position(|c| *c == column) {
            Some(i) => {
                let field = self.fields.get(i).copied().unwrap_or_default();
                field
                    .parse()
                    .map_err(|e| self.error(format!("column {column}: cannot read '{field}': {e}")))
            }
            None => Ok(default),
        }
    }

    /// A column parsed with `FromStr` (integers, names of ops and types).
    pub(crate) fn parse<T>(&self, column: &str) -> Result<T>
    where
        T: FromStr,
        T::Err: Display,
    {
        let field = self.get(column)?;
        field
            .parse()
            .map_err(|e| self.error(format!("column {column}: cannot read '{field}': {e}")))
    }

    /// A float column: empty is NaN, other text must be a finite number.
    pub(crate) fn float(&self, column: &str) -> Result<f64> {
        let field = self.get(column)?;
        if field.is_empty() {
            return Ok(f64::NAN);
        }
        match field.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.error(format!("column {column}: '{field}' is not a finite number"))),
        }
    }

    /// A float column added after the file's schema first appeared: as [`Row::float`], and
    /// NaN (undefined) where the file predates it.
    pub(crate) fn float_or(&self, column: &str) -> Result<f64> {
        let field: String = self.parse_or(column, String::new())?;
        if field.is_empty() {
            return Ok(f64::NAN);
        }
        match field.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.error(format!("column {column}: '{field}' is not a finite number"))),
        }
    }

    /// A boolean column (`true` or `false`).
    pub(crate) fn boolean(&self, column: &str) -> Result<bool> {
        match self.get(column)? {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(self.error(format!(
                "column {column}: '{other}' is neither true nor false"
            ))),
        }
    }
}

/// Reads every data row of `path`, whose header must hold all of `columns`; `what` names the
/// expected kind of file in errors (e.g. "collbench summary.csv (collbench.summary/v1)"). A
/// last line cut off by a crash or a full disk is left out with a warning on stderr.
pub(crate) fn read_rows<T>(
    path: &Path,
    what: &str,
    columns: &[&str],
    parse: impl FnMut(&Row) -> Result<T>,
) -> Result<Vec<T>> {
    read_rows_until_cut(path, what, columns, parse).map(|(rows, _)| rows)
}

/// A last line without its newline: the writer stopped in the middle of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CutLine {
    pub line: usize,
    pub text: String,
}

/// [`read_rows`], also returning the cut-off last line, if any.
pub(crate) fn read_rows_until_cut<T>(
    path: &Path,
    what: &str,
    columns: &[&str],
    mut parse: impl FnMut(&Row) -> Result<T>,
) -> Result<(Vec<T>, Option<CutLine>)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut lines = Lines::new(path, BufReader::new(file));
    let header = match lines.next_line()? {
        Some(Line::Whole(h)) => h,
        Some(Line::Cut(_)) => {
            return Err(lines.error(format!("the header of a {what} was cut off")))
        }
        None => return Err(lines.error(format!("empty file; expected the header of a {what}"))),
    };
    let header: Vec<&str> = header.split(',').collect();
    let index =
        locate(&header, columns).map_err(|msg| lines.error(format!("{msg} of a {what}")))?;
    let mut out = Vec::new();
    while let Some(line) = lines.next_line()? {
        let text = match line {
            Line::Whole(text) => text,
            Line::Cut(text) => {
                warn_cut(path, lines.line, out.len());
                return Ok((
                    out,
                    Some(CutLine {
                        line: lines.line,
                        text,
                    }),
                ));
            }
        };
        let fields: Vec<&str> = text.split(',').collect();
        if fields.len() != header.len() {
            let msg = format!("{} fields, the header has {}", fields.len(), header.len());
            return Err(lines.error(msg));
        }
        let row = Row {
            path,
            line: lines.line,
            fields,
            columns,
            index: &index,
            header: &header,
        };
        out.push(parse(&row)?);
    }
    Ok((out, None))
}

/// One line on stderr about a file whose last line was cut off.
fn warn_cut(path: &Path, line: usize, rows: usize) {
    eprintln!(
        "collbench: warning: {}: line {line} was cut off (no newline at the end: the run crashed \
         or the disk filled); reading the {rows} complete rows before it",
        path.display()
    );
}

/// For each wanted column, its position in the header; the error lists the missing ones.
fn locate(header: &[&str], columns: &[&str]) -> Result<Vec<usize>, String> {
    let found: Vec<Option<usize>> = columns
        .iter()
        .map(|c| header.iter().position(|h| h == c))
        .collect();
    let missing: Vec<&str> = columns
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(c, _)| *c)
        .collect();
    if missing.is_empty() {
        return Ok(found.into_iter().flatten().collect());
    }
    Err(format!(
        "header lacks column(s) {}; this is not the header",
        missing.join(", ")
    ))
}

/// Line reader that counts lines and insists on complete, non-empty UTF-8 lines.
struct Lines<'a, R> {
    path: &'a Path,
    reader: R,
    buf: String,
    line: usize,
}

impl<'a, R: BufRead> Lines<'a, R> {
    fn new(path: &'a Path, reader: R) -> Self {
        Lines {
            path,
            reader,
            buf: String::new(),
            line: 0,
        }
    }

    fn error(&self, msg: String) -> Error {
        let at = if self.line == 0 {
            String::new()
        } else {
            format!("line {}: ", self.line)
        };
        Error::Input {
            path: self.path.to_path_buf(),
            msg: format!("{at}{msg}"),
        }
    }

    /// The next line without its line ending; `None` at the end of the file.
    fn next_line(&mut self) -> Result<Option<Line>> {
        self.buf.clear();
        match self.reader.read_line(&mut self.buf) {
            Ok(0) => Ok(None),
            Ok(_) => {
                self.line += 1;
                let text = self.buf.trim_end_matches(['\n', '\r']).to_string();
                // Every line collbench writes ends with a newline, so one without it was cut
                // off (a crash or a full disk while writing): its last field may be short.
                if !self.buf.ends_with('\n') {
                    return Ok(Some(Line::Cut(text)));
                }
                if text.is_empty() {
                    return Err(self.error("empty line".into()));
                }
                Ok(Some(Line::Whole(text)))
            }
            Err(e) if e.kind() == ErrorKind::InvalidData => {
                self.line += 1;
                Err(self.error("not UTF-8 text".into()))
            }
            Err(e) => Err(Error::io(self.path, e)),
        }
    }
}

/// A line of a file being read.
enum Line {
    /// Ended by a newline.
    Whole(String),
    /// The last line, without its newline.
    Cut(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("t.csv");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn read(path: &Path) -> Result<Vec<(u32, f64, bool)>> {
        read_rows(path, "test file", &["a", "b", "c"], |row| {
            Ok((row.parse("a")?, row.float("b")?, row.boolean("c")?))
        })
    }

    #[test]
    fn columns_found_by_name_and_extra_columns_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "c,new,b,a\r\ntrue,x,0.5,7\r\nfalse,y,,8\n");
        let rows = read(&path).unwrap();
        assert_eq!((rows[0].0, rows[0].1, rows[0].2), (7, 0.5, true));
        assert!(rows[1].1.is_nan() && !rows[1].2);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("", "empty file"),
            ("a,b\n1,2\n", "lacks column(s) c"),
            ("a,b,c\n1,2,true\n1,2\n", "line 3: 2 fields"),
            ("a,b,c\n1,inf,true\n", "line 2: column b: 'inf'"),
            ("a,b,c\n-1,1,true\n", "line 2: column a: cannot read '-1'"),
            ("a,b,c\n1,1,yes\n", "line 2: column c: 'yes'"),
            ("a,b,c\n\n1,1,true\n", "line 2: empty line"),
        ];
        for (text, want) in cases {
            let path = write(dir.path(), text);
            let err = read(&path).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, Error::Input { .. }), "{msg}");
            assert!(
                msg.contains("t.csv") && msg.contains(want),
                "{text:?}: {msg}"
            );
        }
    }

    #[test]
    fn a_cut_off_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a,b,c\n1,2,true\n3,4,tr");
        let cols = ["a", "b", "c"];
        let (rows, cut) =
            read_rows_until_cut(&path, "test file", &cols, |r| r.parse::<u32>("a")).unwrap();
        assert_eq!(rows, vec![1]);
        let cut = cut.unwrap();
        assert_eq!((cut.line, cut.text.as_str()), (3, "3,4,tr"));
        let path = write(dir.path(), "a,b");
        assert!(read(&path).unwrap_err().to_string().contains("header"));
    }

    #[test]
    fn a_failed_append_leaves_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut csv = CsvFile::create(dir.path(), "t.csv", &["a", "b", "c"]).unwrap();
        csv.append("1,2,true\n").unwrap();
        // A file opened read-only fails every write, like a full disk.
        csv.file = File::open(csv.path()).unwrap();
        assert!(csv.append("3,4,false\n").is_err());
        let text = std::fs::read_to_string(csv.path()).unwrap();
        assert_eq!(text, "a,b,c\n1,2,true\n");
    }

    #[test]
    fn non_utf8_is_input_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, b"a,b,c\n\xff\xfe,1,true\n").unwrap();
        let msg = read(&path).unwrap_err().to_string();
        assert!(msg.contains("line 2: not UTF-8"), "{msg}");
    }

    #[test]
    fn floats_round_trip_and_text_is_checked() {
        for x in [
            0.1 + 0.2,
            1e-9,
            123456.789012345,
            0.0,
            -0.25,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(float(x).parse::<f64>().unwrap(), x);
        }
        assert_eq!(float(f64::NAN), "");
        assert!(text("backend", "host").is_ok());
        assert!(text("backend", "a,b").is_err());
    }
}
