//! Changes to a log (flipped bytes, deleted, duplicated and inserted lines, truncation) and
//! the strategies that draw them.

use super::inputs::JUNK;
use proptest::prelude::*;
use proptest::sample::Index;

/// One change to a log.
#[derive(Clone, Debug)]
pub(crate) enum Mutation {
    /// XOR one byte (the text is read back lossily where that breaks UTF-8).
    Flip(Index, u8),
    DeleteLine(Index),
    DuplicateLine(Index),
    /// A line of junk before the line at the index.
    Insert(Index, String),
    /// Cut the text at a byte.
    Truncate(Index),
}

pub(crate) fn junk_line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(JUNK).prop_map(str::to_string),
        2 => "\\PC{0,60}",
        2 => "[0-9a-z#.:+\\-/ \\[\\]<>]{0,60}",
        1 => (prop::sample::select(JUNK), prop::sample::select(JUNK))
            .prop_map(|(a, b)| format!("{a} {b}")),
    ]
}

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        2 => any::<Index>().prop_map(Mutation::DeleteLine),
        2 => any::<Index>().prop_map(Mutation::DuplicateLine),
        3 => (any::<Index>(), junk_line()).prop_map(|(i, s)| Mutation::Insert(i, s)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
    ]
}

pub(crate) fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..8)
}

pub(crate) fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut text = text.to_string();
    for m in mutations {
        text = match m {
            Mutation::Flip(at, x) => {
                let mut bytes = text.into_bytes();
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] ^= x;
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Mutation::Truncate(at) => {
                let mut i = at.index(text.len() + 1);
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                text[..i].to_string()
            }
            Mutation::DeleteLine(at) | Mutation::DuplicateLine(at) | Mutation::Insert(at, _) => {
                let mut lines: Vec<String> =
                    text.split_inclusive('\n').map(str::to_string).collect();
                let i = at.index(lines.len() + 1);
                match m {
                    Mutation::DeleteLine(_) if i < lines.len() => {
                        lines.remove(i);
                    }
                    Mutation::DuplicateLine(_) if i < lines.len() => {
                        let copy = lines[i].clone();
                        lines.insert(i, copy);
                    }
                    Mutation::Insert(_, junk) => {
                        if i == lines.len() && lines.last().is_some_and(|l| !l.ends_with('\n')) {
                            lines.push(format!("\n{junk}"));
                        } else {
                            lines.insert(i, format!("{junk}\n"));
                        }
                    }
                    _ => {}
                }
                lines.concat()
            }
        };
    }
    text
}
