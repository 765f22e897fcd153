#!/usr/bin/env bash
# Run the GPU checks live on the lent H200 machine (the device tool), idle and under --load,
# and record a loaded bundle. Uses the working tree as the package (a symlink farm, like
# tools/typecheck) and the dependency wheels in .whl/ (carried); writes under $OUT.
set -u
export PYTHONUNBUFFERED=1
site=/tmp/site
mkdir -p "$site"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
  $(ls .whl/*.whl | grep -v '/sitscheck-') || exit 1
mkdir -p "$site/sitscheck"
for entry in "$PWD"/healthcheck/*; do ln -s "$entry" "$site/sitscheck/"; done
ln -s "$PWD/checks" "$site/sitscheck/checks"
ln -s "$PWD/rules" "$site/sitscheck/rules"
python3 - "$site" <<'PY'
import pathlib, sys, tomllib
project = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
info = pathlib.Path(sys.argv[1]) / "sitscheck-0.1.0.dist-info"
info.mkdir()
(info / "METADATA").write_text("Metadata-Version: 2.1\nName: sitscheck\nVersion: 0.1.0\n")
points = project["entry-points"]["sitscheck.checks"]
(info / "entry_points.txt").write_text(
    "[sitscheck.checks]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
)
PY
export PYTHONPATH=$site
checks="--check driver --check pcie_link --check gpu_telemetry --check memory_errors --check nvlink"
nvidia-smi -L
for mode in idle load; do
  extra=""; [ "$mode" = load ] && extra="--load --sample-seconds 6"
  start=$(date +%s%N)
  python3 -m sitscheck run $checks $extra --output json="$OUT/run-$mode.json" --output text \
    > "$OUT/run-$mode.txt" 2>&1
  rc=$?
  echo "run $mode: rc=$rc $(( ($(date +%s%N) - start) / 1000000 )) ms"
  cat "$OUT/run-$mode.txt"
done
python3 -X faulthandler -m sitscheck collect "$OUT/b-load" --load --sample-seconds 6 \
  > "$OUT/collect.log" 2>&1
echo "collect: rc=$?"; tail -40 "$OUT/collect.log"
(cd "$OUT/b-load" && tar czf "$OUT/h200-load.tar.gz" .) && rm -rf "$OUT/b-load"
python3 -m sitscheck run --from "$OUT/h200-load.tar.gz" $checks --output text
echo "replay of the recorded loaded bundle: rc=$?"
