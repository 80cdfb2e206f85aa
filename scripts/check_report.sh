#!/usr/bin/env bash
# Renders a collbench HTML report in headless Chromium (Debian package `chromium`) and checks
# that it loads without errors: every section is in the rendered DOM, the figures are inline
# SVG, the browser logged no console error, and the page asked for nothing over the network
# (Chromium's net log lists every request the page started; host names resolve to nothing, so
# nothing leaves the machine). Then takes a screenshot to look at.
#
#   scripts/check_report.sh results/<run>/report.html [screenshot.png]
#
# Exit 0 when the page is fine, 1 when a check failed, 2 when Chromium is missing or failed.
set -euo pipefail

html=${1:?usage: scripts/check_report.sh REPORT.html [SCREENSHOT.png]}
shot=${2:-${html%.html}.png}
[[ -f $html ]] || { echo "check_report: $html: no such file" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
    echo "check_report: no Chromium; install it: apt-get install -y --no-install-recommends chromium" >&2
    exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$work/profile" --host-resolver-rules="MAP * ~NOTFOUND"
       --enable-logging=stderr --v=0 --virtual-time-budget=5000)
# Requests the browser makes for itself (time sync, accounts) have no site; the page's own
# requests carry site=file:// in the net log.
page_requests() {
    # One event per line.
    { grep 'site=file://' "$1" || true; } | { grep -oE '"url":"[a-z]+://[^"]*"' || true; } | sort -u
}
url="file://$(realpath "$html")"

if ! timeout 120 "$browser" "${flags[@]}" --log-net-log="$work/net.json" --dump-dom "$url" \
        >"$work/dom.html" 2>"$work/dom.log"; then
    echo "check_report: Chromium failed to load $html:" >&2
    tail -5 "$work/dom.log" >&2
    exit 2
fi

failed=0
fail() { echo "check_report: FAIL: $*" >&2; failed=1; }

for id in summary verdict figures fit points stragglers environment; do
    grep -q "<section id=\"$id\"" "$work/dom.html" || fail "section '$id' missing from the rendered page"
done
svgs=$(grep -o '<svg' "$work/dom.html" | wc -l)
(( svgs > 0 )) || fail "no inline <svg> figure in the rendered page"
grep -q '</html>' "$work/dom.html" || fail "the rendered DOM is cut short"
if grep -E 'CONSOLE|net::ERR_|Failed to load|Uncaught' "$work/dom.log" >"$work/errors.log"; then
    fail "the browser logged errors:"
    cat "$work/errors.log" >&2
fi
[[ -s $work/net.json ]] || fail "Chromium wrote no net log"
page_requests "$work/net.json" >"$work/requests.txt"
if [[ -s $work/requests.txt ]]; then
    fail "the page requested resources over the network:"
    cat "$work/requests.txt" >&2
fi

if ! timeout 120 "$browser" "${flags[@]}" --hide-scrollbars --window-size=1400,2200 \
        --screenshot="$shot" "$url" >/dev/null 2>"$work/shot.log" || [[ ! -s $shot ]]; then
    echo "check_report: Chromium could not take a screenshot:" >&2
    tail -5 "$work/shot.log" >&2
    exit 2
fi

if (( failed )); then
    exit 1
fi
echo "check_report: ok: $html loads in $($browser --version 2>/dev/null | head -1) with 7 sections, $svgs inline SVG figures, no console or network errors; screenshot $shot"
