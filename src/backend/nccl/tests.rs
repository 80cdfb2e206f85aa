//! Loader and probe paths that need no GPU.

use std::ffi::OsString;
use std::path::PathBuf;

use super::cuda::probe_driver_from;
use super::error::{CudaError, LoadError};
use super::loader::{open, override_path, Nccl, Version};

#[test]
fn bogus_override_path_names_the_file_and_the_variable() {
    let path = PathBuf::from("/nonexistent/collbench/libnccl.so.2");
    let err = Nccl::load_from(Some(path)).err().expect("must fail");
    assert!(matches!(err, LoadError::Override { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("COLLBENCH_NCCL_LIB=/nonexistent/collbench/libnccl.so.2"),
        "{text}"
    );
    assert!(
        text.contains("point COLLBENCH_NCCL_LIB at an existing library"),
        "{text}"
    );
}

#[test]
fn library_without_nccl_symbols_is_refused_by_name() {
    // libc is on every Linux machine and has no NCCL entry points.
    let err = Nccl::load_from(Some(PathBuf::from("libc.so.6")))
        .err()
        .expect("libc is not NCCL");
    let text = err.to_string();
    assert!(
        matches!(
            err,
            LoadError::Symbol {
                symbol: "ncclGetVersion",
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("libc.so.6"), "{text}");
}

#[test]
fn no_default_name_loads_lists_every_name_and_the_fix() {
    let names = ["libcollbench-missing.so.2", "libcollbench-missing.so"];
    let err = open("COLLBENCH_NCCL_LIB", None, &names, "set it")
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(text.starts_with("libcollbench-missing.so.2 / libcollbench-missing.so not found"));
    assert!(text.ends_with("; set it"), "{text}");
}

#[test]
fn empty_override_counts_as_unset() {
    assert_eq!(override_path(Some(OsString::new())), None);
    assert_eq!(override_path(None), None);
    assert_eq!(
        override_path(Some(OsString::from("/x/libnccl.so.2"))),
        Some(PathBuf::from("/x/libnccl.so.2"))
    );
}

#[test]
fn bogus_cuda_override_is_a_load_error() {
    let err = probe_driver_from(Some(PathBuf::from("/nonexistent/libcuda.so.1"))).unwrap_err();
    assert!(
        matches!(err, CudaError::Load(LoadError::Override { .. })),
        "{err:?}"
    );
    assert!(err
        .to_string()
        .contains("COLLBENCH_CUDA_LIB=/nonexistent/libcuda.so.1"));
}

#[test]
fn point_to_point_needs_both_entry_points_and_names_the_missing_one() {
    use super::loader::{both, P2P_SINCE};
    assert_eq!(both(Some(1), Some(2)), Ok((1, 2)));
    assert_eq!(both(None::<u8>, Some(2)), Err("ncclSend"));
    assert_eq!(both(None::<u8>, None::<u8>), Err("ncclSend"));
    assert_eq!(both(Some(1), None::<u8>), Err("ncclRecv"));
    // ncclSend and ncclRecv arrived together in NCCL 2.7.0.
    assert_eq!(P2P_SINCE, "2.7");
}

#[test]
fn versions_decode_both_encodings() {
    let v = Version::from_code(22105);
    assert_eq!((v.major, v.minor, v.patch), (2, 21, 5));
    assert_eq!(Version::from_code(2708).to_string(), "2.7.8");
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and libnccl"]
fn gpu_one_rank_communicator_is_created_checked_and_destroyed() {
    use super::comm::Communicator;
    if let Some(missing) = super::probe::Probe::run().missing() {
        eprintln!("SKIPPED gpu_one_rank_communicator_is_created_checked_and_destroyed: {missing}");
        return;
    }
    let driver = super::cuda::probe_driver().expect("a CUDA driver and device");
    assert!(driver.devices >= 1);
    let nccl = Nccl::load().expect("libnccl");
    assert_eq!(nccl.version().expect("ncclGetVersion").major, 2);
    let id = nccl.unique_id().expect("ncclGetUniqueId");
    let version = nccl.version().unwrap();
    let config = super::config::comm_config(version, &Default::default());
    let comm = Communicator::init(nccl, 1, &id, 0, Some(&config)).expect("ncclCommInitRankConfig");
    comm.check_async().expect("no asynchronous error");
    comm.destroy().expect("ncclCommDestroy");
}
