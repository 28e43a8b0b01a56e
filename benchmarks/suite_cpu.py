"""Where the test suite's CPU goes: the wall time of ``pytest`` and the CPU seconds of every
process it starts, by kind (browser, test workers, app servers, Java, CLI runs).

    python benchmarks/suite_cpu.py [PYTEST ARGS ...]      # e.g. -p no:randomly tests/e2e

The suite is CPU-bound on CI's two cores (four workers take as long as two), so its wall
time follows the sum printed here; the goal (issue 38) is a fresh clone's suite under
8 minutes. Every 0.5 s it reads ``/proc/PID/stat`` of each descendant (Linux only) and keeps
each process's last user + system time, so a process shorter than the interval is missed.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time

KINDS = (("chrom", "browser (chromium)"), ("java", "Java (Spark)"),
         ("streamlit run", "app servers (streamlit)"), ("-m ulr", "CLI runs (python -m ulr)"),
         ("exec(eval(", "test workers (pytest-xdist)"), ("pytest", "pytest"))
TICK = os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    kids = collections.defaultdict(list)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids[ppid].append(int(pid))
    return kids


def _sample(root: int, seen: dict) -> None:
    kids, todo = _children(), [root]
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/comm") as f:  # the name, kept when argv is rewritten
                cmd = f"{f.read().strip()} {cmd}"
        except OSError:
            continue
        seen[pid] = (cmd, (int(fields[11]) + int(fields[12])) / TICK)


def main(argv: list[str]) -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *argv])
    seen: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        _sample(proc.pid, seen)
        time.sleep(0.5)
    wall = time.perf_counter() - t0
    by_kind = collections.Counter()
    for cmd, cpu in seen.values():
        kind = next((label for key, label in KINDS if key in cmd),
                    "other: " + cmd.split(" ", 1)[0])
        by_kind[kind] += cpu
    total = sum(by_kind.values())
    print(f"\npytest exit {proc.returncode}, wall {wall:.0f} s, CPU {total:.0f} s "
          f"({total / wall:.2f} cores busy on average, {os.cpu_count()} here)")
    for kind, cpu in by_kind.most_common():
        print(f"  {cpu:7.0f} s  {100 * cpu / max(total, 1e-9):4.0f}%  {kind}")


if __name__ == "__main__":
    main(sys.argv[1:])
