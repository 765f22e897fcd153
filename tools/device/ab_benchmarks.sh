#!/usr/bin/env bash
# `python -m benchmarks` on the node's CPU: this tree's wheel against the one in .whl/old (the
# reference), each in a venv of its own, alternated in one lease (two leases differ more than
# two versions of the code). Rerun before merging a change meant to make a row faster or to
# show one stays bounded. Carry `.whl` (setup.sh) with the other wheel in .whl/old; everything
# lands under $OUT.   BENCH_ARGS  arguments for `python -m benchmarks` (e.g. --only storm)
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
for code in old new; do
  python3 -m venv "/tmp/venv-$code" || exit 1
  "/tmp/venv-$code/bin/pip" install -q --no-index --no-deps .whl/*.whl || exit 1
done
/tmp/venv-old/bin/pip install -q --no-index --no-deps --force-reinstall .whl/old/*.whl || exit 1
# the reference's interpreter must import the reference: no PYTHONPATH (setup.sh sets one)
# shellcheck disable=SC2086
env -u PYTHONPATH /tmp/venv-new/bin/python -m benchmarks \
  --reference-python /tmp/venv-old/bin/python ${BENCH_ARGS:-} 2>&1 | tee "$log/ab.txt"
