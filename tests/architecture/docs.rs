//! docs/ARCHITECTURE.md names files; every one it names exists (relative to the repository,
//! to src/, or as the tail of a path under src/ or tests/, as its tables write them).

use super::{root, rust_files};

/// The backticked names in `text` that end in a file extension collbench keeps.
fn named_files(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            !t.contains(' ')
                && [".rs", ".md", ".sh", ".toml", ".txt"]
                    .iter()
                    .any(|e| t.ends_with(e))
        })
        .map(str::to_string)
        .collect()
}

fn exists(name: &str) -> bool {
    let r = root();
    if r.join(name).exists() || r.join("src").join(name).exists() {
        return true;
    }
    let tail = format!("/{name}");
    ["src", "tests"].iter().any(|d| {
        rust_files(&r.join(d))
            .iter()
            .any(|f| f.to_string_lossy().ends_with(&tail))
    })
}

#[test]
fn every_file_architecture_md_names_exists() {
    let text = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let named = named_files(&text);
    assert!(named.len() > 20, "the reader found only {named:?}");
    let missing: Vec<&String> = named.iter().filter(|n| !exists(n)).collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names files that are not there: {missing:?}"
    );
}
