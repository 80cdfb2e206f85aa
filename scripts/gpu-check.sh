#!/usr/bin/env bash
# The NCCL backend's check on a GPU machine (docs/GPU.md): runs everything from the kit that
# scripts/gpu-kit.sh made (no Rust, no network needed) and writes at most 5 files to OUTDIR:
#
#   summary.txt          what ran, passed, failed or was skipped (and why), with timings
#   compare.csv          collbench against nccl-tests, point by point
#   calibration.csv      compute calibration (PyTorch): a Llama-2-7B layer and its GEMMs
#   gpu-check.tar.gz     every log, results folder (with report.html) and nccl-tests output
#   gpu-check-samples.tar.xz   only when the archive would pass 15 MiB: the samples.csv files
#
#   bash scripts/gpu-check.sh OUTDIR
#
# Environment: GPU_KIT (the kit; default gpu-kit/ at the repository root), GPU_CHECK_BUDGET
# (seconds for all steps, default 390; the archive follows), GPU_CHECK_WORK (scratch folder,
# default a new one under /tmp, removed at the end unless GPU_CHECK_KEEP=1), COLLBENCH_NCCL_LIB
# (libnccl to use instead of the one found). Every step has its own time limit, and one that
# lacks a tool, a library or a GPU says SKIPPED with the reason. Exit 0 when no step failed,
# 1 when one did, 130 when interrupted (summary and archive are written in every case), 2 on
# bad arguments.

# The steps are called by name (`--step NAME` runs step_NAME), which shellcheck cannot follow.
# shellcheck disable=SC2317
set -u -o pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SCRIPTS=$(dirname "$SELF")
REPO=$(dirname "$SCRIPTS")

OPS_ALL=allreduce,allgather,reducescatter,broadcast,reduce,alltoall,alltoallv,sendrecv,gather,scatter

# ------------------------------------------------------------------------------------------------
# Helpers shared by the main flow and the steps (each step runs in a child bash: `--step NAME`).

ms() { echo $(($(date +%s%N) / 1000000)); }

# A manifest value of the kit.
manifest() { sed -n "s/^$1=//p" "$GPU_KIT/MANIFEST.txt" 2>/dev/null | head -1; }

# Runs a command with a bound of its own, echoing it first (inside steps: the step's process
# group stays one, so the step's own limit still reaches everything it started).
bounded() {
    local secs=$1
    shift
    printf '$ %s\n' "$*"
    timeout --foreground -k 5 "$secs" "$@"
    local rc=$?
    [ "$rc" -eq 0 ] || echo "(exit $rc)"
    return "$rc"
}

# Seconds left to the running step (its limit is exported as STEP_END, epoch seconds).
step_left() { echo $((STEP_END - $(date +%s))); }

skip() {
    echo "SKIPPED: $*"
    exit 3
}

# The value of one field of the nccl row of `collbench backends --json`.
nccl_field() {
    local json=$1 field=$2
    if command -v python3 >/dev/null 2>&1; then
        python3 -c '
import json, sys
try:
    rows = json.loads(sys.argv[1])["backends"]
    row = [r for r in rows if r.get("backend") == "nccl"][0]
    v = row.get(sys.argv[2], "")
    print(str(v).lower() if isinstance(v, bool) else v)
except Exception:
    print("")' "$json" "$field" 2>/dev/null
    else
        local flat
        flat=$(printf '%s' "$json" | tr -d '\n')
        flat=${flat#*\"backend\": \"nccl\"}
        case "$field" in
            runs | built) printf '%s' "$flat" | grep -o "\"$field\": *[a-z]*" | head -1 | sed 's/.*: *//' ;;
            *) printf '%s' "$flat" | grep -o "\"$field\": *\"[^\"]*\"" | head -1 | sed 's/^[^:]*: *"//; s/"$//' ;;
        esac
    fi
}

# Rows of a results folder's summary.csv (0 when there is none).
rows_of() {
    local f=$1/summary.csv
    [ -f "$f" ] || { echo 0; return; }
    echo $(($(wc -l <"$f") - 1))
}

# Sum of the `wrong` column of a summary.csv.
wrong_of() {
    awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="wrong") c=i; next} c{s+=$c} END{print s+0}' "$1/summary.csv" 2>/dev/null
}

# ------------------------------------------------------------------------------------------------
# Steps. Each prints its log to stdout and ends with exit 0 (passed), 3 (skipped: a line
# `SKIPPED: why`), 4 (partial: cut at its time limit, what it measured kept) or another code
# (failed; a line `FAIL: why` where it knows).

step_env() {
    echo "## machine"
    date -u +%Y-%m-%dT%H:%M:%SZ
    uname -a
    grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>/dev/null
    echo "cores: $(nproc)"
    free -g 2>/dev/null | head -2
    df -h "$WORK" 2>/dev/null | tail -1
    ldd --version 2>/dev/null | head -1
    echo
    echo "## GPU"
    if command -v nvidia-smi >/dev/null 2>&1; then
        bounded 20 nvidia-smi
        bounded 20 nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max,pcie.link.width.max --format=csv
        bounded 20 nvidia-smi topo -m
        bounded 30 nvidia-smi -q
    else
        echo "nvidia-smi: not on PATH"
    fi
    echo
    echo "## CUDA toolkit"
    if [ -n "$NVCC" ]; then bounded 20 "$NVCC" --version; else echo "nvcc: not found (PATH, /usr/local/cuda*/bin)"; fi
    echo "CUDA_HOME=${CUDA_HOME:-}"
    echo
    echo "## python"
    if command -v python3 >/dev/null 2>&1; then
        echo "python3: $(command -v python3) ($(python3 --version 2>&1))"
        bounded 30 python3 - <<'EOF'
from importlib import metadata
for name in ("torch", "triton", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-cuda-runtime-cu12",
             "nvidia-cuda-runtime", "numpy"):
    try:
        print(f"{name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(f"{name} not installed")
EOF
    else
        echo "python3: not on PATH"
    fi
    echo
    echo "## libraries"
    echo "libnccl chosen: ${NCCL_LIB:-none} (${NCCL_FROM:-})"
    echo "libnccl candidates:"
    sed 's/^/  /' "$WORK/nccl-candidates.txt" 2>/dev/null
    if command -v ldconfig >/dev/null 2>&1; then
        echo "ldconfig -p:"
        ldconfig -p 2>/dev/null | grep -E 'libnccl|libcuda\.so|libnvidia-ml|libcudart' | sed 's/^/  /'
    fi
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo
    echo "## kit"
    cat "$GPU_KIT/MANIFEST.txt" 2>/dev/null || echo "no MANIFEST.txt in $GPU_KIT"
    echo
    echo "## collbench"
    if [ -x "$CB" ]; then
        bounded 20 "$CB" --version
        bounded 60 "$CB" backends
        bounded 60 "$CB" backends --json
    else
        echo "no collbench in the kit ($CB)"
    fi
    return 0
}

step_tests() {
    [ -x "$TB" ] || skip "no test binary in the kit ($TB): make the kit with scripts/gpu-kit.sh after cargo test --release --features nccl --no-run"
    [ -x "$CB" ] || skip "no collbench in the kit ($CB)"
    # The tests run the collbench whose absolute path cargo compiled into them.
    local expects run=("$TB" --ignored --test-threads=1)
    expects=$(manifest test_bin_expects_collbench)
    if [ -z "$expects" ]; then
        echo "NOTE: the kit does not say which collbench path the tests run"
    elif [ ! -e "$expects" ]; then
        if mkdir -p "$(dirname "$expects")" 2>/dev/null && cp "$CB" "$expects"; then
            echo "placed the kit's collbench at $expects (the path compiled into the test binary)"
        else
            skip "the test binary runs $expects, which is missing and cannot be created here"
        fi
    elif cmp -s "$expects" "$CB"; then
        echo "$expects is the kit's collbench"
    elif unshare -m --propagation private true 2>/dev/null; then
        # Another collbench is there (a later build): the kit's is mounted over it for the tests
        # alone, in a mount namespace of their own; the file itself is left as it is.
        echo "$expects is another collbench: the tests run the kit's, bind-mounted over it in a private mount namespace"
        # shellcheck disable=SC2016 # $1.. are the inner shell's
        run=(unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
            sh "$CB" "$expects" "${run[@]}")
    else
        echo "NOTE: $expects is not the kit's collbench and cannot be replaced for the tests; they run it"
    fi
    mkdir -p "$WORK/tests-cwd"
    cd "$WORK/tests-cwd" || exit 1
    bounded $(($(step_left) - 3)) "${run[@]}"
    local rc=$?
    # The tests write `SKIPPED <test>: why` straight to stderr, inside libtest's lines.
    local skips
    skips=$(grep -o 'SKIPPED [[:alnum:]_:]*: [^;]*' "$STEP_LOG" 2>/dev/null | grep -c .)
    if [ "$GPU_COUNT" -lt 1 ]; then
        skip "no GPU visible (nvidia-smi: ${GPU_SMI_NOTE}); the ignored tests ran and $skips of them said SKIPPED (exit $rc)"
    fi
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: $(grep -E '^test .* FAILED$' "$STEP_LOG" | sed 's/^test //; s/ \.\.\. FAILED$//' | tr '\n' ' ')(exit $rc)"
        return 1
    fi
    # On a GPU machine a test may skip only for a second GPU.
    local bad
    bad=$(grep -o 'SKIPPED [[:alnum:]_:]*: [^;]*' "$STEP_LOG" | grep -vc 'needs two')
    if [ "$bad" -gt 0 ]; then
        echo "FAIL: $bad test(s) said SKIPPED on a machine with a GPU: $(grep -o 'SKIPPED [[:alnum:]_:]*: [^;]*' "$STEP_LOG" | grep -v 'needs two' | head -1 | cut -c1-200)"
        return 1
    fi
    return 0
}

# One collbench sweep into $RES/cb-NAME, cut (SIGTERM, which collbench handles as Ctrl-C does:
# the points measured are kept) 5 s before the step's limit.
sweep() {
    local name=$1
    shift
    [ -x "$CB" ] || skip "no collbench in the kit"
    [ "$NCCL_RUNS" = true ] || skip "collbench backends: $(printf '%s' "$NCCL_DETAIL" | cut -c1-160)"
    local out=$RES/cb-$name
    local secs=$(($(step_left) - 5))
    [ "$secs" -ge 10 ] || skip "no time left"
    printf '$ %s\n' "collbench sweep --backend nccl --ranks 1 --no-progress --out $out $*"
    timeout --foreground -s TERM -k 15 "$secs" "$CB" sweep --backend nccl --ranks 1 --no-progress --out "$out" "$@"
    local rc=$?
    local n wrong
    n=$(rows_of "$out")
    wrong=$(wrong_of "$out")
    echo "exit $rc; $n points in $out/summary.csv, $wrong wrong elements"
    echo "status: $(grep -o '"status": *"[a-z]*"' "$out/meta.json" 2>/dev/null)"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ]; then
        echo "NOTE: cut at the step's time limit after $n points (kept)"
        return 4
    fi
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: collbench sweep exit $rc after $n points, $wrong wrong elements; $(grep '^collbench: ' "$STEP_LOG" | tail -1 | cut -c1-240)"
        return 1
    fi
    echo "NOTE: $n points, $wrong wrong elements"
    return 0
}

step_sweep_graph() {
    sweep graph --cuda-graph --graph-launches 10 --op "$CB_OPS" --dtype f32,bf16 --in-place both \
        -b 8 -e "$SMALL_MAX" -f 2 --iters 100 --warmup 10 --timeout 120s
}

step_sweep_stream() {
    sweep stream --op "$CB_OPS" --dtype f32,bf16 --in-place both \
        -b 8 -e "$SMALL_MAX" -f 2 --iters 100 --warmup 10 --timeout 120s
}

# The registration modes this library has (nccl-tests -R 0/1/2), as `collbench backends` found
# its entry points: "none", then "local" and "symmetric" where present.
register_modes() {
    local modes=none
    case "$NCCL_DETAIL" in *ncclCommRegister*) modes+=",local" ;; esac
    case "$NCCL_DETAIL" in *ncclCommWindowRegister*) modes+=",symmetric" ;; esac
    echo "$modes"
}

step_sweep_register() {
    sweep register --op allreduce,allgather --dtype f32 --in-place off \
        --register "$(register_modes)" -b 8 -e "$SMALL_MAX" -f 2 --iters 100 --warmup 10 --timeout 120s
}

# Where collbench's loader will find cuBLAS for the GEMM load: the override, the dynamic
# linker's cache, or the wheel PyTorch installs under python3's site folders.
have_cublas() {
    [ -n "${COLLBENCH_CUBLAS_LIB:-}" ] && return 0
    ldconfig -p 2>/dev/null | grep -q 'libcublas\.so' && return 0
    timeout 20 python3 -c 'import site, sys, os
dirs = list(sys.path) + list(site.getsitepackages())
sys.exit(0 if any(os.path.isfile(os.path.join(d, "nvidia/cublas/lib/libcublas.so.12")) for d in dirs) else 1)' 2>/dev/null
}

# Collectives beside cuBLAS BF16 GEMMs on a second stream: both slowdowns per size.
step_sweep_compute() {
    have_cublas || skip "no libcublas (pip install nvidia-cublas-cu12, or set COLLBENCH_CUBLAS_LIB)"
    sweep compute --op allreduce,allgather,reducescatter --dtype bf16 --in-place off \
        --with-compute gemm -b 64K -e 256M -f 4 --iters 20 --warmup 5 --timeout 120s
    local rc=$?
    # Each size's two slowdowns against alone, for the summary's reader.
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["concurrent"] != "" { printf "%s %s B: call x%s, gemm x%s\n", $c["op"], $c["bytes"],
            $c["slowdown"], $c["compute_slowdown"] }' "$RES/cb-compute/summary.csv" 2>/dev/null
    return $rc
}

step_sweep_large() {
    sweep large --op "$LARGE_OPS" --dtype "$LARGE_DTYPES" --in-place off \
        -b "$LARGE_MIN" -e "$LARGE_MAX" -f 2 --iters 20 --warmup 5 --timeout 600s
}

# Background: nccl-tests built from the kit for this GPU only.
step_build() {
    [ -d "$GPU_KIT/nccl-tests" ] || skip "no nccl-tests source in the kit"
    [ -n "$NVCC" ] || skip "no nvcc (looked on PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin)"
    [ -n "$NCCL_LIB" ] || skip "no libnccl found to build against"
    [ -n "$NCCL_INC" ] || skip "no nccl.h found beside $NCCL_LIB (need its include/ folder)"
    [ -n "$CUDA_LIBDIR" ] || skip "no libcudart.so under $CUDA_HOME"
    command -v "${CXX:-g++}" >/dev/null 2>&1 || skip "no host C++ compiler (${CXX:-g++}) for nvcc"
    local home=$WORK/nccl-home src=$WORK/nccl-tests-src
    # NCCL_HOME as the Makefile wants it: include/ and lib/libnccl.so (pip ships only .so.2).
    mkdir -p "$home/lib" && ln -sfn "$NCCL_INC" "$home/include" &&
        ln -sf "$NCCL_LIB" "$home/lib/libnccl.so" && ln -sf "$NCCL_LIB" "$home/lib/libnccl.so.2" || exit 1
    rm -rf "$src" && cp -r "$GPU_KIT/nccl-tests" "$src" || exit 1
    echo "nccl-tests $(cat "$src/COMMIT" 2>/dev/null), sm_$SM, NCCL_HOME=$home -> $NCCL_LIB, CUDA_HOME=$CUDA_HOME"
    # All but 4 cores, at the lowest priority: the GPU tests and a sweep run meanwhile.
    local jobs
    jobs=$(nproc)
    [ "$jobs" -gt 8 ] && jobs=$((jobs - 4))
    bounded $(($(step_left) - 2)) nice -n 19 make -C "$src" -j "$jobs" src.build \
        BUILDDIR="$NT_BUILD" NCCL_HOME="$home" CUDA_HOME="$CUDA_HOME" CUDA_LIB="$CUDA_LIBDIR" \
        NVCC="$NVCC" NVCC_GENCODE="-gencode=arch=compute_$SM,code=sm_$SM" || {
        echo "FAIL: make failed"
        return 1
    }
    ls -l "$NT_BUILD"/*_perf
    # The probe of NCCL's single-rank reductions (step 05b), built beside nccl-tests.
    local probe=$SCRIPTS/nccl_onerank_fp8.cu
    [ -f "$probe" ] || probe=$GPU_KIT/scripts/nccl_onerank_fp8.cu
    if [ -f "$probe" ]; then
        bounded $(($(step_left) - 1)) "$NVCC" -o "$NT_BUILD/nccl_onerank_fp8" "$probe" \
            -I"$home/include" -L"$home/lib" -lnccl -gencode="arch=compute_$SM,code=sm_$SM" ||
            echo "NOTE: nccl_onerank_fp8.cu did not build"
    fi
}

# NCCL at world 1: which reductions of fp8 it refuses (collbench leaves out those it knows of,
# BackendKind::refuses_at in src/model/call.rs). FAIL: this library differs from what collbench
# assumes, and the table there needs its version bound.
step_onerank() {
    [ -x "$NT_BUILD/nccl_onerank_fp8" ] || skip "the probe did not build (logs/build-nccl-tests.log)"
    LD_LIBRARY_PATH="$(dirname "$NCCL_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        bounded $(($(step_left) - 1)) "$NT_BUILD/nccl_onerank_fp8"
    local rc=$?
    [ "$rc" -eq 0 ] && echo "NOTE: fp8 avg at world 1 refused as collbench assumes; sum, bf16/f32/i32 avg exact"
    [ "$rc" -eq 0 ] || echo "FAIL: NCCL at world 1 differs from BackendKind::refuses_at (log above)"
    return "$rc"
}

# nccl-tests binary name of a collbench op.
nt_binary() {
    case "$1" in
        allreduce) echo all_reduce_perf ;; allgather) echo all_gather_perf ;;
        reducescatter) echo reduce_scatter_perf ;; *) echo "${1}_perf" ;;
    esac
}

step_nccltests() {
    [ -d "$GPU_KIT/nccl-tests" ] || skip "no nccl-tests source in the kit"
    [ -n "$NVCC" ] || skip "no nvcc, so nccl-tests could not be built (looked on PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin)"
    [ -n "$NCCL_LIB" ] || skip "no libnccl found"
    [ -x "$NT_BUILD/all_reduce_perf" ] || skip "nccl-tests did not build (logs/build-nccl-tests.log: $(grep -E '^(SKIPPED|FAIL):' "$LOGS/build-nccl-tests.log" 2>/dev/null | tail -1))"
    [ "$GPU_COUNT" -ge 1 ] || skip "no GPU visible (nvidia-smi: ${GPU_SMI_NOTE})"
    local out=$WORK/nccl-tests-out libpath
    mkdir -p "$out"
    libpath=$WORK/nccl-home/lib:$CUDA_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    local plan=() op
    # f32 over the whole range (collbench's small and large sweeps), bf16 and CUDA graphs over
    # the small range (collbench's sweeps of every op); in that order, as long as time is left.
    for op in ${CB_OPS//,/ }; do plan+=("$op float $LARGE_MAX 0 0"); done
    for op in ${CB_OPS//,/ }; do plan+=("$op bfloat16 $SMALL_MAX 0 0"); done
    # The registered points of collbench's register sweep: -R 1 local, -R 2 symmetric.
    local mode reg
    for mode in $(register_modes | tr , ' '); do
        case $mode in local) reg=1 ;; symmetric) reg=2 ;; *) continue ;; esac
        for op in allreduce allgather; do plan+=("$op float $SMALL_MAX 0 $reg"); done
    done
    for op in ${CB_OPS//,/ }; do plan+=("$op float $SMALL_MAX 10 0"); done
    local entry dt max graph bin name cap ran=0 failed=0 left_out=0
    for entry in "${plan[@]}"; do
        read -r op dt max graph reg <<<"$entry"
        bin=$(nt_binary "$op")
        # The last dash-separated word is the mode compare.csv matches on (stream_local: -R 1).
        name=$op-$([ "$dt" = float ] && echo f32 || echo bf16)-$([ "$graph" = 0 ] && echo stream || echo graph)
        case $reg in 1) name+=_local ;; 2) name+=_symmetric ;; esac
        cap=20
        [ "$max" = "$SMALL_MAX" ] || cap=60
        if [ "$(step_left)" -lt $((cap / 2 + 5)) ]; then
            left_out=$((left_out + 1))
            continue
        fi
        [ "$(step_left)" -lt $((cap + 5)) ] && cap=$(($(step_left) - 5))
        local args=(-g 1 -b 8 -e "$max" -f 2 -d "$dt" -w 10 -n 100 -c 1 -G "$graph" -R "$reg" -J "$out/$name.json")
        echo "\$ $bin ${args[*]}  (limit ${cap}s)"
        # A clean environment: -J records the whole environment in its JSON.
        local envs=(PATH="$PATH" HOME="${HOME:-/root}" LD_LIBRARY_PATH="$libpath" NCCL_DEBUG=VERSION)
        [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && envs+=(CUDA_VISIBLE_DEVICES="$CUDA_VISIBLE_DEVICES")
        timeout --foreground -k 5 "$cap" env -i "${envs[@]}" "$NT_BUILD/$bin" "${args[@]}" >"$out/$name.log" 2>&1
        local rc=$?
        ran=$((ran + 1))
        echo "$name: exit $rc, $(grep -c '^ *[0-9]' "$out/$name.log") size rows; $(grep -E 'Out of bounds|Avg bus' "$out/$name.log" | tr -s ' ' | tr '\n' ';')"
        [ "$rc" -eq 0 ] || { failed=$((failed + 1)); tail -3 "$out/$name.log"; }
        # Into results folders: the printed table (the comparison's source) and the JSON.
        "$CB" import nccl-tests "$out/$name.log" --out "$RES/nt-$name" >"$out/$name.import.txt" 2>&1 ||
            echo "  import of $name.log failed: $(tail -1 "$out/$name.import.txt")"
        if [ -s "$out/$name.json" ]; then
            "$CB" import nccl-tests "$out/$name.json" --out "$RES/ntjson-$name" >"$out/$name.json.import.txt" 2>&1 ||
                echo "  import of $name.json failed: $(tail -1 "$out/$name.json.import.txt")"
            local a b
            a=$(rows_of "$RES/nt-$name")
            b=$(rows_of "$RES/ntjson-$name")
            [ "$a" = "$b" ] || echo "  NOTE: the log gave $a points, the JSON $b"
        fi
    done
    echo "NOTE: $ran runs, $failed failed, $left_out left out for time"
    [ "$failed" -eq 0 ] || { echo "FAIL: $failed of $ran nccl-tests runs failed"; return 1; }
    [ "$left_out" -eq 0 ] || return 4
    return 0
}

# compare.csv: every collbench point beside nccl-tests' of the same mode, op, dtype, placement
# and size; a registered point's mode is stream_local or stream_symmetric (nccl-tests -R 1,
# -R 2). nccl-tests' time is its loop's average per call: collbench's `loop_time_us` (the same
# measure) where its summary.csv has the column, else its mean per-call time.
step_compare() {
    local cbs=() nts=() d
    for d in "$RES"/cb-*/; do [ -f "$d/summary.csv" ] && cbs+=("${d%/}"); done
    for d in "$RES"/nt-*/; do [ -f "$d/summary.csv" ] && nts+=("${d%/}"); done
    [ "${#cbs[@]}" -gt 0 ] || skip "no collbench results to compare"
    [ "${#nts[@]}" -gt 0 ] || skip "no nccl-tests results to compare"
    local f
    {
        for d in "${nts[@]}"; do
            f=$(basename "$d")
            echo "#nt ${f##*-} $f"
            cat "$d/summary.csv"
        done
        for d in "${cbs[@]}"; do
            f=$(basename "$d")
            echo "#cb $([ "$f" = cb-graph ] && echo graph || echo stream) $f"
            cat "$d/summary.csv"
        done
    } | awk -F, -v OFS=, '
        /^#(nt|cb) / { split($0, w, " "); side = substr(w[1], 2); mode = w[2]; run = w[3]; hdr = 1; next }
        hdr { delete col; for (i = 1; i <= NF; i++) col[$i] = i; hdr = 0; next }
        {
            key = mode SUBSEP $col["op"] SUBSEP $col["dtype"] SUBSEP $col["in_place"] SUBSEP $col["bytes"]
            if (side == "nt") {
                nt_t[key] = $col["time_us_mean"]; nt_bw[key] = $col["busbw_gbps"]
                nt_w[key] = $col["wrong"]; nt_run[key] = run
                next
            }
            # The unregistered points of the register sweep repeat those of the stream sweep.
            if (run == "cb-register" && (!("nccl_register" in col) || $col["nccl_register"] == "")) next
            if (("nccl_register" in col) && $col["nccl_register"] != "") {
                key = mode "_" $col["nccl_register"] SUBSEP $col["op"] SUBSEP $col["dtype"] SUBSEP $col["in_place"] SUBSEP $col["bytes"]
            }
            n++
            k[n] = key; cb_run[n] = run; cb_it[n] = $col["iters"]
            cb_med[n] = $col["time_us_median"]; cb_mean[n] = $col["time_us_mean"]
            cb_w[n] = $col["wrong"]
            cb_loop[n] = ("loop_time_us" in col) ? $col["loop_time_us"] : ""
            cb_ran[n] = (("nccl_call" in col) ? $col["nccl_call"] : "") OFS (("nccl_algo" in col) ? $col["nccl_algo"] : "") OFS (("nccl_proto" in col) ? $col["nccl_proto"] : "")
            if (cb_loop[n] != "" && cb_loop[n] > 0) {
                cb_t[n] = cb_loop[n]; cb_used[n] = "loop"; cb_bw[n] = $col["loop_busbw_gbps"]
            } else {
                cb_t[n] = cb_mean[n]; cb_used[n] = "mean"; cb_bw[n] = $col["busbw_gbps_mean"]
            }
        }
        END {
            print "mode,op,dtype,in_place,bytes,cb_iters,cb_time_us_median,cb_time_us_mean,cb_loop_time_us,cb_time_used,nt_time_us,time_ratio,cb_algbw_gbps,nt_algbw_gbps,cb_busbw_gbps,nt_busbw_gbps,busbw_ratio,cb_wrong,nt_wrong,cb_run,nt_run,cb_nccl_call,cb_nccl_algo,cb_nccl_proto"
            for (i = 1; i <= n; i++) {
                split(k[i], p, SUBSEP)
                bytes = p[5]
                cba = (cb_t[i] > 0) ? sprintf("%.6f", bytes / cb_t[i] / 1e3) : ""
                head = p[1] OFS p[2] OFS p[3] OFS p[4] OFS bytes OFS cb_it[i] OFS cb_med[i] OFS cb_mean[i] OFS cb_loop[i] OFS cb_used[i]
                if (k[i] in nt_t) {
                    t = nt_t[k[i]]
                    ratio = (t > 0) ? sprintf("%.4f", cb_t[i] / t) : ""
                    nta = (t > 0) ? sprintf("%.6f", bytes / t / 1e3) : ""
                    bwr = (nt_bw[k[i]] > 0) ? sprintf("%.4f", cb_bw[i] / nt_bw[k[i]]) : ""
                    print head, t, ratio, cba, nta, cb_bw[i], nt_bw[k[i]], bwr, cb_w[i], nt_w[k[i]], cb_run[i], nt_run[k[i]], cb_ran[i]
                } else {
                    print head, "", "", cba, "", cb_bw[i], "", "", cb_w[i], "", cb_run[i], "", cb_ran[i]
                }
            }
        }' >"$WORK/compare.unsorted" || { echo "FAIL: awk"; return 1; }
    { head -1 "$WORK/compare.unsorted"; tail -n +2 "$WORK/compare.unsorted" | sort -t, -k1,1 -k2,2 -k3,3 -k4,4 -k5,5n; } >"$WORK/compare.csv"
    rm -f "$WORK/compare.unsorted"
    # Headline: the median time ratio per mode below and from 1 MiB (points both measured).
    awk -F, 'NR > 1 && $12 != "" { g = $1 " " ($5 < 1048576 ? "below 1 MiB" : "from 1 MiB"); c[g]++ }
        END { for (g in c) print g, c[g] }' "$WORK/compare.csv" | sort | while read -r mode a b c cnt; do
        med=$(awk -F, -v m="$mode" -v lo="$a" 'NR > 1 && $12 != "" && $1 == m && ((lo == "below") == ($5 < 1048576)) { print $12 }' "$WORK/compare.csv" |
            sort -g | awk '{ x[NR] = $1 } END { if (NR) print (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2) }')
        echo "$mode, $a $b $c: median time ratio collbench/nccl-tests $med over $cnt points"
    done | tee "$WORK/compare-headline.txt"
    local matched total
    matched=$(awk -F, 'NR > 1 && $11 != ""' "$WORK/compare.csv" | wc -l)
    total=$(($(wc -l <"$WORK/compare.csv") - 1))
    echo "NOTE: $matched of $total collbench points have an nccl-tests point"
    # collbench's own comparison of one pair, as a check of compare on an imported folder.
    if [ -d "$RES/cb-stream" ] && [ -d "$RES/nt-allreduce-f32-stream" ]; then
        bounded 60 "$CB" compare "$RES/cb-stream" "$RES/nt-allreduce-f32-stream"
        echo "(collbench compare: exit 1 means B slower beyond its threshold, 2 nothing matched; not this step's verdict)"
    fi
    return 0
}

step_calibrate() {
    command -v python3 >/dev/null 2>&1 || skip "no python3"
    local py=$SCRIPTS/gpu_calibrate.py
    [ -f "$py" ] || py=$GPU_KIT/scripts/gpu_calibrate.py
    [ -f "$py" ] || skip "no gpu_calibrate.py beside this script or in the kit"
    export PYTHONUNBUFFERED=1
    bounded $(($(step_left) - 3)) python3 "$py" --out "$WORK/calibration.csv" \
        --budget $(($(step_left) - 15))
    local rc=$?
    [ "$rc" -ne 124 ] || return 4
    return "$rc"
}

# ------------------------------------------------------------------------------------------------
# Probes in the main shell: what the steps need to know, each bounded.

find_nvcc() {
    local c
    for c in "$(command -v nvcc 2>/dev/null)" /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
        [ -n "$c" ] && [ -x "$c" ] && { readlink -f "$c"; return; }
    done
}

# Candidate libnccl paths, best first, one per line: "path<TAB>where it came from".
nccl_candidates() {
    [ -n "${COLLBENCH_NCCL_LIB:-}" ] && printf '%s\t%s\n' "$COLLBENCH_NCCL_LIB" "COLLBENCH_NCCL_LIB"
    if command -v python3 >/dev/null 2>&1; then
        timeout 20 python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
seen = []
try:
    import nvidia.nccl as m
    for p in list(getattr(m, "__path__", [])):
        seen.append((os.path.join(p, "lib", "libnccl.so.2"), "python3: import nvidia.nccl"))
except Exception:
    pass
dirs = list(sys.path) + list(getattr(site, "getsitepackages", lambda: [])())
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
for d in dirs:
    for lib in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libnccl.so.2"))) + \
               sorted(glob.glob(os.path.join(d, "torch", "lib", "libnccl.so*"))):
        seen.append((lib, "python3 site folder " + d))
done = set()
for lib, why in seen:
    lib = os.path.realpath(lib)
    if os.path.isfile(lib) and lib not in done:
        done.add(lib)
        print(f"{lib}\t{why}")
EOF
    fi
    if command -v ldconfig >/dev/null 2>&1; then
        ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF "\tldconfig -p"}'
    fi
    local c
    for c in /usr/lib/x86_64-linux-gnu/libnccl.so.2 /usr/lib64/libnccl.so.2 /usr/local/cuda/lib64/libnccl.so.2 \
        /usr/local/nccl*/lib/libnccl.so.2 /opt/nccl*/lib/libnccl.so.2; do
        [ -f "$c" ] && printf '%s\t%s\n' "$c" "fixed path"
    done
}

# nccl.h for a libnccl: pip's nvidia/nccl/include, or the system's.
nccl_include_for() {
    local lib=$1 d
    d=$(dirname "$(dirname "$(readlink -f "$lib")")")
    for c in "$d/include" /usr/include /usr/local/cuda/include; do
        [ -f "$c/nccl.h" ] && { echo "$c"; return; }
    done
}

# ------------------------------------------------------------------------------------------------
# The main flow.

record() { # id status seconds note
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$WORK/steps.tsv"
    printf '%-22s %-8s %6s  %s\n' "$1" "$2" "$3" "$4"
}

# run_step ID CAP STEP: runs step_STEP in a child bash under the smaller of CAP and the budget
# left (less the end reserve), its output in logs/ID.log.
run_step() {
    local id=$1 cap=$2 fn=$3 left t start rc status note secs
    local log=$LOGS/$id.log
    if [ "$INTERRUPTED" = 1 ] && [ "$fn" != compare ]; then
        echo "SKIPPED: this script was interrupted" >"$log"
        record "$id" SKIPPED 0 "this script was interrupted"
        return
    fi
    left=$((DEADLINE - END_RESERVE - $(date +%s)))
    t=$cap
    [ "$left" -lt "$t" ] && t=$left
    if [ "$t" -lt "$MIN_STEP" ]; then
        echo "SKIPPED: budget (${left}s left before the end reserve)" >"$log"
        record "$id" SKIPPED 0 "budget: ${left}s left"
        return
    fi
    local was=$INTERRUPTED
    start=$(ms)
    # In the background, so that a signal to this script reaches the step at once (the trap in
    # main stops the step's process group, which timeout leads).
    STEP_END=$(($(date +%s) + t)) STEP_LOG=$log timeout -k 10 "$t" bash "$SELF" --step "$fn" >"$log" 2>&1 </dev/null &
    CURRENT_PID=$!
    wait "$CURRENT_PID"
    rc=$?
    while kill -0 "$CURRENT_PID" 2>/dev/null; do
        wait "$CURRENT_PID"
        rc=$?
    done
    CURRENT_PID=""
    secs=$(awk -v a="$start" -v b="$(ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
    case $rc in
        0) status=PASS ;;
        3) status=SKIPPED ;;
        4) status=PARTIAL ;;
        124 | 137) status=TIMEOUT ;;
        *) status=FAIL ;;
    esac
    note=$(grep -E '^(SKIPPED|FAIL|NOTE): ' "$log" | tail -1 | sed -E 's/^(SKIPPED|FAIL|NOTE): //' | cut -c1-300)
    [ "$status" = TIMEOUT ] && note="stopped at its ${t}s limit${note:+; $note}"
    if [ "$was" = 0 ] && [ "$INTERRUPTED" = 1 ]; then
        status=STOPPED
        note="this script was interrupted${note:+; $note}"
    fi
    [ "$status" = FAIL ] && [ -z "$note" ] && note="exit $rc; see logs/$id.log"
    record "$id" "$status" "$secs" "$note"
}

# A step in the background (nccl-tests' build): pid in BG_PIDS.
start_bg() {
    local id=$1 cap=$2 fn=$3
    STEP_END=$(($(date +%s) + cap)) STEP_LOG=$LOGS/$id.log \
        timeout -k 10 "$cap" bash "$SELF" --step "$fn" >"$LOGS/$id.log" 2>&1 </dev/null &
    echo "$!" >"$WORK/bg-$id.pid"
    ms >"$WORK/bg-$id.start"
}

# Waits for a background step at most WAIT seconds and records it; if it is still running then,
# it is stopped (HOW=stop) or left running for a later call (HOW=keep; returns 1).
finish_bg() {
    local id=$1 wait=$2 how=${3:-stop} pid start rc status note secs
    pid=$(cat "$WORK/bg-$id.pid" 2>/dev/null) || return 0
    start=$(cat "$WORK/bg-$id.start")
    local until=$(($(date +%s) + wait))
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$until" ] && [ "$INTERRUPTED" = 0 ]; do
        sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
        [ "$how" = keep ] && [ "$INTERRUPTED" = 0 ] && return 1
        # timeout leads the step's process group: stop the group.
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        rc=124
    else
        wait "$pid" 2>/dev/null
        rc=$?
    fi
    rm -f "$WORK/bg-$id.pid"
    secs=$(awk -v a="$start" -v b="$(ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
    case $rc in 0) status=PASS ;; 3) status=SKIPPED ;; 124 | 137 | 143) status=TIMEOUT ;; *) status=FAIL ;; esac
    note=$(grep -E '^(SKIPPED|FAIL|NOTE): ' "$LOGS/$id.log" | tail -1 | sed -E 's/^(SKIPPED|FAIL|NOTE): //' | cut -c1-300)
    [ "$status" = FAIL ] && [ -z "$note" ] && note="exit $rc; see logs/$id.log"
    record "$id" "$status" "$secs" "$note"
}

# collbench report for every results folder of collbench's sweeps, in the background.
start_report() {
    local name=$1 dir=$RES/cb-$1
    [ -f "$dir/summary.csv" ] && [ -x "$CB" ] || return
    # timeout leads its own process group: the group is stopped whole if it outlasts the wait.
    timeout -k 5 120 "$CB" report "$dir" >"$LOGS/report-$name.log" 2>&1 </dev/null &
    REPORT_PIDS+=("$!:$name")
}

write_summary() {
    local f=$WORK/summary.txt used
    used=$(($(date +%s) - START_S))
    {
        echo "collbench GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(uname -n)"
        echo "kit: $(manifest collbench_version), built from $(manifest repo_commit); nccl-tests $(manifest nccl_tests_version) $(manifest nccl_tests_commit)"
        echo "GPU: ${GPU_NAMES:-none visible} (${GPU_COUNT} visible); driver ${DRIVER:-?}, CUDA ${CUDA_DRIVER:-?} (driver)"
        if [ -n "$NCCL_LIB" ]; then
            echo "NCCL: ${NCCL_VERSION:-version unknown} at $NCCL_LIB (found by $NCCL_FROM)"
        else
            echo "NCCL: no libnccl.so.2 found (python3 nvidia.nccl, site folders, ldconfig, fixed paths)"
        fi
        echo "toolkit: nvcc ${NVCC_VERSION:-none}; python3 ${PY_VERSION:-none}; torch ${TORCH_VERSION:-none}"
        echo "collbench nccl backend: $([ "$NCCL_RUNS" = true ] && echo "runs" || echo "cannot run: $NCCL_DETAIL")"
        echo "budget ${BUDGET}s for the steps; ${used}s used before the archive"
        echo
        printf '%-22s %-8s %6s  %s\n' step status seconds note
        awk -F'\t' '{ printf "%-22s %-8s %6s  %s\n", $1, $2, $3, $4 }' "$WORK/steps.tsv"
        echo
        echo "results folders (points, wrong elements, meta.json status):"
        local d any=no
        for d in "$RES"/*/; do
            [ -d "$d" ] || continue
            any=yes
            printf '  %-28s %6s points %6s wrong  %s\n' "$(basename "$d")" "$(rows_of "$d")" "$(wrong_of "$d")" \
                "$(grep -o '"status": *"[a-z]*"' "$d/meta.json" 2>/dev/null | sed 's/.*"\([a-z]*\)"$/\1/')"
        done
        [ "$any" = yes ] || echo "  none"
        if [ -s "$WORK/compare-headline.txt" ]; then
            echo
            echo "collbench against nccl-tests (compare.csv; time ratio > 1: collbench slower):"
            sed 's/^/  /' "$WORK/compare-headline.txt"
        fi
        if [ -s "$WORK/calibration.csv" ]; then
            echo
            echo "compute calibration (calibration.csv):"
            awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                { printf "  %-10s %-22s tp %-2s %10s ms %8s TFLOP/s %7s TB/s  eff %s\n", $c["kind"], $c["name"], $c["tp"], $c["time_ms_median"], $c["tflops"], $c["tbps"], $c["efficiency"] }' \
                "$WORK/calibration.csv"
        fi
        echo
        echo "files in $OUTDIR: summary.txt, compare.csv and calibration.csv (where made), gpu-check.tar.gz (logs/, results/, nccl-tests-out/, summary.txt)"
    } >"$f"
}

make_archive() {
    local arch=$OUTDIR/gpu-check.tar.gz limit=$((15 * 1024 * 1024)) parts=(summary.txt logs)
    [ -d "$RES" ] && parts+=(results)
    [ -d "$WORK/nccl-tests-out" ] && parts+=(nccl-tests-out)
    [ -f "$WORK/compare.csv" ] && parts+=(compare.csv)
    [ -f "$WORK/calibration.csv" ] && parts+=(calibration.csv)
    tar -C "$WORK" -czf "$arch" "${parts[@]}" 2>>"$LOGS/archive.log"
    if [ "$(stat -c %s "$arch" 2>/dev/null || echo 0)" -gt "$limit" ]; then
        # Too large to come back in one file: samples.csv apart, xz-compressed.
        tar -C "$WORK" -czf "$arch" --exclude=samples.csv "${parts[@]}" 2>>"$LOGS/archive.log"
        (cd "$WORK" && find results -name samples.csv -print0 | tar --null -T - -cJf "$OUTDIR/gpu-check-samples.tar.xz")
        if [ "$(stat -c %s "$OUTDIR/gpu-check-samples.tar.xz" 2>/dev/null || echo 0)" -gt "$limit" ]; then
            rm -f "$OUTDIR/gpu-check-samples.tar.xz"
            echo "samples.csv files left out: over 15 MiB even compressed" >>"$WORK/summary.txt"
        else
            echo "samples.csv files are in gpu-check-samples.tar.xz (the archive was over 15 MiB)" >>"$WORK/summary.txt"
        fi
        cp "$WORK/summary.txt" "$OUTDIR/summary.txt"
    fi
}

main() {
    if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
        sed -n '2,/^# bad arguments/p' "$SELF" | sed 's/^# \{0,1\}//' >&2
        exit 2
    fi
    OUTDIR=$1
    if ! mkdir -p "$OUTDIR" || ! OUTDIR=$(cd "$OUTDIR" && pwd -P); then
        echo "gpu-check: cannot create $1" >&2
        exit 2
    fi
    [ -w "$OUTDIR" ] || { echo "gpu-check: cannot write to $OUTDIR" >&2; exit 2; }
    START_S=$(date +%s)
    BUDGET=${GPU_CHECK_BUDGET:-390}
    DEADLINE=$((START_S + BUDGET))
    END_RESERVE=25 # compare.csv's step and the reports, after the last measuring step
    MIN_STEP=10
    if [ -n "${GPU_CHECK_WORK:-}" ]; then
        WORK=$GPU_CHECK_WORK
        mkdir -p "$WORK" || exit 2
    else
        WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 2
    fi
    WORK=$(cd "$WORK" && pwd -P)
    case "$WORK/" in "$OUTDIR"/*) echo "gpu-check: the work folder must not be inside OUTDIR" >&2; exit 2 ;; esac
    LOGS=$WORK/logs
    RES=$WORK/results
    NT_BUILD=$WORK/nccl-tests-build
    mkdir -p "$LOGS" "$RES"
    : >"$WORK/steps.tsv"
    GPU_KIT=$(readlink -f "${GPU_KIT:-$REPO/gpu-kit}")
    CB=$GPU_KIT/bin/collbench
    TB=$GPU_KIT/bin/nccl-tests-bin
    CB_OPS=${GPU_CHECK_OPS:-$OPS_ALL}
    SMALL_MAX=${GPU_CHECK_SMALL_MAX:-16M}
    LARGE_MIN=${GPU_CHECK_LARGE_MIN:-32M}
    LARGE_MAX=${GPU_CHECK_LARGE_MAX:-4G}
    LARGE_OPS=${GPU_CHECK_LARGE_OPS:-allreduce,reducescatter,allgather}
    LARGE_DTYPES=${GPU_CHECK_LARGE_DTYPES:-f32}
    REPORT_PIDS=()
    echo "gpu-check: kit $GPU_KIT, work $WORK, out $OUTDIR, budget ${BUDGET}s"
    [ -f "$GPU_KIT/MANIFEST.txt" ] || echo "gpu-check: no kit at $GPU_KIT (make it with scripts/gpu-kit.sh); the steps that need it say SKIPPED"

    # --- probes (bounded) ---------------------------------------------------------------------
    GPU_COUNT=0
    GPU_NAMES=""
    GPU_SMI_NOTE="not on PATH"
    DRIVER=""
    CUDA_DRIVER=""
    SM=90
    if command -v nvidia-smi >/dev/null 2>&1; then
        local q
        if q=$(timeout 20 nvidia-smi -L 2>&1); then
            # "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
            GPU_COUNT=$(printf '%s\n' "$q" | grep -c '^GPU [0-9]')
            GPU_NAMES=$(printf '%s\n' "$q" | sed -n 's/^GPU [0-9]*: \(.*\) (UUID.*/\1/p' | sort | uniq -c |
                awk '{ $1 = $1 "x"; print }' | tr '\n' ';' | sed 's/;$//')
            GPU_SMI_NOTE="$GPU_COUNT GPU(s)"
            # Driver and compute capability (the query of compute_cap needs driver 510 or later).
            q=$(timeout 20 nvidia-smi --query-gpu=driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)
            DRIVER=$(printf '%s' "$q" | cut -d, -f1 | tr -d ' ')
            local cc
            cc=$(printf '%s' "$q" | cut -s -d, -f2 | tr -d ' .')
            [ -n "$cc" ] && [ "$cc" -eq "$cc" ] 2>/dev/null && SM=$cc
            CUDA_DRIVER=$(timeout 20 nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | awk '{print $3}')
        else
            GPU_SMI_NOTE="nvidia-smi failed: $(printf '%s' "$q" | head -1 | cut -c1-160)"
        fi
    fi
    NVCC=$(find_nvcc)
    CUDA_HOME=""
    CUDA_LIBDIR=""
    NVCC_VERSION=""
    if [ -n "$NVCC" ]; then
        CUDA_HOME=$(dirname "$(dirname "$NVCC")")
        NVCC_VERSION=$(timeout 20 "$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*' | awk '{print $2}')
        for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib"; do
            [ -e "$d/libcudart.so" ] && { CUDA_LIBDIR=$d; break; }
        done
    fi
    nccl_candidates >"$WORK/nccl-candidates.txt"
    NCCL_LIB=$(head -1 "$WORK/nccl-candidates.txt" | cut -f1)
    NCCL_FROM=$(head -1 "$WORK/nccl-candidates.txt" | cut -f2)
    NCCL_INC=""
    [ -n "$NCCL_LIB" ] && NCCL_INC=$(nccl_include_for "$NCCL_LIB")
    # collbench loads exactly this libnccl; nccl-tests links and runs against it too.
    [ -n "$NCCL_LIB" ] && export COLLBENCH_NCCL_LIB=$NCCL_LIB
    PY_VERSION=""
    TORCH_VERSION=""
    if command -v python3 >/dev/null 2>&1; then
        PY_VERSION=$(python3 --version 2>&1 | awk '{print $2}')
        TORCH_VERSION=$(timeout 20 python3 -c 'from importlib import metadata; print(metadata.version("torch"))' 2>/dev/null)
    fi
    NCCL_RUNS=false
    NCCL_DETAIL="no collbench in the kit"
    NCCL_VERSION=""
    if [ -x "$CB" ]; then
        local json
        json=$(timeout 60 "$CB" backends --json 2>/dev/null)
        NCCL_RUNS=$(nccl_field "$json" runs)
        NCCL_DETAIL=$(nccl_field "$json" detail)
        [ -n "$NCCL_DETAIL" ] || NCCL_DETAIL="collbench backends --json gave no nccl row"
        NCCL_VERSION=$(printf '%s' "$NCCL_DETAIL" | grep -o 'NCCL [0-9][0-9.]*' | head -1)
    fi
    export WORK LOGS RES NT_BUILD GPU_KIT CB TB CB_OPS SMALL_MAX LARGE_MIN LARGE_MAX LARGE_OPS \
        LARGE_DTYPES GPU_COUNT GPU_SMI_NOTE SM NVCC CUDA_HOME CUDA_LIBDIR NCCL_LIB NCCL_FROM \
        NCCL_INC NCCL_RUNS NCCL_DETAIL
    echo "gpu-check: GPUs: $GPU_SMI_NOTE; nvcc: ${NVCC:-none}; libnccl: ${NCCL_LIB:-none}; torch: ${TORCH_VERSION:-none}; collbench nccl runs: $NCCL_RUNS"

    INTERRUPTED=0
    CURRENT_PID=""
    trap 'echo "gpu-check: interrupted; writing the summary and the archive"; INTERRUPTED=1
          [ -n "$CURRENT_PID" ] && kill -TERM -- "-$CURRENT_PID" 2>/dev/null' INT TERM

    # --- the steps; each bounded by its cap and by the budget --------------------------------
    start_bg build-nccl-tests 240 build # compiles on the CPUs while the GPU tests run
    run_step 01-env 30 env
    run_step 02-gpu-tests 100 tests
    # This sweep may run beside the compiler, which leaves 4 cores free at the lowest priority.
    run_step 03-sweep-graph 55 sweep_graph
    # The stream sweep and nccl-tests count host launch overhead: the compiler is done first.
    local wait_build=$((DEADLINE - END_RESERVE - $(date +%s) - 220))
    [ "$wait_build" -gt 90 ] && wait_build=90
    [ "$wait_build" -lt 0 ] || [ "$INTERRUPTED" = 1 ] && wait_build=0
    finish_bg build-nccl-tests "$wait_build" keep ||
        echo "gpu-check: nccl-tests still compiling; the stream sweep shares the CPUs with it"
    run_step 04-sweep-stream 70 sweep_stream
    local wait_more=$((DEADLINE - END_RESERVE - $(date +%s) - 150))
    [ "$wait_more" -gt 60 ] && wait_more=60
    [ "$wait_more" -lt 0 ] || [ "$INTERRUPTED" = 1 ] && wait_more=0
    finish_bg build-nccl-tests "$wait_more" stop
    run_step 05-nccl-tests 90 nccltests
    run_step 05b-nccl-onerank 15 onerank
    start_report graph
    start_report stream
    run_step 06-calibrate 60 calibrate
    run_step 07-sweep-register 30 sweep_register
    start_report register
    run_step 07b-sweep-compute 30 sweep_compute
    start_report compute
    # Large sizes to 4 GiB take what is left: cut at the limit, the points measured are kept.
    run_step 08-sweep-large 100 sweep_large
    start_report large
    END_RESERVE=5 run_step 09-compare 20 compare
    local entry pid rc until=$(($(date +%s) + 20)) reports=""
    for entry in "${REPORT_PIDS[@]}"; do
        pid=${entry%%:*}
        while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$until" ]; do sleep 1; done
        kill -0 "$pid" 2>/dev/null && kill -TERM -- "-$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        rc=$?
        reports="$reports ${entry#*:}:$rc"
    done
    if [ -n "$reports" ]; then
        record 10-reports DONE - "collbench report exit codes (0 ok, 124 stopped):$reports"
    else
        record 10-reports SKIPPED - "no collbench results folders"
    fi

    write_summary
    cp "$WORK/summary.txt" "$OUTDIR/summary.txt"
    [ -f "$WORK/compare.csv" ] && cp "$WORK/compare.csv" "$OUTDIR/"
    [ -f "$WORK/calibration.csv" ] && cp "$WORK/calibration.csv" "$OUTDIR/"
    make_archive
    cat "$OUTDIR/summary.txt"
    echo
    echo "gpu-check: $(($(date +%s) - START_S))s in all; wrote $(find "$OUTDIR" -maxdepth 1 -type f -printf '%f ')"
    local code=0
    awk -F'\t' '$2 == "FAIL" || $2 == "TIMEOUT" { bad = 1 } END { exit !bad }' "$WORK/steps.tsv" && code=1
    [ "$INTERRUPTED" = 1 ] && code=130
    if [ "${GPU_CHECK_KEEP:-0}" = 1 ]; then
        echo "gpu-check: work folder kept: $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$code"
}

if [ "${1:-}" = --step ]; then
    "step_$2"
    exit $?
fi
main "$@"
