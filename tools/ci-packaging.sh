#!/usr/bin/env bash
# CI for packaging (issue #9): systemd units, the .deb, pipx, and the tests that need system
# tools. Called from .ci/run; runnable by hand from anywhere:
#
#   tools/ci-packaging.sh
#
# Steps (each either passes, fails, or is skipped with the reason printed):
#   1. system tools: systemd (systemd-analyze), dpkg-deb, prometheus-node-exporter, promtool
#      (Debian's prometheus), munge and Slurm (slurmctld, slurmd, slurm-client: the real-Slurm
#      test) — installed with apt-get only when missing, and only as root with apt-get
#      present, their services kept from starting (policy-rc.d) — the tests start their own;
#   2. build the .deb (packaging/deb/build.sh), inspect it (dpkg-deb --info/--contents);
#   3. run its entry point from an unpacked root (dpkg-deb -x; nothing is installed);
#   4. systemd-analyze verify on the units (ExecStart pointed at the unpacked entry point),
#      strict: any warning fails; systemd-analyze security --offline: exposure <= 3.0;
#   5. pipx install of the checkout into a throwaway PIPX_HOME, then run it;
#   6. pytest tests/packaging tests/daemon (with SITSCHECK_DEB set), when a pytest is found;
#   7. promtool check/test rules on packaging/prometheus; kubernetes-validate --strict on
#      packaging/k8s (when installed: the test extra has it).
#
# Environment: PYTEST (default: .venv/bin/pytest, else `python3 -m pytest`),
# SITSCHECK_CI_SKIP_PIPX=1 (skip step 5), SITSCHECK_CI_NO_APT=1 (never apt-get install).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0
pass() { printf 'ci-packaging: PASS %s\n' "$*"; }
fail() { printf 'ci-packaging: FAIL %s\n' "$*" >&2; failed=1; }
skip() { printf 'ci-packaging: SKIP %s\n' "$*"; }

# --- 1. system tools, installed only when missing ---------------------------------------
apt_updated=0
ensure() {  # ensure COMMAND PACKAGE: 0 when COMMAND is (or was made) available
    local command=$1 package=$2
    command -v "$command" >/dev/null 2>&1 && return 0
    if [ "${SITSCHECK_CI_NO_APT:-0}" = 1 ]; then
        skip "$command: missing and SITSCHECK_CI_NO_APT=1"
        return 1
    fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        skip "$command: missing, and apt-get cannot install $package here (not root or no apt)"
        return 1
    fi
    if [ $apt_updated = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
        apt_updated=1
    fi
    local policy=/usr/sbin/policy-rc.d made_policy=0 installed=0
    if [ ! -e $policy ]; then  # keep the package's own service from starting
        printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && made_policy=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "$package" >"$work/apt-$package.log" 2>&1 && installed=1
    [ $made_policy = 0 ] || rm -f $policy
    if [ $installed = 0 ]; then
        skip "$command: apt-get install $package failed: $(tail -n 1 "$work/apt-$package.log")"
        return 1
    fi
    command -v "$command" >/dev/null 2>&1 || [ -x "/usr/sbin/$command" ]
}

have_systemd=0
ensure systemd-analyze systemd && have_systemd=1
have_dpkg=0
ensure dpkg-deb dpkg && have_dpkg=1
ensure prometheus-node-exporter prometheus-node-exporter >/dev/null || true
have_promtool=0
ensure promtool prometheus && have_promtool=1
for pair in munged:munge slurmctld:slurmctld slurmd:slurmd scontrol:slurm-client; do
    ensure "${pair%%:*}" "${pair#*:}" || true  # the real-Slurm test skips only without root/apt
done

# --- 2. build and inspect the .deb ------------------------------------------------------
deb=""
if [ $have_dpkg = 1 ]; then
    if deb=$(packaging/deb/build.sh "$work/dist" 2>"$work/build.log" | tail -n 1) && [ -f "$deb" ]; then
        pass "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
        dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'
        listing=$(dpkg-deb --contents "$deb")
        for path in ./usr/bin/sitscheck ./usr/sbin/sitscheck-healthcheck \
            ./usr/lib/systemd/system/sitscheck.service ./usr/lib/systemd/system/sitscheck.timer \
            ./usr/lib/systemd/system/sitscheck-daemon.service ./usr/lib/tmpfiles.d/sitscheck.conf \
            ./usr/lib/sysusers.d/sitscheck.conf \
            ./etc/sitscheck/config.yaml ./etc/default/sitscheck \
            ./usr/lib/sitscheck/python/sitscheck/cli.py; do
            grep -q " $path\$" <<<"$listing" || fail "the .deb lacks $path"
        done
        pass "dpkg-deb --contents: $(wc -l <<<"$listing") entries"
    else
        tail -n 20 "$work/build.log" >&2
        fail "packaging/deb/build.sh"
        deb=""
    fi
else
    skip "the .deb: dpkg-deb is not available"
fi

# --- 3. the installed entry point, from an unpacked root --------------------------------
entry=""
if [ -n "$deb" ]; then
    root=$work/root
    dpkg-deb -x "$deb" "$root"
    entry=$root/usr/bin/sitscheck
    if out=$("$entry" --version 2>&1); then pass "unpacked entry point: $out"; else fail "$entry --version: $out"; fi
    "$entry" run --from tests/bundles/h200x2-idle-v0 --output json >"$work/report.json" 2>"$work/run.err"
    rc=$?
    if [ $rc -le 3 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["checks"]' "$work/report.json" 2>/dev/null; then
        pass "unpacked entry point replays a bundle (exit $rc)"
    else
        fail "unpacked entry point run (exit $rc): $(tail -n 3 "$work/run.err")"
    fi
fi

# --- 4. systemd-analyze verify / security -----------------------------------------------
if [ $have_systemd = 1 ]; then
    units=$work/units
    mkdir -p "$units"
    target=$entry
    if [ -z "$target" ]; then  # no package: a stub, so verify can still check the units
        target=$work/stub/sitscheck
        mkdir -p "$(dirname "$target")"
        printf '#!/bin/sh\nexit 0\n' >"$target"
        chmod +x "$target"
    fi
    for file in packaging/systemd/*.service packaging/systemd/*.timer; do
        sed "s#/usr/bin/sitscheck#$target#g" "$file" >"$units/$(basename "$file")"
    done
    verify=$(systemd-analyze verify "$units"/*.service "$units"/*.timer 2>&1)
    if [ $? = 0 ] && [ -z "$verify" ]; then
        pass "systemd-analyze verify: $(cd "$units" && echo *)"
    else
        fail "systemd-analyze verify: $verify"
    fi
    for service in sitscheck.service sitscheck-daemon.service; do
        security=$(systemd-analyze security --offline=true "$units/$service" 2>&1)
        score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$security")
        if [ -z "$score" ]; then
            skip "systemd-analyze security --offline on $service: $(tail -n 1 <<<"$security")"
        elif awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }'; then
            pass "systemd-analyze security $service: exposure $score"
        else
            fail "systemd-analyze security $service: exposure $score > 3.0"
        fi
    done
else
    skip "systemd units: systemd-analyze is not available"
fi

# --- 5. pipx install --------------------------------------------------------------------
if [ "${SITSCHECK_CI_SKIP_PIPX:-0}" = 1 ]; then
    skip "pipx: SITSCHECK_CI_SKIP_PIPX=1"
else
    pipx=$(command -v pipx || true)
    if [ -z "$pipx" ]; then
        python3 -m venv "$work/pipx-venv" && "$work/pipx-venv/bin/pip" install -q pipx \
            >"$work/pipx-install.log" 2>&1 && pipx=$work/pipx-venv/bin/pipx
    fi
    if [ -z "$pipx" ]; then
        skip "pipx: not installed and not installable ($(tail -n 1 "$work/pipx-install.log" 2>/dev/null))"
    elif PIPX_HOME=$work/pipx PIPX_BIN_DIR=$work/pipx-bin PIPX_MAN_DIR=$work/pipx-man \
        "$pipx" install "$repo" >"$work/pipx.log" 2>&1; then
        "$work/pipx-bin/sitscheck" run --from tests/bundles/h200x2-idle-v0 --output json \
            >"$work/pipx-run.json" 2>"$work/pipx-run.err"
        rc=$?
        if [ $rc -le 3 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["checks"]' "$work/pipx-run.json" 2>/dev/null; then
            pass "pipx install; the pipx-installed sitscheck replays a bundle (exit $rc)"
        else
            fail "pipx-installed sitscheck (exit $rc): $(tail -n 3 "$work/pipx-run.err")"
        fi
    else
        fail "pipx install: $(tail -n 5 "$work/pipx.log")"
    fi
fi

# --- 6. the tests that need these tools -------------------------------------------------
pytest=${PYTEST:-}
if [ -z "$pytest" ] && [ -x .venv/bin/pytest ]; then pytest=.venv/bin/pytest; fi
if [ -z "$pytest" ] && python3 -c 'import pytest, sitscheck' 2>/dev/null; then pytest="python3 -m pytest"; fi
if [ -n "$pytest" ]; then
    # shellcheck disable=SC2086
    if SITSCHECK_DEB=$deb $pytest -q -p no:cacheprovider -rs tests/packaging tests/daemon; then
        pass "pytest tests/packaging tests/daemon"
    else
        fail "pytest tests/packaging tests/daemon"
    fi
else
    skip "pytest: no PYTEST, no .venv/bin/pytest, no pytest with sitscheck on python3"
fi

# --- 7. Prometheus rules, Kubernetes manifests ---------------------------------------
if [ $have_promtool = 1 ]; then
    if out=$(promtool check rules packaging/prometheus/sitscheck-alerts.yaml 2>&1) &&
        out2=$(cd packaging/prometheus && promtool test rules sitscheck-alerts.test.yaml 2>&1); then
        pass "promtool check rules; promtool test rules: $(grep -c 'alert:' packaging/prometheus/sitscheck-alerts.yaml) alerts"
    else
        fail "promtool rules: $out ${out2:-}"
    fi
else
    fail "promtool missing: the alerting rules are untested"
fi
validate=""
[ -n "$pytest" ] && validate=$(dirname "${pytest%% *}")/kubernetes-validate
if [ -n "$validate" ] && [ -x "$validate" ]; then
    if out=$("$validate" --strict --quiet -k 1.30.0 packaging/k8s/*.yaml 2>&1); then
        pass "kubernetes-validate --strict (1.30): packaging/k8s"
    else
        fail "kubernetes-validate: $out"
    fi
else
    skip "kubernetes-validate: not next to $pytest (pip install '.[test]')"
fi

[ $failed = 0 ] && echo "ci-packaging: all passed" || echo "ci-packaging: FAILED" >&2
exit $failed
