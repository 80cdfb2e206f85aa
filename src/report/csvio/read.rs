//! Reading a results CSV: columns located by name, typed fields with errors that name the file,
//! line and column, and a last line cut off by a crash told apart from a bad one.

use std::fmt::Display;
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};

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
    crate::say!(
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
        let cap = crate::input::MAX_LINE_BYTES;
        match (&mut self.reader).take(cap + 1).read_line(&mut self.buf) {
            Ok(n) if n as u64 > cap => {
                self.line += 1;
                Err(self.error(format!(
                    "a line longer than {} KiB; not a collbench results file",
                    cap >> 10
                )))
            }
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
