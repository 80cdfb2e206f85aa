//! `collbench report`: one self-contained HTML page for a results folder: summary, verdict
//! (from a verdict.json of `collbench accept`, when given), the figures of `collbench plot` as
//! inline SVG, the fit's quality (a given fit.json, or one fitted on the fly), every measured
//! point, and the environment from meta.json. Nothing outside the file is referenced, so it
//! opens offline in any browser and can be attached to a ticket.
//!
//! [`page`] holds the skeleton and helpers, [`sections`] the data sections, [`verdict`] the
//! loose reader of verdict files, [`command`] the I/O edge, [`args`] the flags.

pub mod args;
pub mod command;
pub mod page;
pub mod sections;
pub mod soak;
pub mod stragglers;
pub mod verdict;

use serde_json::Value;

use crate::error::Result;
use crate::fit::schema::FitFile;
use crate::plot::draw::svg_string;
use crate::plot::figure::Figure;
use crate::plot::measured::run_name;
use crate::report::run_reader::Run;
use page::{esc, nav, page, section};

/// Everything the page shows.
pub struct ReportInput<'a> {
    pub run: &'a Run,
    pub fit: &'a FitFile,
    /// Where the fit came from, one sentence.
    pub fit_origin: String,
    /// A verdict file's JSON and its path.
    pub verdict: Option<(Value, String)>,
    pub figures: Vec<Figure>,
    /// Notes from building the figures.
    pub notes: Vec<String>,
}

/// The section ids, in page order, with their titles.
pub const SECTIONS: [(&str, &str); 8] = [
    ("summary", "Summary"),
    ("verdict", "Verdict"),
    ("figures", "Figures"),
    ("fit", "Fit quality"),
    ("points", "Measured points"),
    ("stragglers", "Stragglers"),
    ("soak", "Soak"),
    ("environment", "Environment"),
];

/// The whole HTML page.
pub fn render(input: &ReportInput<'_>) -> Result<String> {
    let name = run_name(input.run);
    let m = &input.run.meta;
    let header = format!(
        "<header>\n<h1>collbench report: {}</h1>\n<p class=\"note\">{} backend over {}, {} \
         ranks on {} node(s), started {}, status {}; written by collbench {}</p>\n</header>\n",
        esc(&name),
        esc(&m.backend),
        esc(&m.transport),
        m.ranks,
        m.nodes,
        esc(&m.started),
        esc(&sections::value_text(
            &serde_json::to_value(m.status).unwrap_or_default()
        )),
        env!("CARGO_PKG_VERSION")
    );
    let mut body = header + &nav(&SECTIONS);
    body.push_str(&section(
        "summary",
        "Summary",
        &sections::summary(input.run),
    ));
    body.push_str(&section("verdict", "Verdict", &verdict_body(input)));
    body.push_str(&section("figures", "Figures", &figures(input)?));
    body.push_str(&section(
        "fit",
        "Fit quality",
        &sections::fit_quality(input.fit, &input.fit_origin),
    ));
    body.push_str(&section(
        "points",
        "Measured points",
        &sections::points(input.run),
    ));
    body.push_str(&section(
        "stragglers",
        "Stragglers",
        &stragglers::section(input.run),
    ));
    body.push_str(&section("soak", "Soak", &soak::section(input.run)));
    body.push_str(&section(
        "environment",
        "Environment",
        &sections::environment(input.run),
    ));
    Ok(page(&format!("collbench report: {name}"), &body))
}

fn verdict_body(input: &ReportInput<'_>) -> String {
    match &input.verdict {
        Some((v, path)) => verdict::render(v, path),
        None => "<p class=\"note\">No verdict given. <code>collbench accept</code> judges a run \
                 against acceptance criteria and writes verdict.json; pass it with \
                 <code>--verdict</code> to show it here.</p>\n"
            .into(),
    }
}

/// Every figure as inline SVG with its caption.
fn figures(input: &ReportInput<'_>) -> Result<String> {
    let mut out = String::from("<div class=\"figures\">\n");
    for fig in input.figures.iter().filter(|f| !f.is_empty()) {
        // The note goes into the caption, in the page's own (larger) type.
        let mut bare = fig.clone();
        let caption = bare.note.take().unwrap_or_default();
        let svg = inline_svg(&svg_string(&bare)?, &fig.title);
        out.push_str(&format!(
            "<figure id=\"fig-{}\">\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
            esc(&fig.name),
            esc(&caption)
        ));
    }
    out.push_str("</div>\n");
    for n in &input.notes {
        out.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
    }
    Ok(out)
}

/// An SVG document made fit to sit inside HTML: no namespace URL (HTML does not need it, and
/// the page references nothing outside itself), an accessible name, and scaling by CSS.
pub fn inline_svg(svg: &str, title: &str) -> String {
    svg.replacen(
        " xmlns=\"http://www.w3.org/2000/svg\"",
        &format!(" role=\"img\" aria-label=\"{}\"", esc(title)),
        1,
    )
}
