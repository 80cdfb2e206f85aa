//! The HTML skeleton and the small helpers every section uses: escaping, tables, key/value
//! lists. No external resource is ever referenced: styles are inline, figures are inline SVG.

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A table cell: text (escaped when rendered) and whether it is a number (right-aligned).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub text: String,
    pub numeric: bool,
}

/// A text cell.
pub fn text(s: impl Into<String>) -> Cell {
    Cell {
        text: s.into(),
        numeric: false,
    }
}

/// A number cell.
pub fn num(s: impl Into<String>) -> Cell {
    Cell {
        text: s.into(),
        numeric: true,
    }
}

/// A table with a header row; `row_class` may mark rows (e.g. `fail`).
pub fn table(head: &[&str], rows: &[(Vec<Cell>, Option<&str>)]) -> String {
    let mut out = String::from("<table>\n<thead><tr>");
    for h in head {
        out.push_str(&format!("<th>{}</th>", esc(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (cells, class) in rows {
        match class {
            Some(c) => out.push_str(&format!("<tr class=\"{}\">", esc(c))),
            None => out.push_str("<tr>"),
        }
        for c in cells {
            let class = if c.numeric { " class=\"n\"" } else { "" };
            out.push_str(&format!("<td{class}>{}</td>", esc(&c.text)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// A two-column list of names and values.
pub fn key_values(pairs: &[(String, String)]) -> String {
    let mut out = String::from("<table class=\"kv\">\n<tbody>\n");
    for (k, v) in pairs {
        out.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>\n",
            esc(k),
            esc(v)
        ));
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// A `<section>` with an id (the table of contents links to it) and a heading.
pub fn section(id: &str, title: &str, body: &str) -> String {
    format!(
        "<section id=\"{id}\">\n<h2>{}</h2>\n{body}</section>\n",
        esc(title)
    )
}

/// A float with `digits` significant decimals, or `-` when it is not finite.
pub fn fixed(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// A fraction as a percentage with one decimal.
pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1}%", v * 100.0)
    } else {
        "-".into()
    }
}

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 0 24px 48px; color: #222; line-height: 1.4; }
header { border-bottom: 2px solid #1f77b4; margin-bottom: 8px; }
h1 { margin: 20px 0 4px; font-size: 1.7em; }
h2 { margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { margin-top: 20px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.88em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; }
thead th { background: #f0f4f8; position: sticky; top: 0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { text-align: left; background: #f7f7f7; font-weight: 600; }
tr.fail td { background: #fde8e8; }
tr.pass td { background: #eaf7ea; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 4px; font-weight: 700; }
.badge.pass { background: #2ca02c; color: #fff; }
.badge.fail { background: #d62728; color: #fff; }
.badge.other { background: #888; color: #fff; }
.note { color: #555; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 16px; }
figure { margin: 0; border: 1px solid #e4e4e4; padding: 6px; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 0.85em; color: #555; }
pre { background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 0.85em; }
details > summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
";

/// Links to the sections: (id, title).
pub fn nav(links: &[(&str, &str)]) -> String {
    let links: Vec<String> = links
        .iter()
        .map(|(id, t)| format!("<a href=\"#{id}\">{}</a>", esc(t)))
        .collect();
    format!("<nav>{}</nav>\n", links.join(""))
}

/// The whole page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_tables() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let t = table(&["x"], &[(vec![num("1"), text("<y>")], Some("fail"))]);
        assert!(t.contains("<tr class=\"fail\"><td class=\"n\">1</td><td>&lt;y&gt;</td></tr>"));
        assert_eq!(pct(0.1234), "12.3%");
        assert_eq!(fixed(f64::NAN, 2), "-");
    }
}
