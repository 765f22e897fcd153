# Sourced by the device scripts: install the carried wheels (.whl/, see the device tool's
# README: the image has no package registry) into /tmp/site, and the helpers they share.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
# Byte-compile as an ordinary install does (pip without --no-compile, dpkg's postinst): the
# image writes no bytecode, so without this every run compiles each module (~0.5 s).
python3 -m compileall -q -j 0 /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD
sc() { python3 -m sitscheck "$@"; }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
log=$OUT/log; mkdir -p "$log"
