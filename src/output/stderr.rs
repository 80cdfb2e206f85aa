//! Lines for a person on standard error: every control character escaped, so that bytes taken
//! from a file or a peer (an ESC sequence in a CSV field, a log's rank line, a host name) are
//! shown, never obeyed by the terminal; and a closed or full stderr never panics (`eprintln!`
//! would).

use std::borrow::Cow;
use std::io::Write;

/// `text` with each control character (C0, DEL, C1; newlines too: a message is one line) as
/// its Rust escape (`\n`, `\u{1b}`); unchanged, without a copy, when it has none.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Writes `text`, made [`terminal_safe`], and a newline to stderr; a failed write is ignored.
pub fn line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", terminal_safe(text));
}

/// `eprintln!` for collbench's messages: formats, escapes control characters, never panics.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::stderr::line(&format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_shown_not_obeyed() {
        assert!(matches!(
            terminal_safe("plain, ünïcode ok"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            terminal_safe("column op: cannot read 'a\u{1b}]0;pwned\u{7}b'"),
            "column op: cannot read 'a\\u{1b}]0;pwned\\u{7}b'"
        );
        assert_eq!(terminal_safe("x\ny\r\t\u{9b}2J"), "x\\ny\\r\\t\\u{9b}2J");
    }
}
