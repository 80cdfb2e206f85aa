#!/usr/bin/env bash
# Makes the kit that scripts/gpu-check.sh runs from on a GPU machine that has no network and no
# Rust: the NCCL build of collbench, the binary of the NCCL integration tests (tests/nccl.rs,
# whose GPU tests are #[ignore]d), nccl-tests' source at a pinned commit, and a MANIFEST.txt.
# Runs here, builds nothing: build first (docs/GPU.md), then
#
#   bash scripts/gpu-kit.sh [KITDIR] [--collbench PATH] [--test-bin PATH]
#                           [--cargo-json FILE] [--nccl-tests SRC]
#
# KITDIR        where the kit goes [default: gpu-kit at the repository root]
# --collbench   the collbench binary [default: target/release/collbench]
# --test-bin    the NCCL integration tests' binary [default: from --cargo-json, else the newest
#               target/release/deps/nccl-<hash>]
# --cargo-json  the output of `cargo test --release --features nccl --no-run
#               --message-format=json` (its artifact whose target name is `nccl` is the binary)
# --nccl-tests  a clone of github.com/NVIDIA/nccl-tests holding the pinned commit, or a plain
#               source tree of that release [default: $NCCL_TESTS_SRC, else a local mirror]
#
# A missing piece is skipped with a message; gpu-check.sh then says SKIPPED for what needs it.
# Exit 0 when a kit was written (complete or not), 2 on bad arguments or an unsafe KITDIR.
set -u -o pipefail

# nccl-tests v2.19.6 ("NCCL_TESTS_VERSION 2.19.6"), the newest 2.19.x release commit.
NCCL_TESTS_COMMIT=a0b82b2260cf5152b9f8c061bbf7eaf0ba096432
NCCL_TESTS_VERSION=2.19.6
NCCL_TESTS_URL=https://github.com/NVIDIA/nccl-tests
# The run tool carries at most 64 MiB with the working tree.
KIT_LIMIT_BYTES=$((60 * 1024 * 1024))

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

die() {
    echo "gpu-kit: $*" >&2
    exit 2
}
say() { echo "gpu-kit: $*"; }

kit=""
collbench=""
test_bin=""
cargo_json=""
nt_src="${NCCL_TESTS_SRC:-}"
while [ $# -gt 0 ]; do
    case "$1" in
        --collbench) [ $# -ge 2 ] || die "--collbench needs a path"; collbench=$2; shift 2 ;;
        --test-bin) [ $# -ge 2 ] || die "--test-bin needs a path"; test_bin=$2; shift 2 ;;
        --cargo-json) [ $# -ge 2 ] || die "--cargo-json needs a file"; cargo_json=$2; shift 2 ;;
        --nccl-tests) [ $# -ge 2 ] || die "--nccl-tests needs a path"; nt_src=$2; shift 2 ;;
        -h | --help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$kit" ] || die "one KITDIR only (got $kit and $1)"; kit=$1; shift ;;
    esac
done
kit=${kit:-$repo/gpu-kit}
[ -n "$collbench" ] || collbench=$repo/target/release/collbench

# Only a fresh folder, an empty one or an earlier kit is (re)filled.
if [ -e "$kit" ]; then
    [ -d "$kit" ] || die "$kit exists and is not a folder"
    if [ -n "$(ls -A "$kit")" ] && [ ! -f "$kit/MANIFEST.txt" ]; then
        die "$kit is not empty and holds no MANIFEST.txt: not a kit, left alone"
    fi
    rm -rf "${kit:?}/bin" "${kit:?}/nccl-tests" "${kit:?}/scripts" "${kit:?}/MANIFEST.txt"
fi
mkdir -p "$kit/bin" "$kit/scripts" || die "cannot create $kit"
kit=$(cd "$kit" && pwd -P)
manifest=$kit/MANIFEST.txt
missing=()

sha() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }
# The newest GLIBC symbol version a binary needs (the GPU machine's glibc must be at least that).
glibc_need() {
    command -v objdump >/dev/null 2>&1 || { echo unknown; return; }
    objdump -T "$1" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1
}

{
    echo "# collbench GPU kit (scripts/gpu-kit.sh); read by scripts/gpu-check.sh"
    echo "made_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "made_on=$(uname -n) $(uname -sm)"
    if git -C "$repo" rev-parse HEAD >/dev/null 2>&1; then
        dirty=$(git -C "$repo" status --porcelain -- src tests Cargo.toml Cargo.lock 2>/dev/null | wc -l)
        echo "repo_commit=$(git -C "$repo" rev-parse HEAD)$([ "$dirty" -gt 0 ] && echo " (+$dirty changed files under src/ tests/ Cargo.*)")"
    fi
} >"$manifest"

# --- collbench -------------------------------------------------------------------------------
if [ -x "$collbench" ] && [ -f "$collbench" ]; then
    cp "$collbench" "$kit/bin/collbench"
    version=$("$kit/bin/collbench" --version 2>/dev/null | head -1)
    json=$("$kit/bin/collbench" backends --json 2>/dev/null | tr -d ' \n')
    nccl_built=no
    case "$json" in *'"backend":"nccl","built":true'*) nccl_built=yes ;; esac
    [ "$nccl_built" = yes ] ||
        say "WARNING: $collbench was built without the nccl feature (cargo build --release --features nccl); the GPU machine can only run the host backend with it"
    {
        echo "collbench=bin/collbench"
        echo "collbench_from=$(readlink -f "$collbench")"
        echo "collbench_version=$version"
        echo "collbench_nccl_built=$nccl_built"
        echo "collbench_sha256=$(sha "$kit/bin/collbench")"
        echo "collbench_mtime=$(date -u -r "$collbench" +%Y-%m-%dT%H:%M:%SZ)"
        echo "collbench_needs=$(glibc_need "$kit/bin/collbench")"
    } >>"$manifest"
    say "collbench: $collbench ($version, nccl built: $nccl_built)"
else
    say "SKIPPED collbench: $collbench is missing or not executable (cargo build --release --features nccl)"
    missing+=(collbench)
fi

# --- the NCCL integration tests' binary -----------------------------------------------------
# From cargo's JSON messages: the test artifact whose target name is `nccl`.
from_cargo_json() {
    local file=$1
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$file" <<'EOF'
import json, sys
exe = ""
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        m = json.loads(line)
    except ValueError:
        continue
    t = m.get("target") or {}
    if m.get("reason") == "compiler-artifact" and t.get("name") == "nccl" \
            and "test" in t.get("kind", []) and m.get("executable"):
        exe = m["executable"]
print(exe)
EOF
    elif command -v jq >/dev/null 2>&1; then
        jq -r 'select(.reason == "compiler-artifact" and .target.name == "nccl"
                      and (.target.kind | index("test")) and .executable != null)
               | .executable' "$file" 2>/dev/null | tail -1
    else
        grep -o '"executable":"[^"]*/deps/nccl-[0-9a-f]*"' "$file" | tail -1 | cut -d'"' -f4
    fi
}
if [ -z "$test_bin" ] && [ -n "$cargo_json" ]; then
    if [ -r "$cargo_json" ]; then
        test_bin=$(from_cargo_json "$cargo_json")
        [ -n "$test_bin" ] || say "no artifact with target name nccl in $cargo_json"
    else
        say "cannot read $cargo_json"
    fi
fi
if [ -z "$test_bin" ]; then
    # The newest executable target/release/deps/nccl-<hash> (cargo's name for tests/nccl.rs)
    # that has the GPU tests (a build with --features nccl), else the newest.
    newest=""
    while read -r _ cand; do
        [ -n "$newest" ] || newest=$cand
        if "$cand" --list --ignored 2>/dev/null | grep -q '^gpu::'; then
            test_bin=$cand
            break
        fi
    done < <(find "$repo/target/release/deps" -maxdepth 1 -type f -name 'nccl-*' -perm -u+x \
        ! -name '*.*' -printf '%T@ %p\n' 2>/dev/null | sort -rn)
    test_bin=${test_bin:-$newest}
    [ -z "$test_bin" ] || say "test binary picked as the newest target/release/deps/nccl-* with GPU tests: $test_bin (give --cargo-json to be exact)"
fi
if [ -n "$test_bin" ] && [ -x "$test_bin" ] && [ -f "$test_bin" ]; then
    cp "$test_bin" "$kit/bin/nccl-tests-bin"
    listed=$("$kit/bin/nccl-tests-bin" --list --ignored 2>/dev/null | grep -c ': test$')
    gpu_listed=$("$kit/bin/nccl-tests-bin" --list --ignored 2>/dev/null | grep -c '^gpu::')
    [ "$gpu_listed" -gt 0 ] ||
        say "WARNING: $test_bin lists no gpu:: tests: it was built without --features nccl"
    # The tests run the collbench binary whose absolute path cargo compiled into them
    # (CARGO_BIN_EXE_collbench); gpu-check.sh puts the kit's collbench there when it is absent.
    expects=""
    for cand in "$repo/target/release/collbench" "${CARGO_TARGET_DIR:-/nonexistent}/release/collbench" \
        "$(readlink -f "$collbench" 2>/dev/null)"; do
        if [ -n "$cand" ] && grep -aqF "$cand" "$kit/bin/nccl-tests-bin"; then
            expects=$cand
            break
        fi
    done
    if [ -z "$expects" ]; then
        expects=$(grep -ao '/[[:alnum:]_./+-]*/release/collbench' "$kit/bin/nccl-tests-bin" | head -1)
    fi
    [ -n "$expects" ] || say "WARNING: could not find the collbench path compiled into $test_bin"
    {
        echo "test_bin=bin/nccl-tests-bin"
        echo "test_bin_from=$(readlink -f "$test_bin")"
        echo "test_bin_sha256=$(sha "$kit/bin/nccl-tests-bin")"
        echo "test_bin_mtime=$(date -u -r "$test_bin" +%Y-%m-%dT%H:%M:%SZ)"
        echo "test_bin_ignored_tests=$listed"
        echo "test_bin_expects_collbench=$expects"
    } >>"$manifest"
    say "test binary: $test_bin ($listed ignored tests, $gpu_listed gpu::; runs $expects)"
else
    say "SKIPPED test binary: none found (cargo test --release --features nccl --no-run --message-format=json, then --cargo-json or --test-bin)"
    missing+=(test-binary)
fi

# --- nccl-tests' source at the pinned commit ----------------------------------------------------
nt_dest=$kit/nccl-tests
nt_ok=no
copy_nccl_tests() {
    local src=$1
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        if ! git -C "$src" cat-file -e "$NCCL_TESTS_COMMIT^{commit}" 2>/dev/null; then
            say "$src lacks commit $NCCL_TESTS_COMMIT (git -C $src fetch --tags origin)"
            return 1
        fi
        mkdir -p "$nt_dest" && git -C "$src" archive --format=tar "$NCCL_TESTS_COMMIT" | tar -x -C "$nt_dest" || return 1
        echo "nccl_tests_from=$src (git archive)" >>"$manifest"
    elif [ -f "$src/src/common.h" ]; then
        if ! grep -q "NCCL_TESTS_VERSION \"$NCCL_TESTS_VERSION\"" "$src/src/common.h"; then
            say "$src is not nccl-tests $NCCL_TESTS_VERSION (src/common.h says $(grep -o 'NCCL_TESTS_VERSION "[^"]*"' "$src/src/common.h"))"
            return 1
        fi
        mkdir -p "$nt_dest" && tar -C "$src" --exclude=.git --exclude=build -cf - . | tar -x -C "$nt_dest" || return 1
        echo "nccl_tests_from=$src (source tree of $NCCL_TESTS_VERSION; commit not checked)" >>"$manifest"
    else
        say "$src is neither a git clone of nccl-tests nor its source tree"
        return 1
    fi
}
if [ -z "$nt_src" ]; then
    for cand in /work/.mirror/NVIDIA+nccl-tests/repo "$repo/../nccl-tests"; do
        if [ -e "$cand" ]; then nt_src=$cand; break; fi
    done
fi
if [ -n "$nt_src" ] && copy_nccl_tests "$nt_src"; then
    nt_ok=yes
elif command -v git >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    say "cloning $NCCL_TESTS_URL (60 s at most)"
    if timeout 60 git clone -q "$NCCL_TESTS_URL" "$tmp/nccl-tests" 2>/dev/null && copy_nccl_tests "$tmp/nccl-tests"; then
        nt_ok=yes
    fi
    rm -rf "$tmp"
fi
if [ "$nt_ok" = yes ]; then
    echo "$NCCL_TESTS_COMMIT" >"$nt_dest/COMMIT"
    {
        echo "nccl_tests=nccl-tests"
        echo "nccl_tests_commit=$NCCL_TESTS_COMMIT"
        echo "nccl_tests_version=$NCCL_TESTS_VERSION"
    } >>"$manifest"
    say "nccl-tests $NCCL_TESTS_VERSION ($NCCL_TESTS_COMMIT): $(du -sh "$nt_dest" | cut -f1)"
else
    rm -rf "$nt_dest"
    say "SKIPPED nccl-tests: no source (give --nccl-tests a clone of $NCCL_TESTS_URL)"
    missing+=(nccl-tests)
fi

# --- the calibration script and the single-rank probe, so the kit stands alone -------------------
for f in gpu_calibrate.py nccl_onerank_fp8.cu; do
    if [ -f "$repo/scripts/$f" ]; then
        cp "$repo/scripts/$f" "$kit/scripts/"
    else
        missing+=("$f")
    fi
done

size=$(du -sb "$kit" | cut -f1)
echo "kit_bytes=$size" >>"$manifest"
echo "kit_missing=${missing[*]:-none}" >>"$manifest"
say "kit at $kit: $((size / 1024)) KiB, missing: ${missing[*]:-nothing}"
[ "$size" -le "$KIT_LIMIT_BYTES" ] ||
    say "WARNING: the kit is over $((KIT_LIMIT_BYTES / 1024 / 1024)) MiB; the run tool carries 64 MiB with the working tree"
exit 0
