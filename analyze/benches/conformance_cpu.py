"""Benchmark driver: the CPU time (user + system, from wait4) of `agentrank-analyze` on one bundle with
protocol conformance (read as the bundle holds it), without it (`--no-conformance`) and from the tapes
(`--conformance-from-tapes`), alternating the three so each sees the same machine, with the ratios to the
run without. Used by `cargo bench -p agentrank-analyze --bench conformance`."""

import os
import statistics
import subprocess
import sys
import tempfile

MODES = {
    "with conformance": [],
    "without (--no-conformance)": ["--no-conformance"],
    "from the tapes (--conformance-from-tapes)": ["--conformance-from-tapes"],
}


def cpu(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed with {code}: {err}")
    return ru.ru_utime + ru.ru_stime


def main():
    binary, bundle = sys.argv[1], sys.argv[2]
    runs = max(1, int(os.environ.get("AGENTRANK_BENCH_RUNS", "9")))
    times = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as out:
        for i in range(runs):
            order = list(MODES) if i % 2 == 0 else list(reversed(MODES))
            for mode in order:
                times[mode].append(cpu([binary, bundle, "--out", os.path.join(out, str(len(times[mode]))), *MODES[mode]]))
    base = statistics.median(times["without (--no-conformance)"])
    print(f"{bundle}: CPU seconds, median of {runs} (min in brackets)")
    for mode, t in times.items():
        m = statistics.median(t)
        print(f"  {mode:<44} {m:.3f} s ({min(t):.3f})  {m / base:.2f}x")


if __name__ == "__main__":
    main()
