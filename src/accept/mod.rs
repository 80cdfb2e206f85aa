//! `collbench accept`: judge measurements against acceptance criteria.
//!
//! A criteria file ([`criteria`], its `[sweep]` table in [`sweep_spec`], its point selectors
//! in [`selector`], its thresholds in [`thresholds`]) names what to sweep and what every
//! selected point must meet (bandwidth, latency, variation, rank and node skew, agreement with
//! a reference fit, correctness).
//! [`measure`] reads the results folders of one or more repeats and groups each point's
//! repeats together; [`judge`] applies the stated statistic across the repeats and compares it
//! with each threshold ([`skew`] computes rank and node skew from ranks.csv, [`stragglers`] the
//! slowest rank's and node's bias from samples.csv and the verdict's stragglers over time);
//! [`verdict`] holds the outcome (verdict.json) with a stable code for every failure
//! ([`reason`]), [`table`] prints it and [`junit`] writes it as JUnit XML.
//! [`command`] ties them together.
//!
//! Everything but `measure`, `command` and the file reading of `criteria` is pure: numbers in,
//! numbers and text out. The method is described in docs/ACCEPTANCE.md.

pub mod args;
pub mod baseline;
pub mod command;
pub mod criteria;
pub mod expect;
pub mod expect_model;
pub mod expect_profile;
pub mod judge;
pub mod junit;
pub mod measure;
pub mod placement;
pub mod reason;
pub mod run_cause;
pub mod selector;
pub mod skew;
pub mod stragglers;
pub mod sweep_spec;
pub mod table;
pub mod thresholds;
pub mod verdict;
