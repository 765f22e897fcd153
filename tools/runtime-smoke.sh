#!/usr/bin/env bash
# The runtime-only install (issue 29 item 10): `pip install .` with no extras into a fresh
# venv, then every subcommand once, so that an import only the test extras satisfy (celpy
# and lark on Python >= 3.11, the OTLP exporters, jsonschema, ...) fails here and not on an
# operator's node. Called from .ci/run; runnable by hand from anywhere:
#
#   tools/runtime-smoke.sh [PYTHON]      # PYTHON: the interpreter to make the venv with
#
# Each command runs from an empty folder of its own (nothing of the checkout importable), with
# HOME and the cache folders pointed into the scratch folder. A step fails on an exit code it
# does not expect, a traceback or an "internal error" on stderr; its output is then shown.
# `collect` records a fake host: the example bundle's sysfs tree (--sys-root) and an
# `nvidia-smi` on PATH that prints the bundle's recordings (NVML is absent: recorded missing).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
example="$repo/examples/h200x2-idle"

failed=0
pass() { printf 'runtime-smoke: PASS %s\n' "$*"; }
fail() { printf 'runtime-smoke: FAIL %s\n' "$*" >&2; failed=1; }

"$python" -m venv "$work/venv" || { fail "python -m venv"; exit 1; }
venv="$work/venv"
if ! "$venv/bin/pip" install -q --disable-pip-version-check "$repo" >"$work/pip.log" 2>&1; then
    fail "pip install . (no extras)"
    tail -n 20 "$work/pip.log" >&2
    exit 1
fi
pass "pip install . (no extras): $("$venv/bin/python" -c \
    'import sys; print("Python %d.%d" % sys.version_info[:2])')"
for module in celpy lark jsonschema pytest; do  # test extras only, on 3.11+ at least
    if "$venv/bin/python" -c "import $module" 2>/dev/null; then
        printf 'runtime-smoke: note: %s is installed by the runtime dependencies here\n' "$module"
    fi
done

mkdir -p "$work/cwd" "$work/home" "$work/out" "$work/host/bin"
run_env=(env -u CACHE_DIRECTORY "HOME=$work/home" "XDG_CACHE_HOME=$work/home/.cache"
    "PATH=$work/host/bin:$venv/bin:/usr/bin:/bin")

# step NAME CODES COMMAND...: run the installed sitscheck; CODES: the exit codes it may give
step() {
    local name=$1 codes=$2
    shift 2
    local code=0
    (cd "$work/cwd" && "${run_env[@]}" "$venv/bin/sitscheck" "$@") \
        >"$work/stdout" 2>"$work/stderr" || code=$?
    if [[ " $codes " != *" $code "* ]] || grep -qE 'Traceback|internal error' "$work/stderr"; then
        fail "$name: exit $code (expected one of: $codes)"
        tail -n 15 "$work/stdout" "$work/stderr" >&2
        return 1
    fi
    pass "$name (exit $code)"
}

# the health exit codes a replay of the example may give: 0 ok, 1 warning, 2 critical
step "--version" "0" --version
step "--help" "0" --help
step "checks" "0" checks
step "run --from (every output, OTLP to a closed port: spooled)" "0 1 2" \
    run --from "$example" -o text -o "json=$work/out/report.json" \
    -o "junit=$work/out/report.xml" -o "prom=$work/out/prom" \
    --otlp http://127.0.0.1:9 --state-dir "$work/out/state"
step "run --daemon --from" "0 1 2" run --daemon --from "$example" \
    --state-dir "$work/out/daemon" -o npd
step "rules list" "0" rules list
step "rules validate (the shipped rules)" "0" rules validate
step "rules validate rules/" "0" rules validate "$repo/rules"
step "explain a rule" "0" explain quick_check.degraded_link_aer
step "explain a code" "0" explain xid.79
step "schema" "0" schema
step "schema --facts" "0" schema --facts xid
step "schema --profile" "0" schema --profile

# collect: a fake host (the example's sysfs, its nvidia-smi recordings)
cat >"$work/host/bin/nvidia-smi" <<EOF
#!/bin/sh
case "\$1" in
    -L) exec cat "$example/nvidia-smi-L.txt" ;;
    -q) exec cat "$example/nvidia-smi-q.txt" ;;
    --query-gpu=*) exec cat "$example/nvidia-smi-query-gpu.csv" ;;
    dmon) exec cat "$example/nvidia-smi-dmon.txt" ;;
    topo) exec cat "$example/nvidia-smi-topo-m.txt" ;;
esac
echo "fake nvidia-smi: \$*: not recorded" >&2
exit 2
EOF
chmod 755 "$work/host/bin/nvidia-smi"
if step "collect (a fake host)" "0" collect "$work/out/bundle" --sys-root "$example/sysfs" \
    --sample-seconds 1; then
    if [ -s "$work/out/bundle/meta.json" ] && [ -s "$work/out/bundle/nvidia-smi-q.txt" ]; then
        pass "collect wrote meta.json and the fake host's nvidia-smi -q"
        step "run --from the collected bundle" "0 1 2 3" run --from "$work/out/bundle"
    else
        fail "collect: no meta.json or nvidia-smi-q.txt in $(ls "$work/out/bundle" | tr '\n' ' ')"
    fi
fi

if [ $failed = 0 ]; then
    printf 'runtime-smoke: all passed\n'
fi
exit $failed
