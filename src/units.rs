//! Parsing and formatting of the quantities users type: sizes, factors, durations and lists.
//!
//! Size suffixes are binary, as in nccl-tests (`-b 8 -e 128M -f 2`): `K` = 2^10, `M` = 2^20,
//! `G` = 2^30, `T` = 2^40 bytes, case-insensitive, optionally followed by `B` or `iB` (`64M`,
//! `64MB` and `64MiB` are all 67108864 bytes). Every error is a one-line [`Error::Usage`] that
//! names the bad value and says what is accepted.

use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};

/// What a size may look like, appended to size errors.
const SIZE_HELP: &str = "expected a whole number of bytes with an optional binary suffix \
     K, M, G or T (1M = 2^20; B or iB may follow), e.g. 8, 64K, 128M, 1GiB";

/// Binary units from largest to smallest, for formatting.
const UNITS: [(&str, u32); 5] = [
    ("PiB", 50),
    ("TiB", 40),
    ("GiB", 30),
    ("MiB", 20),
    ("KiB", 10),
];

/// Parses a byte size such as `8`, `64K`, `128M`, `1GiB` or `2tb` (all suffixes binary).
pub fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    if digits.is_empty() {
        let why = if t.starts_with('-') {
            "is negative"
        } else {
            "is not a size"
        };
        return Err(Error::usage(format!("size '{s}' {why}; {SIZE_HELP}")));
    }
    if suffix.starts_with(['.', ',']) {
        return Err(Error::usage(format!(
            "size '{s}' is not a whole number; {SIZE_HELP}"
        )));
    }
    let shift = suffix_shift(suffix.trim())
        .ok_or_else(|| Error::usage(format!("size '{s}' has an unknown suffix; {SIZE_HELP}")))?;
    let too_large = || {
        Error::usage(format!(
            "size '{s}' is too large for this machine; {SIZE_HELP}"
        ))
    };
    let value: usize = digits.parse().map_err(|_| too_large())?;
    value.checked_mul(1usize << shift).ok_or_else(too_large)
}

/// The power of two a size suffix stands for, or `None` when the suffix is unknown.
fn suffix_shift(suffix: &str) -> Option<u32> {
    let lower = suffix.to_ascii_lowercase();
    let unit = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    match unit {
        // A bare "iB" is not a unit; only "", "b" leave nothing behind legitimately.
        "" if lower != "ib" => Some(0),
        "k" => Some(10),
        "m" => Some(20),
        "g" => Some(30),
        "t" => Some(40),
        _ => None,
    }
}

/// A compact human form of a byte count: `8 B`, `1 KiB`, `64 MiB`, `1.5 GiB`. Exact multiples
/// of a unit have no decimals; others keep up to two and at least one, so an inexact size
/// never looks exact (1025 bytes is `1.0 KiB`).
pub fn format_size(bytes: usize) -> String {
    let Some(&(name, shift)) = UNITS
        .iter()
        .find(|(_, shift)| (bytes as u128) >= (1u128 << shift))
    else {
        return format!("{bytes} B");
    };
    let unit = 1u128 << shift;
    if bytes as u128 % unit == 0 {
        return format!("{} {name}", bytes as u128 / unit);
    }
    let mut text = format!("{:.2}", bytes as f64 / unit as f64);
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.push('0');
    }
    format!("{text} {name}")
}

/// Parses the size growth factor (`-f`): an integer of at least 2.
pub fn parse_factor(s: &str) -> Result<u64> {
    match s.trim().parse::<u64>() {
        Ok(f) if f >= 2 => Ok(f),
        _ => Err(Error::usage(format!(
            "invalid factor '{s}': the factor must be an integer of at least 2 (or 1 with -i, \
             for linear steps)"
        ))),
    }
}

/// Parses a positive duration: `60s`, `2m`, `500ms`, `1h 30m` (humantime syntax), or a bare
/// number of seconds such as `60` or `0.5`.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let bad = || {
        Error::usage(format!(
            "invalid duration '{s}': expected a positive duration such as 60s, 2m or 500ms \
             (a bare number means seconds)"
        ))
    };
    let parsed = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Duration::try_from_secs_f64(secs).ok(),
        Ok(_) => None,
        Err(_) => humantime::parse_duration(t).ok(),
    };
    parsed.filter(|d| !d.is_zero()).ok_or_else(bad)
}

/// The sizes `begin, begin·f, begin·f², …` up to and including `end`, as nccl-tests builds them
/// from `-b`, `-e` and `-f`.
pub fn size_series(begin: usize, end: usize, factor: u64) -> Result<Vec<usize>> {
    if begin == 0 {
        return Err(Error::usage(
            "the smallest size (-b) must be at least 1 byte",
        ));
    }
    if end < begin {
        return Err(Error::usage(format!(
            "inverted size range: begin {} is larger than end {}; give -b <= -e",
            format_size(begin),
            format_size(end)
        )));
    }
    if factor < 2 {
        return Err(Error::usage(format!(
            "invalid factor '{factor}': the factor must be an integer of at least 2"
        )));
    }
    // A factor wider than usize can only leave `begin` in range.
    let step = usize::try_from(factor).unwrap_or(usize::MAX);
    let mut sizes = vec![begin];
    let mut next = begin.checked_mul(step);
    while let Some(size) = next.filter(|&n| n <= end) {
        sizes.push(size);
        next = size.checked_mul(step);
    }
    Ok(sizes)
}

/// The most sizes a linear series (`-i`) may hold: each is at least one measured point.
pub const MAX_LINEAR_SIZES: usize = 10_000;

/// The sizes `begin, begin+step, begin+2·step, …` up to and including `end`, as nccl-tests
/// builds them from `-b`, `-e` and `-i` (with `-f 1`); at most [`MAX_LINEAR_SIZES`].
pub fn linear_series(begin: usize, end: usize, step: usize) -> Result<Vec<usize>> {
    if step == 0 {
        return Err(Error::usage(
            "-i 0: the step between sizes must be at least 1 byte",
        ));
    }
    let count = (end.saturating_sub(begin) / step).saturating_add(1);
    if begin == 0 || end < begin || count > MAX_LINEAR_SIZES {
        return Err(Error::usage(format!(
            "-b {} -e {} -i {}: {count} sizes; give 1 <= -b <= -e and at most {MAX_LINEAR_SIZES} \
             sizes (a larger -i)",
            format_size(begin),
            format_size(end),
            format_size(step)
        )));
    }
    Ok((0..count).map(|k| begin + k * step).collect())
}

/// Parses a comma-separated list of values of a type whose parse errors are already usage
/// errors (`allreduce,allgather`). Items are trimmed; duplicates are dropped, keeping the
/// first occurrence's position.
pub fn parse_list<T>(s: &str) -> Result<Vec<T>>
where
    T: FromStr<Err = Error> + PartialEq,
{
    parse_list_with(s, T::from_str)
}

/// Like [`parse_list`], with a parser for each item (for types such as `usize` whose own parse
/// error does not explain itself, or for sizes with [`parse_size`]).
pub fn parse_list_with<T: PartialEq>(s: &str, parse: impl Fn(&str) -> Result<T>) -> Result<Vec<T>> {
    if s.trim().is_empty() {
        return Err(Error::usage("empty list: give at least one value"));
    }
    let mut values = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(Error::usage(format!(
                "empty item in list '{s}': separate values with single commas"
            )));
        }
        let value = parse(item)?;
        if !values.contains(&value) {
            values.push(value);
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_msg<T: std::fmt::Debug>(r: Result<T>) -> String {
        match r {
            Err(Error::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn sizes_are_binary() {
        let cases = [
            ("8", 8),
            ("0", 0),
            ("1K", 1024),
            ("1k", 1024),
            ("64M", 64 << 20),
            ("64MiB", 64 << 20),
            ("64MB", 64 << 20),
            ("64mb", 64 << 20),
            ("64 MiB", 64 << 20),
            ("1G", 1 << 30),
            ("2T", 2usize << 40),
            ("128B", 128),
            ("128b", 128),
            (" 4K ", 4096),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn bad_sizes_say_why() {
        for (text, why) in [
            ("", "not a size"),
            ("M", "not a size"),
            ("-8", "negative"),
            ("1.5M", "whole number"),
            ("8X", "unknown suffix"),
            ("8iB", "unknown suffix"),
            ("8KX", "unknown suffix"),
            ("99999999999999999999", "too large"),
            ("16777216T", "too large"),
        ] {
            let msg = usage_msg(parse_size(text));
            assert!(
                msg.contains(why) && msg.contains(&format!("'{text}'")),
                "{text}: {msg}"
            );
            assert!(msg.contains("K, M, G or T") && !msg.contains('\n'), "{msg}");
        }
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(8), "8 B");
        assert_eq!(format_size(1000), "1000 B");
        assert_eq!(format_size(1024), "1 KiB");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(1025), "1.0 KiB");
        assert_eq!(format_size(64 << 20), "64 MiB");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
        assert_eq!(format_size(5 << 40), "5 TiB");
        // 1.25 MiB + 1 byte rounds to two decimals.
        assert_eq!(format_size((5 << 18) + 1), "1.25 MiB");
    }

    #[test]
    fn factors() {
        assert_eq!(parse_factor("2").unwrap(), 2);
        assert_eq!(parse_factor(" 10 ").unwrap(), 10);
        for bad in ["0", "1", "-2", "two", "", "2.5"] {
            let msg = usage_msg(parse_factor(bad));
            assert!(msg.contains("integer of at least 2") && msg.contains(&format!("'{bad}'")));
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse_duration("0.25").unwrap(), Duration::from_millis(250));
        for bad in ["0", "0s", "-5", "abc", "", "inf", "NaN", "5 parsecs"] {
            let msg = usage_msg(parse_duration(bad));
            assert!(
                msg.contains(&format!("'{bad}'")) && msg.contains("60s"),
                "{msg}"
            );
        }
    }

    #[test]
    fn series_like_nccl_tests() {
        assert_eq!(size_series(8, 128, 2).unwrap(), vec![8, 16, 32, 64, 128]);
        assert_eq!(size_series(8, 100, 2).unwrap(), vec![8, 16, 32, 64]);
        assert_eq!(size_series(1, 1000, 10).unwrap(), vec![1, 10, 100, 1000]);
        assert_eq!(size_series(64, 64, 2).unwrap(), vec![64]);
        assert_eq!(size_series(3, 5, u64::MAX).unwrap(), vec![3]);
        // Growing past usize::MAX stops instead of wrapping.
        let top = size_series(1 << 60, usize::MAX, 4).unwrap();
        assert_eq!(top, vec![1 << 60, 1 << 62]);
    }

    #[test]
    fn series_errors() {
        assert!(usage_msg(size_series(0, 8, 2)).contains("at least 1 byte"));
        let msg = usage_msg(size_series(1 << 20, 1024, 2));
        assert!(
            msg.contains("inverted size range") && msg.contains("1 MiB") && msg.contains("1 KiB")
        );
        assert!(usage_msg(size_series(8, 16, 1)).contains("at least 2"));
    }

    #[test]
    fn lists() {
        // Lists of named values (ops, dtypes, ...) are tested with their enums in `named`.
        let sizes = parse_list_with(" 8, 1K ,8", parse_size).unwrap();
        assert_eq!(sizes, vec![8, 1024]);
        assert!(usage_msg(parse_list_with("8,,16", parse_size)).contains("empty item"));
        assert!(usage_msg(parse_list_with("8,", parse_size)).contains("empty item"));
        assert!(usage_msg(parse_list_with("  ", parse_size)).contains("empty list"));
        assert!(usage_msg(parse_list_with("8,bogus", parse_size)).contains("bogus"));
    }
}
