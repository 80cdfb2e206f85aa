//! The one font of every figure, DejaVu Sans (assets/fonts/, licence beside it), compiled into
//! the binary so that PNG text needs no font installed on the machine. SVG figures name the
//! family `sans-serif` and let the viewer draw it.

use std::sync::Once;

use plotters::style::{register_font, FontStyle};

/// The font file, embedded.
static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// The family name figures ask for.
pub const FAMILY: &str = "sans-serif";

/// Registers the embedded font under [`FAMILY`] (once per process).
pub fn ensure_registered() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a known-good TrueType file checked by a unit test, so a failure here
        // would be a build defect; figures then fall back to no text rather than a panic.
        let _ = register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS);
        let _ = register_font(FAMILY, FontStyle::Bold, DEJAVU_SANS);
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_font_parses() {
        assert!(plotters::style::register_font(
            "collbench-test",
            plotters::style::FontStyle::Normal,
            super::DEJAVU_SANS
        )
        .is_ok());
    }
}
