//! The communicator's configuration (`ncclConfig_t`), as nccl-tests 2.19.6 makes it
//! (`initComms` in src/common.cu): `NCCL_CONFIG_INITIALIZER`, `nvlinkCentricSched = 1` from
//! NCCL 2.28 on, and the CTA policy of `-x` (collbench `--cta-policy`) from 2.27 on. Plain data;
//! [`super::loader`] hands it to `ncclCommInitRankConfig` where the library has it (2.14+).

use std::os::raw::c_uint;

use super::loader::Version;
use super::sys;
pub use crate::model::call::CtaPolicy;

/// The `NCCL_CTA_POLICY_*` value of a policy.
pub fn policy_raw(p: CtaPolicy) -> i32 {
    match p {
        CtaPolicy::Default => sys::NCCL_CTA_POLICY_DEFAULT,
        CtaPolicy::Efficiency => sys::NCCL_CTA_POLICY_EFFICIENCY,
        CtaPolicy::Zero => sys::NCCL_CTA_POLICY_ZERO,
    }
}

/// `NCCL_CONFIG_INITIALIZER` of the layout [`sys::ncclConfig_t`] declares: every attribute
/// left to the library.
pub fn initializer() -> sys::ncclConfig_t {
    let undef = sys::NCCL_CONFIG_UNDEF_INT;
    sys::ncclConfig_t {
        size: std::mem::size_of::<sys::ncclConfig_t>(),
        magic: sys::NCCL_API_MAGIC,
        version: sys::NCCL_CONFIG_LAYOUT_VERSION as c_uint,
        blocking: undef,
        cgaClusterSize: undef,
        minCTAs: undef,
        maxCTAs: undef,
        netName: std::ptr::null(),
        splitShare: undef,
        trafficClass: undef,
        commName: std::ptr::null(),
        collnetEnable: undef,
        CTAPolicy: undef,
        shrinkShare: undef,
        nvlsCTAs: undef,
        nChannelsPerNetPeer: undef,
        nvlinkCentricSched: undef,
        graphUsageMode: undef,
        numRmaCtx: undef,
        maxP2pPeers: undef,
        graphStreamOrdering: undef,
        launchOrderImplicit: undef,
        numRmaSig: undef,
        rmaEagerInit: undef,
        hostCftMode: undef,
        nvlsHostMode: undef,
    }
}

/// The configuration of every communicator collbench makes with `library`: nccl-tests' own
/// (`nvlinkCentricSched = 1` from 2.28), with `policy` where asked. A policy the library
/// predates is refused by [`check_policy`] before any communicator exists.
pub fn comm_config(library: Version, policy: Option<CtaPolicy>) -> sys::ncclConfig_t {
    let mut c = initializer();
    if (library.major, library.minor) >= (2, 28) {
        c.nvlinkCentricSched = 1;
    }
    if let Some(p) = policy {
        c.CTAPolicy = policy_raw(p);
    }
    c
}

/// Refuses `--cta-policy` on a library older than the policy, naming both.
pub fn check_policy(policy: Option<CtaPolicy>, library: Version) -> Result<(), String> {
    let Some(p) = policy else { return Ok(()) };
    let since = p.since();
    if (library.major, library.minor) < since {
        return Err(format!(
            "--cta-policy {p} needs NCCL {}.{} or later; this library is NCCL {library}: drop \
             --cta-policy or point COLLBENCH_NCCL_LIB at a newer libnccl.so.2",
            since.0, since.1
        ));
    }
    Ok(())
}

/// What meta.json records of the configuration (the attributes collbench set).
pub fn describe(c: &sys::ncclConfig_t) -> serde_json::Value {
    let set = |v: i32| (v != sys::NCCL_CONFIG_UNDEF_INT).then_some(v);
    serde_json::json!({
        "nvlinkCentricSched": set(c.nvlinkCentricSched),
        "CTAPolicy": set(c.CTAPolicy),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(minor: i32) -> Version {
        Version {
            major: 2,
            minor,
            patch: 3,
        }
    }

    #[test]
    fn the_initializer_leaves_everything_to_the_library() {
        let c = initializer();
        assert_eq!(c.size, 120, "nccl.h 2.32 on 64-bit Linux");
        assert_eq!((c.magic, c.version), (0xcafe_beef, 23203));
        assert_eq!((c.blocking, c.nvlinkCentricSched), (i32::MIN, i32::MIN));
        assert!(c.netName.is_null() && c.commName.is_null());
    }

    #[test]
    fn nvlink_centric_scheduling_from_2_28_as_nccl_tests_and_the_policy_where_asked() {
        assert_eq!(comm_config(v(27), None).nvlinkCentricSched, i32::MIN);
        assert_eq!(comm_config(v(28), None).nvlinkCentricSched, 1);
        let c = comm_config(v(32), Some(CtaPolicy::Zero));
        assert_eq!((c.CTAPolicy, c.nvlinkCentricSched), (2, 1));
        assert_eq!(
            describe(&c),
            serde_json::json!({"nvlinkCentricSched": 1, "CTAPolicy": 2})
        );
        assert_eq!(
            describe(&initializer()),
            serde_json::json!({"nvlinkCentricSched": null, "CTAPolicy": null})
        );
    }

    #[test]
    fn a_policy_the_library_predates_is_refused_naming_both_versions() {
        assert!(check_policy(None, v(10)).is_ok());
        assert!(check_policy(Some(CtaPolicy::Efficiency), v(27)).is_ok());
        let e = check_policy(Some(CtaPolicy::Zero), v(27)).unwrap_err();
        assert!(
            e.starts_with(
                "--cta-policy zero needs NCCL 2.28 or later; this library is NCCL 2.27.3"
            ),
            "{e}"
        );
        assert_eq!(
            "Efficiency".parse::<CtaPolicy>().unwrap(),
            CtaPolicy::Efficiency
        );
        assert!("fast".parse::<CtaPolicy>().is_err());
    }
}
