//! The module graph against the layers of docs/ARCHITECTURE.md: vocabulary at the bottom,
//! commands at the top, no import that climbs back up and no circle within a layer.
//!
//! The graph is read from the source: every `crate::<module>` path outside comments (including
//! `use crate::{a, b::c}` groups) is an edge from the top-level module of the file to
//! `<module>`. The imports that break the rules today are listed, one `from -> to` per line, in
//! tests/data/architecture-debt.txt; a new one fails this test with the file and line that makes
//! it, and so does a listed one that is gone (take it off the list: the debt only shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers from the bottom; a module may use modules of its own layer (without circles) and
/// of the layers below. Every top-level module of src/ must be in exactly one.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "vocabulary",
        &[
            "error",
            "digest",
            "named",
            "units",
            "physical",
            "stats",
            "collective",
            "check",
            "model",
            "test_skip",
        ],
    ),
    ("results", &["output", "input", "meta", "report"]),
    ("engines", &["launch", "backend"]),
    ("sweep", &["sweep"]),
    (
        "commands",
        &[
            "fit", "project", "compare", "plot", "accept", "import", "html",
        ],
    ),
    ("command line", &["cli"]),
];

const DEBT: &str = "tests/data/architecture-debt.txt";

type Edge = (String, String);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

/// Every .rs file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file of src/ belongs to (`None` for lib.rs and main.rs).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    // `cli_tests.rs` and its like are `#[path]` test modules of `cli`.
    let name = name.strip_suffix("_tests").unwrap_or(name);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The code of a line without its `//` comment (doc links are not imports).
fn code_of(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Top-level module names a text refers to through `crate::`, with the line of each.
fn crate_refs(text: &str) -> Vec<(String, usize)> {
    let code: Vec<&str> = text.lines().map(code_of).collect();
    let joined = code.join("\n");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = joined[from..].find("crate::") {
        let at = from + i + "crate::".len();
        let line = joined[..at].matches('\n').count() + 1;
        if joined[at..].starts_with('{') {
            out.extend(group_heads(&joined[at..]).into_iter().map(|m| (m, line)));
        } else {
            out.push((ident_at(&joined[at..]), line));
        }
        from = at;
    }
    out
}

fn ident_at(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first path segment of each item of a `{a::b, c, d::{e}}` group.
fn group_heads(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut expect_head = false;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                expect_head = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expect_head = true,
            c if expect_head && (c.is_alphanumeric() || c == '_') => {
                out.push(ident_at(&s[i..]));
                expect_head = false;
            }
            _ => {}
        }
    }
    out
}

/// Each module-level edge with the first place that makes it.
fn edges() -> BTreeMap<Edge, String> {
    let src = root().join("src");
    let mut out = BTreeMap::new();
    for file in rust_files(&src) {
        let Some(from) = top_module(&src, &file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (to, line) in crate_refs(&text) {
            if to != from && layer_of(&to).is_some() {
                let place = format!("{}:{line}", file.strip_prefix(root()).unwrap().display());
                out.entry((from.clone(), to)).or_insert(place);
            }
        }
    }
    out
}

/// Edges inside a circle of one layer's modules (Floyd-Warshall reachability over the edges
/// within layers: a handful of modules). A circle through another layer has an upward edge,
/// which is found as such.
fn circular(all: &BTreeSet<Edge>) -> BTreeSet<Edge> {
    let same_layer = |(a, b): &&Edge| layer_of(a) == layer_of(b);
    let edges: BTreeSet<&Edge> = all.iter().filter(same_layer).collect();
    let names: Vec<String> = edges
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let at = |n: &str| names.iter().position(|m| m == n).unwrap();
    let n = names.len();
    let mut reach = vec![vec![false; n]; n];
    for (a, b) in &edges {
        reach[at(a)][at(b)] = true;
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                reach[i][j] |= reach[i][k] && reach[k][j];
            }
        }
    }
    edges
        .into_iter()
        .filter(|e| reach[at(&e.1)][at(&e.0)])
        .cloned()
        .collect()
}

/// The edges that break the rules: upward, or inside a circle within a layer.
fn violations(all: &BTreeMap<Edge, String>) -> BTreeSet<Edge> {
    let set: BTreeSet<Edge> = all.keys().cloned().collect();
    let upward = set
        .iter()
        .filter(|(a, b)| layer_of(b) > layer_of(a))
        .cloned();
    upward.chain(circular(&set)).collect()
}

fn debt() -> BTreeSet<Edge> {
    let text = std::fs::read_to_string(root().join(DEBT)).unwrap();
    text.lines()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (a, b) = l
                .split_once("->")
                .unwrap_or_else(|| panic!("{DEBT}: '{l}'"));
            (a.trim().to_string(), b.trim().to_string())
        })
        .collect()
}

fn describe((a, b): &Edge) -> String {
    let name = |m: &str| LAYERS[layer_of(m).unwrap()].0;
    format!("{a} ({}) -> {b} ({})", name(a), name(b))
}

#[test]
fn every_top_level_module_has_one_layer() {
    let src = root().join("src");
    let mut tops: BTreeSet<String> = BTreeSet::new();
    for file in rust_files(&src) {
        tops.extend(top_module(&src, &file));
    }
    let unplaced: Vec<_> = tops.iter().filter(|m| layer_of(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "add {unplaced:?} to LAYERS in {}",
        file!()
    );
    let placed: Vec<&str> = LAYERS
        .iter()
        .flat_map(|(_, ms)| ms.iter().copied())
        .collect();
    let unique: BTreeSet<&str> = placed.iter().copied().collect();
    assert_eq!(unique.len(), placed.len(), "a module is in two layers");
    let gone: Vec<_> = placed.iter().filter(|m| !tops.contains(**m)).collect();
    assert!(
        gone.is_empty(),
        "LAYERS names modules that are gone: {gone:?}"
    );
}

#[test]
fn no_import_climbs_a_layer_or_closes_a_circle_beyond_the_listed_debt() {
    let all = edges();
    let found = violations(&all);
    let listed = debt();
    let new: Vec<String> = found
        .difference(&listed)
        .map(|e| format!("  {} at {}", describe(e), all[e]))
        .collect();
    assert!(
        new.is_empty(),
        "imports against docs/ARCHITECTURE.md's layers (move the shared item down a layer, \
         or pass it in):\n{}",
        new.join("\n")
    );
    let paid: Vec<String> = listed
        .difference(&found)
        .map(|(a, b)| format!("  {a} -> {b}"))
        .collect();
    assert!(
        paid.is_empty(),
        "no longer imported that way: take these lines off {DEBT}:\n{}",
        paid.join("\n")
    );
}

#[test]
fn the_reader_finds_grouped_and_plain_paths_and_skips_comments() {
    let text = "use crate::{fit::x, report::{a, b}, units};\n\
                // crate::plot is only mentioned\n\
                let y = crate::meta::Meta::new(); /// crate::sweep\n";
    let got: Vec<(String, usize)> = crate_refs(text);
    let want = [("fit", 1), ("report", 1), ("units", 1), ("meta", 3)];
    let want: Vec<(String, usize)> = want.iter().map(|(m, l)| (m.to_string(), *l)).collect();
    assert_eq!(got, want);
}

#[test]
fn a_circle_within_a_layer_is_found_and_a_chain_is_not() {
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    let chain: BTreeSet<Edge> = [e("fit", "project"), e("project", "plot")].into();
    assert!(circular(&chain).is_empty());
    let mut circle = chain.clone();
    circle.insert(e("plot", "fit"));
    assert_eq!(circular(&circle), circle);
}

/// Files stay readable in one sitting: none over this many lines (split along a seam instead).
const MAX_FILE_LINES: usize = 400;

#[test]
fn no_source_file_is_over_400_lines() {
    let mut long = Vec::new();
    for dir in ["src", "tests"] {
        for file in rust_files(&root().join(dir)) {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > MAX_FILE_LINES {
                long.push(format!(
                    "  {} ({lines})",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines; split along a seam:\n{}",
        long.join("\n")
    );
}

#[path = "architecture/files.rs"]
mod files;

#[path = "architecture/docs.rs"]
mod docs;

/// The commands that build on another command today (fit is everybody's model; the report draws
/// plot's figures; compare judges with accept's noise rules; plot draws projections). Any other
/// edge between two commands is new coupling: share the item through a lower layer instead, or
/// add the edge here knowingly.
const COMMAND_EDGES: [(&str, &str); 8] = [
    ("accept", "fit"),
    ("compare", "accept"),
    ("compare", "fit"),
    ("html", "fit"),
    ("html", "plot"),
    ("plot", "fit"),
    ("plot", "project"),
    ("project", "fit"),
];

#[test]
fn commands_import_each_other_only_where_they_build_on_each_other() {
    let commands = LAYERS
        .iter()
        .find(|(name, _)| *name == "commands")
        .unwrap()
        .1;
    let allowed: BTreeSet<Edge> = COMMAND_EDGES
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let all = edges();
    let between: BTreeSet<&Edge> = all
        .keys()
        .filter(|(a, b)| commands.contains(&a.as_str()) && commands.contains(&b.as_str()))
        .collect();
    let new: Vec<String> = between
        .iter()
        .filter(|e| !allowed.contains(**e))
        .map(|e| format!("  {} -> {} at {}", e.0, e.1, all[*e]))
        .collect();
    assert!(
        new.is_empty(),
        "new edges between commands:\n{}",
        new.join("\n")
    );
    let gone: Vec<&Edge> = allowed.iter().filter(|e| !between.contains(e)).collect();
    assert!(
        gone.is_empty(),
        "no longer imported: take {gone:?} off COMMAND_EDGES"
    );
}
