//! Circles between the files of one module: `a.rs` uses `super::b` while `b.rs` uses
//! `super::a` (or `crate::<module>::a`). Such a pair is one idea in two files, or two ideas
//! leaning on each other; either way a change to one drags the other. Test modules are left out
//! (a test may reach anything it tests).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{code_of, group_heads, ident_at, root, rust_files};

/// A module's directory and the name of each of its child files (and child folders).
fn children(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| {
                let p = e.ok()?.path();
                let stem = p.file_stem()?.to_str()?.to_string();
                let rust = p.extension().is_some_and(|x| x == "rs") || p.is_dir();
                (rust && stem != "mod").then_some(stem)
            })
            .collect()
        })
        .unwrap_or_default()
}

/// Whether a file is test code (its module is a test module).
fn is_test(file: &Path) -> bool {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    stem == "tests" || stem.ends_with("_tests") || stem.ends_with("_props")
}

/// The siblings a file's text names, through `super::x`, `super::{x, y}` or the module's full
/// `crate::` path.
fn sibling_refs(text: &str, module_path: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let code: Vec<&str> = text.lines().map(code_of).collect();
    let joined = code.join("\n");
    let mut out = BTreeSet::new();
    let full = format!("crate::{module_path}::");
    for prefix in ["super::", full.as_str()] {
        let mut from = 0;
        while let Some(i) = joined[from..].find(prefix) {
            let at = from + i + prefix.len();
            // `super::super::x` is another module's file.
            let before_ok = prefix != "super::" || !joined[..from + i].ends_with("super::");
            let names = if joined[at..].starts_with('{') {
                group_heads(&joined[at..])
            } else {
                vec![ident_at(&joined[at..])]
            };
            if before_ok && !joined[at..].starts_with("super::") {
                out.extend(names.into_iter().filter(|n| siblings.contains(n)));
            }
            from = at;
        }
    }
    out
}

/// `text` without its `#[cfg(test)] mod name { ... }` blocks (braces matched; strings and
/// comments with unbalanced braces are not expected in them).
fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let is_mod = ["mod ", "pub(crate) mod ", "pub(super) mod "]
            .iter()
            .any(|p| after.starts_with(p));
        let open = after.find(['{', ';']);
        match (is_mod, open) {
            (true, Some(i)) if after.as_bytes()[i] == b'{' => {
                let mut depth = 0usize;
                let mut end = after.len();
                for (k, c) in after[i..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = i + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// Every file-to-file edge between the children of one module, by module path.
fn sibling_edges() -> BTreeMap<String, BTreeSet<(String, String)>> {
    let src = root().join("src");
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for file in rust_files(&src) {
        if is_test(&file) || file.file_name().is_some_and(|n| n == "mod.rs") {
            continue;
        }
        let dir: PathBuf = file.parent().unwrap().to_path_buf();
        if dir == src {
            continue;
        }
        let rel = dir.strip_prefix(&src).unwrap();
        let module_path: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        let module_path = module_path.join("::");
        let me = file.file_stem().unwrap().to_str().unwrap().to_string();
        let siblings = children(&dir);
        let text = without_test_modules(&std::fs::read_to_string(&file).unwrap());
        for to in sibling_refs(&text, &module_path, &siblings) {
            if to != me {
                out.entry(module_path.clone())
                    .or_default()
                    .insert((me.clone(), to));
            }
        }
    }
    out
}

/// The edges of `edges` that lie on a circle.
fn on_circles(edges: &BTreeSet<(String, String)>) -> Vec<(String, String)> {
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            if seen.insert(n.clone()) {
                stack.extend(edges.iter().filter(|e| e.0 == n).map(|e| e.1.clone()));
            }
        }
        false
    };
    edges
        .iter()
        .filter(|(a, b)| reaches(b, a))
        .cloned()
        .collect()
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    let mut found = Vec::new();
    for (module, edges) in sibling_edges() {
        for (a, b) in on_circles(&edges) {
            found.push(format!("  {module}: {a}.rs -> {b}.rs"));
        }
    }
    assert!(
        found.is_empty(),
        "files of one module on a circle of imports (move what both need into a file of its \
         own):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_file_reader_sees_super_groups_and_full_paths() {
    let siblings: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let text = "use super::{a, b::X};\nuse crate::m::n::c::Y;\n// super::d\n\
                use super::super::d;\n";
    let got = sibling_refs(text, "m::n", &siblings);
    assert_eq!(got, ["a", "b", "c"].map(String::from).into());
    let circle: BTreeSet<(String, String)> = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .map(|(x, y)| (x.into(), y.into()))
        .into();
    assert_eq!(on_circles(&circle).len(), 3);
    let code =
        "use super::a;\n#[cfg(test)]\nmod tests {\n    use super::b::{X};\n}\nuse super::c;\n";
    let got = sibling_refs(&without_test_modules(code), "m", &siblings);
    assert_eq!(got, ["a", "c"].map(String::from).into());
}
