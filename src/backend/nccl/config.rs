//! The communicator's configuration (`ncclConfig_t`), as nccl-tests 2.19.6 makes it
//! (`initComms` in src/common.cu): `NCCL_CONFIG_INITIALIZER`, `nvlinkCentricSched = 1` from
//! NCCL 2.28 on, and the CTA policy of `-x` (collbench `--cta-policy`) from 2.27 on; beyond
//! nccl-tests, the CTA bounds `minCTAs`/`maxCTAs` (`--ctas`). Plain data;
//! [`super::loader`] hands it to `ncclCommInitRankConfig` where the library has it (2.14+).

use std::os::raw::c_uint;

use super::loader::Version;
use super::sys;
pub use crate::model::call::CtaPolicy;
use crate::model::call::Register;
use crate::model::comm_setup::CommSetup;

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

/// The configuration of the communicators of one combination of the communicator axes:
/// nccl-tests' own (`nvlinkCentricSched = 1` from 2.28), with `setup`'s CTA policy and bounds
/// where asked. What the library cannot take is refused by [`check_setup`] before any
/// communicator exists.
pub fn comm_config(library: Version, setup: &CommSetup) -> sys::ncclConfig_t {
    let mut c = initializer();
    if (library.major, library.minor) >= (2, 28) {
        c.nvlinkCentricSched = 1;
    }
    if let Some(p) = setup.cta_policy {
        c.CTAPolicy = policy_raw(p);
    }
    if let Some(b) = setup.ctas {
        // At most MAX_CTAS (64): the parser bounds both.
        c.minCTAs = b.min as i32;
        c.maxCTAs = b.max as i32;
    }
    c
}

/// The NCCL variables that override a configured attribute (`init.cc`, `envConfigOverride`
/// and `parseCommConfig`): with one of them set, NCCL runs its value, not the one asked for.
const OVERRIDES: [(&str, &str); 3] = [
    ("--cta-policy", "NCCL_CTA_POLICY"),
    ("--ctas", "NCCL_MIN_CTAS"),
    ("--ctas", "NCCL_MAX_CTAS"),
];

/// What the library a rank loaded offers the communicator axes.
#[derive(Clone, Copy, Debug)]
pub struct Offers {
    pub version: Version,
    /// `ncclCommInitRankConfig` (2.14+): CTA bounds and policy travel in `ncclConfig_t`.
    pub config: bool,
    /// `ncclCommRegister` (2.19+).
    pub local: bool,
    /// `ncclCommWindowRegister` and `ncclMemAlloc` (2.27+).
    pub symmetric: bool,
}

/// Refuses a combination the library cannot run, or one an NCCL variable in `env` would
/// silently override; the message names the flag, the versions or the variable, and the fix.
pub fn check_setup(
    setup: &CommSetup,
    offers: Offers,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let library = offers.version;
    let newer = "or point COLLBENCH_NCCL_LIB at a newer libnccl.so.2";
    if let Some(p) = setup.cta_policy {
        let since = p.since();
        if (library.major, library.minor) < since {
            return Err(format!(
                "--cta-policy {p} needs NCCL {}.{} or later; this library is NCCL {library}: \
                 drop it {newer}",
                since.0, since.1
            ));
        }
    }
    // ncclConfig_t came in 2.14, its minCTAs and maxCTAs in 2.17 (init.cc, parseCommConfig):
    // an older library would take the struct and ignore the bounds.
    if setup.ctas.is_some() && (!offers.config || (library.major, library.minor) < (2, 17)) {
        return Err(format!(
            "--ctas needs ncclConfig_t.minCTAs/maxCTAs (NCCL 2.17+); this library is NCCL \
             {library}: drop --ctas {newer}"
        ));
    }
    let (needs, what, since) = match setup.registration() {
        Register::Local => (offers.local, "ncclCommRegister", "2.19"),
        Register::Symmetric => (offers.symmetric, "ncclCommWindowRegister", "2.27"),
        Register::None => (true, "", ""),
    };
    if !needs {
        return Err(format!(
            "--register {} needs {what} (NCCL {since}+); this library is NCCL {library}: drop \
             it {newer}",
            setup.registration()
        ));
    }
    for (flag, var) in OVERRIDES {
        let asked = if flag == "--ctas" {
            setup.ctas.is_some()
        } else {
            setup.cta_policy.is_some()
        };
        if let (true, Some(v)) = (asked, env(var)) {
            return Err(format!(
                "{flag} is overridden by {var}={v} in the environment (NCCL prefers the \
                 variable); unset {var} or drop {flag}"
            ));
        }
    }
    check_registration_env(setup.registration(), env)
}

/// Refuses a registration an NCCL variable turns off: with `NCCL_LOCAL_REGISTER=0`
/// `ncclCommRegister` succeeds and registers nothing (register.cc), with `NCCL_WIN_ENABLE=0`
/// no symmetric window is made (init.cc), and the points would be labelled as registered.
fn check_registration_env(
    registration: Register,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let var = match registration {
        Register::Local => "NCCL_LOCAL_REGISTER",
        Register::Symmetric => "NCCL_WIN_ENABLE",
        Register::None => return Ok(()),
    };
    match env(var) {
        Some(v) if v.trim() == "0" => Err(format!(
            "--register {registration} is turned off by {var}=0 in the environment (NCCL would \
             register nothing); unset {var} or drop --register {registration}"
        )),
        _ => Ok(()),
    }
}

/// What meta.json records of the configuration (the attributes collbench set).
pub fn describe(c: &sys::ncclConfig_t) -> serde_json::Value {
    let set = |v: i32| (v != sys::NCCL_CONFIG_UNDEF_INT).then_some(v);
    serde_json::json!({
        "nvlinkCentricSched": set(c.nvlinkCentricSched),
        "CTAPolicy": set(c.CTAPolicy),
        "minCTAs": set(c.minCTAs),
        "maxCTAs": set(c.maxCTAs),
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

    fn setup(text: &str) -> CommSetup {
        let mut s = CommSetup::default();
        for part in text.split_whitespace() {
            match part.split_once('=') {
                Some(("register", r)) => s.register = Some(r.parse().unwrap()),
                Some(("policy", p)) => s.cta_policy = Some(p.parse().unwrap()),
                Some(("ctas", c)) => s.ctas = Some(c.parse().unwrap()),
                _ => panic!("{part}"),
            }
        }
        s
    }

    fn offers(minor: i32) -> Offers {
        Offers {
            version: v(minor),
            config: minor >= 14,
            local: minor >= 19,
            symmetric: minor >= 27,
        }
    }

    #[test]
    fn nvlink_centric_scheduling_from_2_28_as_nccl_tests_and_the_setup_where_asked() {
        let none = CommSetup::default();
        assert_eq!(comm_config(v(27), &none).nvlinkCentricSched, i32::MIN);
        assert_eq!(comm_config(v(28), &none).nvlinkCentricSched, 1);
        let c = comm_config(v(32), &setup("policy=zero ctas=2:16"));
        assert_eq!((c.CTAPolicy, c.nvlinkCentricSched), (2, 1));
        assert_eq!((c.minCTAs, c.maxCTAs), (2, 16));
        assert_eq!(
            describe(&c),
            serde_json::json!({"nvlinkCentricSched": 1, "CTAPolicy": 2, "minCTAs": 2, "maxCTAs": 16})
        );
        assert_eq!(
            describe(&initializer()),
            serde_json::json!({"nvlinkCentricSched": null, "CTAPolicy": null, "minCTAs": null, "maxCTAs": null})
        );
    }

    #[test]
    fn what_the_library_predates_is_refused_naming_both_versions() {
        let no_env = |_: &str| None;
        let check = |s: &str, minor| check_setup(&setup(s), offers(minor), no_env);
        assert!(check("", 10).is_ok());
        assert!(check("policy=efficiency", 27).is_ok());
        let e = check("policy=zero", 27).unwrap_err();
        assert!(
            e.starts_with(
                "--cta-policy zero needs NCCL 2.28 or later; this library is NCCL 2.27.3"
            ),
            "{e}"
        );
        assert!(check("ctas=4", 17).is_ok());
        let e = check("ctas=4", 16).unwrap_err();
        assert!(
            e.starts_with("--ctas needs ncclConfig_t.minCTAs/maxCTAs (NCCL 2.17+); this library is NCCL 2.16.3"),
            "{e}"
        );
        assert!(check("ctas=4", 13).is_err());
        assert!(check("register=local", 19).is_ok());
        let e = check("register=local", 18).unwrap_err();
        assert!(
            e.starts_with("--register local needs ncclCommRegister (NCCL 2.19+)"),
            "{e}"
        );
        let e = check("register=symmetric", 26).unwrap_err();
        assert!(e.contains("ncclCommWindowRegister (NCCL 2.27+)"), "{e}");
        assert!(check("register=symmetric policy=zero ctas=1:64", 32).is_ok());
    }

    #[test]
    fn an_nccl_variable_that_would_override_the_setup_is_refused_by_name() {
        let env = |var: &str| (var == "NCCL_MAX_CTAS").then(|| "8".to_string());
        let e = check_setup(&setup("ctas=16"), offers(32), env).unwrap_err();
        assert_eq!(
            e,
            "--ctas is overridden by NCCL_MAX_CTAS=8 in the environment (NCCL prefers the \
             variable); unset NCCL_MAX_CTAS or drop --ctas"
        );
        assert!(check_setup(&setup("policy=zero"), offers(32), env).is_ok());
        let env = |var: &str| (var == "NCCL_CTA_POLICY").then(|| "1".to_string());
        let e = check_setup(&setup("policy=zero"), offers(32), env).unwrap_err();
        assert!(
            e.starts_with("--cta-policy is overridden by NCCL_CTA_POLICY=1"),
            "{e}"
        );
        assert!(check_setup(&setup("ctas=2"), offers(32), env).is_ok());
        let env = |var: &str| (var == "NCCL_LOCAL_REGISTER").then(|| "0".to_string());
        let e = check_setup(&setup("register=local"), offers(32), env).unwrap_err();
        assert!(
            e.starts_with("--register local is turned off by NCCL_LOCAL_REGISTER=0"),
            "{e}"
        );
        assert!(check_setup(&setup("register=symmetric"), offers(32), env).is_ok());
        let env = |var: &str| (var == "NCCL_WIN_ENABLE").then(|| "0".to_string());
        assert!(check_setup(&setup("register=symmetric"), offers(32), env).is_err());
        let env = |var: &str| (var == "NCCL_WIN_ENABLE").then(|| "1".to_string());
        assert!(check_setup(&setup("register=symmetric"), offers(32), env).is_ok());
        assert_eq!(
            "Efficiency".parse::<CtaPolicy>().unwrap(),
            CtaPolicy::Efficiency
        );
    }
}
