//! What a loaded libnccl can do, by the entry points it exports: the oldest NCCL collbench
//! runs, and the optional entry points of later releases, each with the release that added it
//! (NCCL's release notes, docs.nvidia.com/deeplearning/nccl/release-notes). An entry point is
//! detected by its symbol, never inferred from the version alone: vendor builds backport.

/// An NCCL version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: i32,
    pub minor: i32,
    pub patch: i32,
}

impl Version {
    /// Decodes `NCCL_VERSION_CODE`: `major*10000 + minor*100 + patch` from 2.9 on,
    /// `major*1000 + minor*100 + patch` before.
    pub fn from_code(code: i32) -> Version {
        let (major, rest) = if code >= 10000 {
            (code / 10000, code % 10000)
        } else {
            (code / 1000, code % 1000)
        };
        Version {
            major,
            minor: rest / 100,
            patch: rest % 100,
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The oldest NCCL collbench runs: 2.10 added `ncclBfloat16` (2.10.3), the dtype of mixed-
/// precision training, and is the first release whose version code is read one way
/// (`major*10000 + minor*100 + patch` from 2.9 on).
pub const MIN_SUPPORTED: Version = Version {
    major: 2,
    minor: 10,
    patch: 0,
};

/// An optional entry point and what collbench does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    /// The exported symbol.
    pub symbol: &'static str,
    /// The NCCL release that added it.
    pub since: &'static str,
}

/// Every optional entry point collbench looks for, oldest first.
pub const OPTIONAL: &[Feature] = &[
    // AllToAll and SendRecv as grouped send/recv
    Feature {
        symbol: "ncclSend",
        since: "2.7",
    },
    // AllToAll and SendRecv as grouped send/recv
    Feature {
        symbol: "ncclRecv",
        since: "2.7",
    },
    // --redop mulsum (nccl-tests' scaled sum)
    Feature {
        symbol: "ncclRedOpCreatePreMulSum",
        since: "2.11",
    },
    // the detail of a failed call in its error
    Feature {
        symbol: "ncclGetLastError",
        since: "2.13",
    },
    // the communicators' configuration (nccl-tests' own, --cta-policy)
    Feature {
        symbol: "ncclCommInitRankConfig",
        since: "2.14",
    },
    // world sizes split from one communicator
    Feature {
        symbol: "ncclCommSplit",
        since: "2.18",
    },
    // local buffer registration
    Feature {
        symbol: "ncclCommRegister",
        since: "2.19",
    },
    // buffers allocated as nccl-tests allocates them (symmetric registration needs them)
    Feature {
        symbol: "ncclMemAlloc",
        since: "2.19",
    },
    // NCCL's own time estimate per point
    Feature {
        symbol: "ncclGroupSimulateEnd",
        since: "2.22",
    },
    // symmetric buffer registration
    Feature {
        symbol: "ncclCommWindowRegister",
        since: "2.27",
    },
    // native AllToAll
    Feature {
        symbol: "ncclAlltoAll",
        since: "2.28",
    },
    // native Gather
    Feature {
        symbol: "ncclGather",
        since: "2.28",
    },
    // native Scatter
    Feature {
        symbol: "ncclScatter",
        since: "2.28",
    },
];

/// Why a library older than [`MIN_SUPPORTED`] is refused, or `None` for one that is not.
pub fn too_old(found: Version) -> Option<String> {
    let key = |v: Version| (v.major, v.minor, v.patch);
    (key(found) < key(MIN_SUPPORTED)).then(|| {
        format!(
            "NCCL {found} is older than {}.{}, the oldest collbench runs (bfloat16 came in 2.10)",
            MIN_SUPPORTED.major, MIN_SUPPORTED.minor
        )
    })
}

/// "ncclAlltoAll ncclGather ..." of `present`, or "none".
pub fn describe(present: &[&str]) -> String {
    if present.is_empty() {
        return "none".into();
    }
    present.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: i32, minor: i32, patch: i32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    #[test]
    fn releases_before_2_10_are_refused_by_version_and_later_ones_are_not() {
        let e = too_old(v(2, 9, 9)).unwrap();
        assert_eq!(
            e,
            "NCCL 2.9.9 is older than 2.10, the oldest collbench runs (bfloat16 came in 2.10)"
        );
        assert!(too_old(v(1, 99, 0)).is_some());
        assert_eq!(too_old(v(2, 10, 0)), None);
        assert_eq!(too_old(v(2, 32, 3)), None);
        assert_eq!(too_old(v(3, 0, 0)), None);
    }

    #[test]
    fn optional_entry_points_are_listed_once_oldest_first_with_a_release() {
        let mut seen = std::collections::HashSet::new();
        let mut last = (0, 0);
        for f in OPTIONAL {
            assert!(seen.insert(f.symbol), "{} twice", f.symbol);
            let (major, minor) = f.since.split_once('.').unwrap();
            let since = (major.parse::<i32>().unwrap(), minor.parse::<i32>().unwrap());
            assert!(since >= last, "{} out of order", f.symbol);
            last = since;
        }
        assert_eq!(describe(&[]), "none");
        assert_eq!(describe(&["ncclSend", "ncclRecv"]), "ncclSend ncclRecv");
    }
}
