//! `collbench plot`: the figures people expect from a collective benchmark, as PNG (text drawn
//! with an embedded font, so no system font is needed) and SVG.
//!
//! - [`figure`]: a figure as plain data (axes, series, styles); [`ticks`]: axis ranges and tick
//!   labels (powers of two for sizes and GPUs, decades for times); [`draw`]: plotters; [`placement`]: the legend's corner.
//! - [`measured`]: busbw (log x) and latency (log-log) by message size, per op, one line per
//!   algorithm and world size; [`worlds`]: both by world size at chosen sizes;
//!   [`fitlines`]: fitted alpha-beta regimes and cross-world models from a fit.json;
//!   [`projection`]: throughput, MFU, tokens per joule and scaling efficiency by GPUs, per
//!   layout.
//! - [`command`]: reads the inputs and writes the files; [`args`]: the flags.
//!
//! The HTML report (`crate::html`) draws the same figures as inline SVG.

pub mod args;
pub mod command;
pub mod draw;
pub mod figure;
pub mod fitlines;
pub mod font;
pub mod measured;
pub mod panels;
pub mod placement;
pub mod projection;
pub mod ticks;
pub mod worlds;
