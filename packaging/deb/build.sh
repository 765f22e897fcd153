#!/usr/bin/env bash
# Build the sitscheck .deb with dpkg-deb (no debhelper, no nfpm needed).
#
#   packaging/deb/build.sh [OUT_DIR]        # default: dist/
#
# The package holds the CLI with its Python dependencies in a private folder
# (/usr/lib/sitscheck/python, installed with pip for this machine's python3, whose version
# the package then depends on), the launcher /usr/bin/sitscheck, the systemd units, the
# sysusers.d entry (the `sitscheck` user the units run as) and the tmpfiles snippet, the
# default config (/etc/sitscheck/config.yaml, /etc/default/sitscheck),
# the Slurm wrapper (/usr/sbin/sitscheck-healthcheck) and the NPD and Kubernetes examples.
#
# Environment: PYTHON (default /usr/bin/python3: the interpreter the package targets),
# DEB_REVISION (default 1), PIP_* (pip's own settings: an index, a wheelhouse, --no-index).
# Prints the path of the .deb on its last line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/dist}
python=${PYTHON:-/usr/bin/python3}
revision=${DEB_REVISION:-1}

for tool in dpkg-deb "$python"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "build.sh: $tool is missing" >&2; exit 2; }
done

version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$repo/healthcheck/__init__.py")
[ -n "$version" ] || { echo "build.sh: no __version__ in healthcheck/__init__.py" >&2; exit 2; }
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pynext=$("$python" -c 'import sys; print("%d.%d" % (sys.version_info[0], sys.version_info[1] + 1))')
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root

echo "build.sh: sitscheck $version for python $pyver ($arch)" >&2
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip >&2
"$work/venv/bin/python" -m pip wheel -q --no-deps -w "$work/wheel" "$repo" >&2
lib=$root/usr/lib/sitscheck/python
"$work/venv/bin/python" -m pip install -q --no-warn-script-location --target "$lib" \
    "$work"/wheel/sitscheck-*.whl >&2
rm -rf "$lib/bin"  # console scripts pointing at the build's venv; the launcher replaces them

install -D -m 0755 "$here/sitscheck-launcher" "$root/usr/bin/sitscheck"
install -D -m 0755 "$repo/packaging/slurm/sitscheck-healthcheck" "$root/usr/sbin/sitscheck-healthcheck"
install -D -m 0755 "$repo/packaging/slurm/sitscheck-accept-node" "$root/usr/sbin/sitscheck-accept-node"
for unit in sitscheck.service sitscheck.timer sitscheck-daemon.service; do
    install -D -m 0644 "$repo/packaging/systemd/$unit" "$root/usr/lib/systemd/system/$unit"
done
install -D -m 0644 "$repo/packaging/systemd/sitscheck.tmpfiles" "$root/usr/lib/tmpfiles.d/sitscheck.conf"
install -D -m 0644 "$repo/packaging/systemd/sitscheck.sysusers" "$root/usr/lib/sysusers.d/sitscheck.conf"
install -D -m 0644 "$repo/packaging/etc/sitscheck/config.yaml" "$root/etc/sitscheck/config.yaml"
install -D -m 0644 "$repo/packaging/etc/default/sitscheck" "$root/etc/default/sitscheck"
install -D -m 0644 "$repo/packaging/npd/sitscheck-plugin-monitor.json" \
    "$root/usr/share/sitscheck/npd/sitscheck-plugin-monitor.json"
install -D -m 0644 "$repo/packaging/k8s/daemonset.yaml" "$root/usr/share/sitscheck/k8s/daemonset.yaml"
install -D -m 0644 "$repo/packaging/k8s/accept-job.yaml" "$root/usr/share/sitscheck/k8s/accept-job.yaml"
install -D -m 0644 "$repo/README.md" "$root/usr/share/doc/sitscheck/README.md"
printf 'sitscheck\nLicense: Apache-2.0 (/usr/share/common-licenses/Apache-2.0)\n' \
    >"$work/copyright"
install -D -m 0644 "$work/copyright" "$root/usr/share/doc/sitscheck/copyright"

install -d -m 0755 "$root/DEBIAN"
install -m 0644 "$here/DEBIAN/conffiles" "$root/DEBIAN/conffiles"
for script in postinst prerm postrm; do
    install -m 0755 "$here/DEBIAN/$script" "$root/DEBIAN/$script"
done
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version-$revision/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
    -e "s/@PYTHON_DEPENDS@/python3 (>= $pyver), python3 (<< $pynext)/" \
    "$here/DEBIAN/control.in" >"$root/DEBIAN/control"
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
    xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"

mkdir -p "$out"
deb=$out/sitscheck_${version}-${revision}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
