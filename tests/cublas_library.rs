//! The real libcublas without a GPU (the GEMM load of `sweep --with-compute gemm`): found by the
//! default search (pip's `nvidia-cublas-cu12` under the site-packages of the python3 on PATH,
//! as PyTorch users have it) and through `COLLBENCH_CUBLAS_LIB`, its version equal to its
//! cublas_api.h's, every status name it gives equal to ours, and every constant of
//! src/backend/nccl/cublas.rs equal to the enumerator of cublas_api.h and library_types.h it
//! stands for. SKIPPED without the library (CI installs it).

#![cfg(feature = "nccl")]

mod common;

use std::path::{Path, PathBuf};

use collbench::backend::nccl::cublas::{self, Cublas};
use collbench::backend::nccl::search;
use common::skip::can_use;

/// The pip-installed library and its site folder, or `None` after saying SKIPPED.
fn pip_cublas() -> Option<(PathBuf, PathBuf)> {
    let sites = search::python_site_dirs();
    let found = search::pip_files(&sites, cublas::PIP_CUBLAS_LIB)
        .into_iter()
        .next()
        .and_then(|lib| Some((lib.clone(), lib.ancestors().nth(4)?.to_path_buf())));
    let missing =
        (found.is_none()).then(|| search::describe_sites_for(&sites, cublas::PIP_CUBLAS_LIB));
    can_use("libcublas", missing).then_some(found).flatten()
}

/// The value of enumerator or define `name` in `text` (`NAME = 3,` or `#define NAME 3`).
fn header_value(text: &str, name: &str) -> Option<i64> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l
            .strip_prefix(&format!("#define {name} "))
            .or_else(|| l.strip_prefix(name)?.trim_start().strip_prefix('='))?;
        let digits: String = rest
            .trim()
            .chars()
            .take_while(|c| *c == '-' || c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    })
}

fn header(site: &Path, rel: &str) -> String {
    std::fs::read_to_string(site.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_default_search_finds_pips_cublas_and_its_version_is_its_headers() {
    let Some((lib, site)) = pip_cublas() else {
        return;
    };
    let blas = Cublas::load().expect("the default search finds pip's cuBLAS");
    let api = header(&site, "nvidia/cublas/include/cublas_api.h");
    let want = ["CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH"]
        .map(|n| header_value(&api, n).unwrap_or_else(|| panic!("{n} in cublas_api.h")) as i32);
    let (major, minor, patch) = blas.version().expect("cublasGetProperty needs no GPU");
    assert_eq!([major, minor, patch], want, "{}", blas.path.display());
    let by_path = Cublas::load_from(Some(lib.clone())).expect("the same library by its path");
    assert_eq!(by_path.path, lib);
}

#[test]
fn every_status_name_and_constant_is_the_headers() {
    let Some((lib, site)) = pip_cublas() else {
        return;
    };
    let blas = Cublas::load_from(Some(lib)).expect("pip's cuBLAS loads");
    let api = header(&site, "nvidia/cublas/include/cublas_api.h");
    for &(status, name) in cublas::STATUS_NAMES {
        assert_eq!(header_value(&api, name), Some(i64::from(status)), "{name}");
        assert_eq!(
            blas.status_name(status),
            name,
            "cublasGetStatusName({status})"
        );
    }
    assert_eq!(header_value(&api, "CUBLAS_STATUS_SUCCESS"), Some(0));
    let ours = [
        ("CUBLAS_OP_N", cublas::OP_N),
        ("CUBLAS_COMPUTE_32F", cublas::COMPUTE_32F),
        ("CUBLAS_GEMM_DEFAULT", cublas::GEMM_DEFAULT),
    ];
    for (name, value) in ours {
        assert_eq!(header_value(&api, name), Some(i64::from(value)), "{name}");
    }
    let types = header(&site, "nvidia/cuda_runtime/include/library_types.h");
    assert_eq!(header_value(&types, "CUDA_R_16BF"), Some(14));
    assert_eq!(i64::from(cublas::CUDA_R_16BF), 14);
    assert_eq!(header_value(&types, "CUDA_R_32F"), Some(0));
    assert_eq!(cublas::CUDA_R_32F, 0);
    // libraryPropertyType counts from 0 in this order (no explicit values in the header).
    let order: Vec<usize> = ["MAJOR_VERSION,", "MINOR_VERSION,", "PATCH_LEVEL"]
        .iter()
        .map(|n| {
            types
                .find(n)
                .unwrap_or_else(|| panic!("{n} in library_types.h"))
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert_eq!(cublas::PROPERTIES, [0, 1, 2]);
}

#[test]
fn a_path_that_does_not_load_or_is_not_cublas_is_named() {
    let Some((lib, _)) = pip_cublas() else {
        return;
    };
    let bad = Cublas::load_from(Some(lib.with_file_name("libcublas.so.0-missing")))
        .err()
        .expect("no such file");
    assert!(bad.to_string().contains(cublas::CUBLAS_LIB_ENV), "{bad}");
    let not_blas = Cublas::load_from(Some(lib.with_file_name("libcublasLt.so.12")))
        .err()
        .expect("cuBLASLt has no cublasCreate_v2");
    assert!(
        not_blas.to_string().contains("cublasCreate_v2"),
        "{not_blas}"
    );
}
