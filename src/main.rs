//! `collbench`: parse once, run, map the outcome to an exit code
//! (0 ok, 1 a check failed, 2 error, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;
use collbench::cli::Cli;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    match cli.command.run() {
        Ok(code) => match collbench::output::stdout::failure() {
            Some(line) => {
                eprintln!("collbench: {line}");
                ExitCode::from(2)
            }
            None => ExitCode::from(code),
        },
        Err(e) => {
            eprintln!("collbench: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Help and version go out as clap writes them; a usage error becomes one line on stderr, like
/// every other error, with clap's tips kept and its usage block left out.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    eprintln!("collbench: {}", one_line(&e.render().to_string()));
    ExitCode::from(2)
}

/// The message and tips of a rendered clap error on one line.
fn one_line(text: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line));
    }
    let mut msg = parts.join("; ");
    msg.push_str("; see --help");
    msg
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_errors_fold_to_one_line() {
        let text = "error: unexpected argument '--opp' found\n\n  tip: a similar argument exists: '--op'\n\nUsage: collbench sweep --op <OP>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "unexpected argument '--opp' found; tip: a similar argument exists: '--op'; see --help"
        );
    }
}
