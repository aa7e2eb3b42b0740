"""Benchmark driver: runs the Rust analysis and the numpy reference on the same attempts table, each in its
own child process, and reports CPU time (user + system, from wait4) and peak resident memory of each, with
their ratios. Used by `cargo bench -p agentrank-analyze`."""

import os
import subprocess
import sys


def measure(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{cmd[0]} failed with {code}: {err}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, ru.ru_stime


def main():
    rust_bin, reference, attempts, tool_calls, capabilities, workdir, resamples, seed = sys.argv[1:9]
    # Each side runs RUNS times (AGENTRANK_BENCH_RUNS, default 3), alternating, so both see the same
    # machine; the minimum is the figure least disturbed by other work, the median is shown beside it.
    runs = max(1, int(os.environ.get("AGENTRANK_BENCH_RUNS", "3")))
    rust_cmd = [
        rust_bin, attempts, "--tool-calls", tool_calls, "--capabilities", capabilities,
        "--reference-server", "databases=srv-0-00", "--reference-server", "web-fetch=srv-1-00",
        "--reference-server", "browser=srv-2-00",
        "--seed", seed, "--resamples", resamples, "--out", os.path.join(workdir, "rust-out"),
    ]
    ref_cmd = [sys.executable, reference, attempts, "--seed", seed, "--resamples", resamples,
               "--out", os.path.join(workdir, "numpy-out.json")]
    samples = {"rust": [], "numpy": []}
    # One untimed run of each side first: the first run after a build pays for filling the page cache,
    # which no later run of either side pays.
    for cmd in (rust_cmd, ref_cmd):
        measure(cmd)
    for i in range(runs):
        for name, cmd in (("rust", rust_cmd), ("numpy", ref_cmd)):
            cpu, rss, sys_time = measure(cmd)
            samples[name].append((cpu, rss))
            print(f"run {i + 1}/{runs} {name:>6}: cpu {cpu:8.3f} s (system {sys_time:6.3f} s)   "
                  f"peak rss {rss:8.1f} MiB", flush=True)
    rows = []
    for name in ("rust", "numpy"):
        cpus = sorted(c for c, _ in samples[name])
        rss = max(r for _, r in samples[name])
        med = cpus[len(cpus) // 2]
        rows.append((name, cpus[0], med, rss))
        print(f"{name:>6}: cpu min {cpus[0]:8.3f} s   median {med:8.3f} s   peak rss {rss:8.1f} MiB")
    (_, rc, rmed, rm), (_, nc, nmed, nm) = rows
    print(f" ratio: numpy cpu / rust cpu = {nc / rc:.1f}x (min), {nmed / rmed:.1f}x (median)   "
          f"numpy peak rss / rust peak rss = {nm / rm:.2f}x")
    print(f"target: cpu ratio >= 20 -> {'met' if nc / rc >= 20 else 'NOT met'}; "
          f"rust peak rss below numpy's -> {'met' if rm < nm else 'NOT met'}")


if __name__ == "__main__":
    main()
