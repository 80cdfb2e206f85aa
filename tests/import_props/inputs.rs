//! The inputs of the import property tests: the real logs in tests/data/import, by kind, and
//! lines of junk a damaged log could hold.

use proptest::sample::Index;

macro_rules! nccl {
    ($file:literal) => {
        (
            $file,
            include_str!(concat!("../data/import/nccl-tests/", $file)),
        )
    };
}
macro_rules! osu_file {
    ($file:literal) => {
        ($file, include_str!(concat!("../data/import/osu/", $file)))
    };
}

/// Logs whose tables count wrong elements (`#wrong`, `N/A`).
pub(crate) const WRONG_COUNT_LOGS: &[(&str, &str)] = &[
    nccl!("all_reduce_2node_2gpu_t4_tagged_ncclinfo_root.log"),
    nccl!("all_reduce_v2.18.0_tagged_stderr_versionheader.log"),
    nccl!("all_gather_v2.18.0_tagged_stderr_versionheader.log"),
    nccl!("all_reduce_v2.17.8_10node_80rank_h100.log"),
    nccl!("allreduce_sendrecv_smoke_v2.17.8_2node_h100.log"),
    nccl!("multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log"),
    nccl!("alltoall_failed_midtable_then_sendrecv_exp_time_v2.17.6_2node_8rank.log"),
    nccl!("alltoall_ok_then_sendrecv_truncated_after_header_v2.17.6_2node.log"),
    nccl!("alltoall_sendrecv_starting_line_no_version_header_2node.log"),
];

/// Logs of old releases, whose last column is a float `error`.
pub(crate) const ERROR_COLUMN_LOGS: &[(&str, &str)] = &[
    nccl!("all_reduce_old_noroot_g8_v100_errorfloat.log"),
    nccl!("all_gather_2019_g12_noredop_column.log"),
    nccl!("broadcast_2019_g12_root_noredop.log"),
    nccl!("reduce_2019_g12_redop_and_root.log"),
    nccl!("all_reduce_old_noroot_2node_16gpu_tagged_ncclinfo.log"),
    nccl!("multi_coll_2019_g12_dgx2_old_percoll_columns.log"),
];

pub(crate) const OSU_FILES: &[(&str, &str)] = &[
    osu_file!("osu_allgather_v5.6.2_default_64rank_2node_impi.txt"),
    osu_file!("osu_allreduce_v5.6.2_default_64rank_2node_impi.txt"),
    osu_file!("osu_allreduce_v7.4_default_2node_char.txt"),
    osu_file!("osu_alltoall_v5.6.2_default_64rank_2node_impi.txt"),
    osu_file!("osu_reduce_cuda_v7.3_full_192rank_excerpt.txt"),
];

pub(crate) const JSON: &str = include_str!(
    "../data/import/nccl-tests/constructed/all_reduce_v2.17.8_jsonv1_CONSTRUCTED.json"
);

/// Every text log, either kind.
pub(crate) fn nccl_log(i: Index) -> (&'static str, &'static str) {
    let n = WRONG_COUNT_LOGS.len() + ERROR_COLUMN_LOGS.len();
    let i = i.index(n);
    if i < WRONG_COUNT_LOGS.len() {
        WRONG_COUNT_LOGS[i]
    } else {
        ERROR_COLUMN_LOGS[i - WRONG_COUNT_LOGS.len()]
    }
}

/// Lines a reader could meet in a damaged or mixed-up log: fragments of every format, numbers
/// at the edges of their types, launcher prefixes.
pub(crate) const JUNK: &[&str] = &[
    "",
    "#",
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
    "nThread 1 nGpus 8",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong",
    "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error",
    "#       size         count    type    root     time   algbw   busbw  error",
    "#       size  count type time",
    "# size time",
    "#  Rank  0 Group  0 Pid 1 on host device  0 [0x1b] GPU",
    "#  Rank  99999999999999999999 on",
    "#  Rank",
    "#   Rank  1 on h device",
    "# Avg bus bandwidth    : 1.5",
    "# Out of bounds values : 0 OK",
    "# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907",
    "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=99999999999",
    "# nccl-tests version",
    "# Collective test starting: all_reduce_perf",
    "# Collective test starting:",
    "# Collective test concluded: all_reduce_perf",
    "NCCL version 2.9.9+cuda11.2",
    "NCCL version ",
    "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to",
    "host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL",
    "host:1:1 [0] NCCL WARN Could not find a path",
    "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8",
    "    1048576   262144  float  sum  -1  1.6e+07  N/A  N/A  N/A  4.0  0.1  0.1  0",
    "           8             2   float       48.46    0.00    0.00  1e-07",
    "8 2 float sum -1 0 0 0 0 0 0 0 0",
    "8 2 float sum -1 N/A 0 0 0 N/A 0 0 0",
    "18446744073709551616 1 float sum -1 1 1 1 99999999999999999999 1 1 1 1",
    "18446744073709551615 18446744073709551615 float sum 9223372036854775807 1e308 1e308 1e308 18446744073709551615 1e-308 1 1 0",
    "1 1 float  -1 1 1 1 1 1 1 1 1",
    "1 1 x 1 1 nan inf -inf 1 1 1 1 1",
    "1 1 float 1 1 1 1 1 1 1 1",
    "0",
    "[1,0]<stdout>:",
    "[1,0]<stderr>:# nThread 1",
    "[1,0]<stdout>:[1,1]<stdout>:  12: 8 2 float sum -1 1 1 1 0 1 1 1 0",
    "12: ",
    "0:",
    "999999: x",
    "# OSU MPI Allreduce Latency Test v7.4",
    "# OSU MPI-CUDA  Latency Test",
    "# OSU Latency MPI Test",
    "# OSU MPI Test v",
    "# Datatype: MPI_DOUBLE.",
    "# Datatype:",
    "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations",
    "# Size",
    "# Size  Min Latency(us)",
    "1024   1e308  1e-308  5  18446744073709551616",
    "4                      3.90",
    "{\"version\":1}",
    "{\"version\":1,\"config\":{},\"results\":[{\"size\":1}]}",
    "{",
    "}",
    "\u{feff}# nThread 1",
    "\u{2028}\u{85}\u{a0}",
    "\t\r",
];
