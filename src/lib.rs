//! placeholder
pub mod collective;
pub mod error;
