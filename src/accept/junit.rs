//! The verdict as JUnit XML, for CI systems: one `<testsuite>` per criterion and one
//! `<testcase>` per point it matched (all repeats of the point), with a `<failure>` naming every
//! threshold not met (its `type` their reason codes, comma separated: `bandwidth-low,unstable`),
//! or an `<error>` of type `no-data` when the point could not be judged. A criterion that
//! matched no point is one testcase with an `<error>`, never a silent pass. A results folder that
//! did not complete is a testcase of the suite `results folders` with an `<error>` of type
//! `run-incomplete`, and `hang` or `rank-missing` where its error says so.

use super::table::{exact, value};
use super::verdict::{CheckVerdict, CriterionVerdict, Outcome, PointVerdict, RunView, Verdict};

/// The document.
pub fn render(v: &Verdict) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let (tests, failures, errors) = tally(&v.criteria);
    let broken: Vec<&RunView> = v.runs.iter().filter(|r| r.status != "complete").collect();
    let (tests, errors) = (tests + broken.len(), errors + broken.len());
    x.push_str(&format!(
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n",
        esc(&format!("collbench accept {}", v.name))
    ));
    for cv in &v.criteria {
        suite(&mut x, v, cv);
    }
    if !broken.is_empty() {
        runs_suite(&mut x, &broken);
    }
    x.push_str("</testsuites>\n");
    x
}

/// The results folders that did not complete, an `<error>` each.
fn runs_suite(x: &mut String, broken: &[&RunView]) {
    let n = broken.len();
    x.push_str(&format!(
        "  <testsuite name=\"results folders\" tests=\"{n}\" failures=\"0\" errors=\"{n}\" \
         skipped=\"0\">\n"
    ));
    for r in broken {
        let error = r.error.as_deref().unwrap_or("");
        let mut codes = String::from("run-incomplete");
        if let Some((code, _)) = super::run_cause::of_run(r.failure.as_ref()) {
            codes.push_str(&format!(",{code}"));
        }
        x.push_str(&format!(
            "    <testcase classname=\"collbench.accept.runs\" name=\"{}\" time=\"0\">\n      \
             <error type=\"{codes}\" message=\"{}\"/>\n    </testcase>\n",
            esc(&r.path),
            esc(&format!("status {}: {error}", r.status))
        ));
    }
    x.push_str("  </testsuite>\n");
}

/// (testcases, failures, errors) over all criteria.
fn tally(criteria: &[CriterionVerdict]) -> (usize, usize, usize) {
    let mut t = (0, 0, 0);
    for cv in criteria {
        let (a, b, c) = suite_counts(cv);
        t = (t.0 + a, t.1 + b, t.2 + c);
    }
    t
}

fn suite_counts(cv: &CriterionVerdict) -> (usize, usize, usize) {
    if cv.points.is_empty() {
        return (1, 0, 1);
    }
    let count = |o: Outcome| cv.points.iter().filter(|p| p.result == o).count();
    (
        cv.points.len(),
        count(Outcome::Fail),
        count(Outcome::NoData),
    )
}

fn suite(x: &mut String, v: &Verdict, cv: &CriterionVerdict) {
    let (tests, failures, errors) = suite_counts(cv);
    x.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" \
         skipped=\"0\" timestamp=\"{}\">\n",
        esc(&cv.name),
        esc(&v.created)
    ));
    x.push_str(&format!(
        "    <properties>\n      <property name=\"selector\" value=\"{}\"/>\n      \
         <property name=\"stat\" value=\"{}\"/>\n      <property name=\"repeats\" \
         value=\"{}\"/>\n    </properties>\n",
        esc(&cv.selector),
        esc(&cv.stat),
        v.repeats
    ));
    let class = esc(&format!("collbench.accept.{}", cv.name));
    if cv.points.is_empty() {
        let msg = cv.note.clone().unwrap_or_else(|| "matched no point".into());
        x.push_str(&format!(
            "    <testcase classname=\"{class}\" name=\"no matching point\" time=\"0\">\n      \
             <error type=\"no-data\" message=\"{}\"/>\n    </testcase>\n",
            esc(&msg)
        ));
    }
    for p in &cv.points {
        testcase(x, &class, p);
    }
    x.push_str("  </testsuite>\n");
}

fn testcase(x: &mut String, class: &str, p: &PointVerdict) {
    x.push_str(&format!(
        "    <testcase classname=\"{class}\" name=\"{}\" time=\"0\">\n",
        esc(&p.label)
    ));
    let failed: Vec<&CheckVerdict> = p
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail)
        .collect();
    let missing: Vec<&CheckVerdict> = p
        .checks
        .iter()
        .filter(|c| c.result == Outcome::NoData)
        .collect();
    let details: Vec<String> = p.checks.iter().map(describe).collect();
    if !failed.is_empty() {
        let mut msg: Vec<String> = failed.iter().map(|c| describe(c)).collect();
        msg.extend(p.blame());
        // The reason codes of the failed checks, each once, in check order.
        let mut codes: Vec<String> = Vec::new();
        for code in failed.iter().filter_map(|c| c.reason) {
            if !codes.contains(&code.to_string()) {
                codes.push(code.to_string());
            }
        }
        x.push_str(&format!(
            "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
            esc(&codes.join(",")),
            esc(&msg.join("; ")),
            esc_text(&details.join("\n"))
        ));
    } else if !missing.is_empty() {
        let msg: Vec<String> = missing.iter().map(|c| describe(c)).collect();
        x.push_str(&format!(
            "      <error type=\"no-data\" message=\"{}\">{}</error>\n",
            esc(&msg.join("; ")),
            esc_text(&details.join("\n"))
        ));
    } else {
        x.push_str(&format!(
            "      <system-out>{}</system-out>\n",
            esc_text(&details.join("\n"))
        ));
    }
    x.push_str("    </testcase>\n");
}

/// `min_busbw_gbps: 1.234 GB/s, threshold >= 2.000 GB/s, margin -38.3%: FAIL`.
fn describe(c: &CheckVerdict) -> String {
    let op = if c.check == "min_busbw_gbps" {
        ">="
    } else {
        "<="
    };
    let measured = c.measured.map_or("no data".into(), |m| value(m, &c.unit));
    let margin = c
        .margin_pct
        .map_or(String::new(), |m| format!(", margin {m:+.1}%"));
    let note = c.note.as_ref().map_or(String::new(), |n| format!(" ({n})"));
    format!(
        "{}: {measured}, threshold {op} {}{margin}: {}{note}",
        c.check,
        exact(c.threshold, &c.unit),
        c.result.label()
    )
}

/// Escapes text for an XML attribute or element: the five predefined entities, and characters
/// XML 1.0 does not allow (control characters other than tab, newline and carriage return)
/// replaced by U+FFFD. Newlines and tabs in attributes are kept as character references so
/// that attribute normalisation does not turn them into spaces.
pub fn esc(s: &str) -> String {
    escape(s, true)
}

/// Escapes element text: as [`esc`], but newlines and tabs stay as they are.
pub fn esc_text(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' if !attribute => out.push(ch),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_forbidden_characters() {
        assert_eq!(
            esc("a<b & \"c\" > 'd'"),
            "a&lt;b &amp; &quot;c&quot; &gt; &apos;d&apos;"
        );
        assert_eq!(esc("x\u{1}y\nz"), "x\u{FFFD}y&#10;z");
        assert_eq!(esc("µs ✓"), "µs ✓");
        assert_eq!(esc_text("a\nb\t<c>\r"), "a\nb\t&lt;c&gt;&#13;");
    }
}
