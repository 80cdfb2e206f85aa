//! Cleaning the lines of a captured log before a reader looks at them: what launchers put in
//! front of a line, and the lines that belong to the library rather than to the benchmark.

/// The text of `line` without what a launcher put before it and without surrounding white
/// space: mpirun `--tag-output` (`[1,0]<stdout>:`), Slurm `srun --label` (`0: `), and the
/// indentation some wrappers add.
pub fn strip_prefixes(line: &str) -> &str {
    let mut s = line.trim();
    loop {
        let next = strip_mpirun_tag(s)
            .or_else(|| strip_srun_label(s))
            .map(str::trim);
        match next {
            Some(rest) if rest.len() < s.len() => s = rest,
            _ => return s,
        }
    }
}

/// `[1,0]<stdout>: text` → `text` (Open MPI's `--tag-output`; `<stderr>` and `<stddiag>` too).
fn strip_mpirun_tag(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('[')?;
    let close = rest.find(']')?;
    let ids = &rest[..close];
    if ids.is_empty() || !ids.chars().all(|c| c.is_ascii_digit() || c == ',') {
        return None;
    }
    let rest = rest[close + 1..].strip_prefix('<')?;
    let end = rest.find(">:")?;
    if !rest[..end].chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    Some(&rest[end + 2..])
}

/// `12: text` → `text` (Slurm's `srun --label`). A table row never holds a colon right after
/// its first number, so this cannot eat one.
fn strip_srun_label(s: &str) -> Option<&str> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 6 {
        return None;
    }
    s[digits..].strip_prefix(": ").or_else(|| {
        let rest = s[digits..].strip_prefix(':')?;
        rest.is_empty().then_some(rest)
    })
}

/// Whether a (cleaned) line is the collective library's own output (`host:pid:tid [dev] NCCL
/// INFO ...`, `NCCL WARN`) rather than the benchmark's.
pub fn is_library_line(s: &str) -> bool {
    s.contains("NCCL INFO") || s.contains("NCCL WARN") || s.contains("NCCL TRACE")
}

/// The words of a comment line (`#` and the white space after it removed); `None` for a line
/// that is not a comment.
pub fn comment_words(s: &str) -> Option<Vec<&str>> {
    let body = s.strip_prefix('#')?;
    Some(body.split_whitespace().collect())
}

/// The step of the last printed digit of a number: `39.51` → 0.01, `1234` → 1, `1.6e+07` →
/// 1e6. A printed value stands for anything within half a step of it.
pub fn last_digit_step(token: &str) -> f64 {
    let (mantissa, exponent) = match token.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (token, 0),
    };
    let decimals = match mantissa.split_once('.') {
        Some((_, frac)) => frac.bytes().take_while(u8::is_ascii_digit).count() as i32,
        None => 0,
    };
    10f64.powi((exponent - decimals).clamp(-30, 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_prefixes_are_removed() {
        assert_eq!(strip_prefixes("[1,0]<stdout>:#  Rank  0"), "#  Rank  0");
        assert_eq!(
            strip_prefixes("[1,12]<stderr>:   8  2  float"),
            "8  2  float"
        );
        assert_eq!(strip_prefixes("  3: # nThread 1"), "# nThread 1");
        assert_eq!(strip_prefixes("\t 1024   256 float\r"), "1024   256 float");
        // A row's first number is not a label.
        assert_eq!(strip_prefixes("8  2  float sum"), "8  2  float sum");
        assert_eq!(strip_prefixes("[host:1]<x>: y"), "[host:1]<x>: y");
    }

    #[test]
    fn library_lines_and_printed_steps() {
        assert!(is_library_line(
            "dgx1:1234:1240 [0] NCCL INFO Using network IB"
        ));
        assert!(!is_library_line("# nThread 1 nGpus 8"));
        assert_eq!(last_digit_step("39.51"), 0.01);
        assert_eq!(last_digit_step("1234"), 1.0);
        assert_eq!(last_digit_step("12.0"), 0.1);
        assert_eq!(last_digit_step("1.6e+07"), 1e6);
        assert_eq!(last_digit_step("2e-07"), 1e-7);
    }
}
