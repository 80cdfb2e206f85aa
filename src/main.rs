//! `collbench`: parse once, run, map the outcome to an exit code
//! (0 ok, 1 a check failed, 2 error, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;
use collbench::cli::{exit_code, usage_error, Cli};

fn main() -> ExitCode {
    let code = match Cli::try_parse() {
        Ok(cli) => exit_code(cli.command.run()),
        Err(e) => usage_error(e),
    };
    ExitCode::from(code)
}
