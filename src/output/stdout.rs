//! Standard output of every command. `println!` panics when stdout is closed or full; here a
//! closed pipe (`collbench compare A B | head -1`) quietly ends the output, and any other write
//! error is kept so that `main` ends the process with one line on stderr and exit code 2.

use std::io::{ErrorKind, Write};
use std::sync::Mutex;

/// What became of standard output so far.
#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// The reader went away (EPIPE): nothing more is written, and that is no error.
    Closed,
    /// A write failed otherwise (e.g. ENOSPC); the error's text.
    Failed(String),
}

static STATE: Mutex<State> = Mutex::new(State::Open);

/// Writes `text` to stdout and flushes it; after a failure nothing more is written.
pub fn print(text: &str) {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if *state != State::Open {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        *state = match e.kind() {
            ErrorKind::BrokenPipe => State::Closed,
            _ => State::Failed(e.to_string()),
        };
    }
}

/// [`print`] with a newline.
pub fn println(text: &str) {
    print(&format!("{text}\n"));
}

/// The line to end the process with when a write to stdout failed other than by a closed pipe.
pub fn failure() -> Option<String> {
    match &*STATE.lock().unwrap_or_else(|e| e.into_inner()) {
        State::Failed(e) => Some(format!(
            "cannot write to standard output: {e}; free space where it goes or send it elsewhere"
        )),
        State::Open | State::Closed => None,
    }
}
