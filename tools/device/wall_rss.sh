# Sourced by the device scripts: `wall_rss LABEL ARGV...` prints the wall time, exit code and
# peak RSS of one child run of ARGV.
wall_rss() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
done = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{sys.argv[1]}: rc={done.returncode} {time.perf_counter() - t:.3f} s, peak RSS "
      f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f} MB")
PY
}
