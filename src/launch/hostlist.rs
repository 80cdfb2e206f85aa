//! Slurm's compressed host-list syntax, as found in `SLURM_STEP_NODELIST` and
//! `SLURM_JOB_NODELIST`: `node[01-03,07],gpu5` is node01, node02, node03, node07 and gpu5.
//!
//! The syntax (Slurm hostlist functions, e.g. `Slurm::Hostlist(3pm)` and
//! `slurm_hostlist_create(3)`): host names or bracketed lists separated by commas (or
//! whitespace); a bracket holds comma-separated numbers and inclusive ranges `lo-hi`, and the
//! digits of the low bound set the zero-padded width (`[08-10]` is 08, 09, 10). Several bracket
//! groups in one name expand as a product, leftmost outermost: `a[1-2]b[3-4]` is a1b3, a1b4,
//! a2b3, a2b4. The 3-D prism form `bgl[123x456]` of old Blue Gene systems is not supported.

use crate::error::{Error, Result};

/// The most host names one list may expand to; more is taken for a typo (`n[0-99999999]`).
pub const MAX_HOSTS: usize = 1 << 20;

/// One piece of a host-name pattern.
enum Piece {
    Text(String),
    /// The numbers of one bracket group, already formatted with their padding.
    Choice(Vec<String>),
}

/// Expands a Slurm host list into host names, in order. Every malformed list (unbalanced or
/// nested brackets, empty names or ranges, inverted ranges, non-digits inside brackets, more
/// than [`MAX_HOSTS`] names) is an [`Error::Usage`] quoting the list.
pub fn expand(list: &str) -> Result<Vec<String>> {
    let bad = |why: &str| Error::usage(format!("host list '{list}' {why}"));
    let mut hosts = Vec::new();
    for entry in split_top_level(list).map_err(|why| bad(&why))? {
        let pieces = parse_entry(entry).map_err(|why| bad(&why))?;
        let mut names = vec![String::new()];
        for piece in &pieces {
            names = match piece {
                Piece::Text(t) => names.into_iter().map(|n| n + t).collect(),
                Piece::Choice(nums) => {
                    let count = names.len().saturating_mul(nums.len());
                    if hosts.len().saturating_add(count) > MAX_HOSTS {
                        return Err(bad(&format!("expands to more than {MAX_HOSTS} hosts")));
                    }
                    let mut out = Vec::with_capacity(count);
                    for n in &names {
                        out.extend(nums.iter().map(|num| format!("{n}{num}")));
                    }
                    out
                }
            };
        }
        hosts.extend(names);
    }
    if hosts.is_empty() {
        return Err(bad("names no host"));
    }
    Ok(hosts)
}

/// Splits at commas and whitespace outside brackets, checking that brackets balance and do
/// not nest.
fn split_top_level(list: &str) -> std::result::Result<Vec<&str>, String> {
    let mut entries = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth > 0 => return Err(format!("has a nested '[' at byte {i}")),
            '[' => depth = 1,
            ']' if depth == 0 => return Err(format!("has a ']' without '[' at byte {i}")),
            ']' => depth = 0,
            c if depth == 0 && (c == ',' || c.is_ascii_whitespace()) => {
                if c == ',' && list[start..i].trim().is_empty() {
                    return Err(format!("has an empty host name before byte {i}"));
                }
                entries.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err("has a '[' that is never closed".into());
    }
    entries.push(&list[start..]);
    let trailing_comma = list.trim_end().ends_with(',');
    if trailing_comma {
        return Err("ends with a comma".into());
    }
    Ok(entries.into_iter().filter(|e| !e.is_empty()).collect())
}

/// Splits one name pattern (`a[1-2]b[3-4]c`) into literal text and bracket groups.
fn parse_entry(entry: &str) -> std::result::Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = entry;
    while let Some(open) = rest.find('[') {
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_string()));
        }
        // split_top_level guarantees a matching ']' after every '['.
        let close = open + rest[open..].find(']').ok_or("has an unclosed '['")?;
        pieces.push(Piece::Choice(parse_ranges(&rest[open + 1..close])?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    if pieces.is_empty() {
        return Err("has an empty host name".into());
    }
    Ok(pieces)
}

/// The numbers of a bracket group such as `01-03,07`, each padded to the width of its low bound.
fn parse_ranges(inner: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let is_num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !is_num(lo) || !is_num(hi) {
            return Err(format!(
                "has '[{inner}]', where '{item}' is not a number or a range lo-hi of numbers"
            ));
        }
        let parse = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| format!("has a number too large: {s}"))
        };
        let (a, b) = (parse(lo)?, parse(hi)?);
        if a > b {
            return Err(format!("has an inverted range '{item}'"));
        }
        if (b - a) as u128 + 1 + out.len() as u128 > MAX_HOSTS as u128 {
            return Err(format!("expands to more than {MAX_HOSTS} hosts"));
        }
        let width = lo.len();
        out.extend((a..=b).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand;

    fn ok(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list}: {e}"))
    }

    #[test]
    fn expands_ranges_with_leading_zeros_and_comma_lists() {
        assert_eq!(
            ok("node[01-03,07],gpu5"),
            ["node01", "node02", "node03", "node07", "gpu5"]
        );
        assert_eq!(ok("tux[8-10]"), ["tux8", "tux9", "tux10"]);
        assert_eq!(ok("n[098-101]"), ["n098", "n099", "n100", "n101"]);
        assert_eq!(ok("login1"), ["login1"]);
        assert_eq!(ok("a,b c"), ["a", "b", "c"]);
        assert_eq!(ok("rack[2]-n[1,3]"), ["rack2-n1", "rack2-n3"]);
        assert_eq!(ok("[1-2]x"), ["1x", "2x"]);
    }

    #[test]
    fn expands_several_bracket_groups_as_a_product() {
        assert_eq!(ok("a[1-2]b[3-4]"), ["a1b3", "a1b4", "a2b3", "a2b4"]);
        assert_eq!(
            ok("r[1-2]n[01-02],x"),
            ["r1n01", "r1n02", "r2n01", "r2n02", "x"]
        );
    }

    #[test]
    fn refuses_malformed_lists() {
        for (list, why) in [
            ("node[1-3", "never closed"),
            ("node1-3]", "without '['"),
            ("a[1[2]]", "nested"),
            ("n[5-3]", "inverted"),
            ("n[]", "not a number"),
            ("n[a-b]", "not a number"),
            ("n[1-]", "not a number"),
            ("n[1,,2]", "not a number"),
            ("a,,b", "empty host name"),
            (",a", "empty host name"),
            ("a,", "ends with a comma"),
            ("n[0-99999999]", "more than"),
            ("a[0-2047]b[0-1023]", "more than"),
            ("bgl[123x456]", "not a number"),
            ("   ", "names no host"),
        ] {
            let err = expand(list).expect_err(list).to_string();
            assert!(err.contains(why), "{list}: {err}");
            assert!(err.contains(list.trim_end()), "{list}: {err}");
        }
    }
}
