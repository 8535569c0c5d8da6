"""Run a command and write its own peak RSS (KiB) to a file:
`python tests/support/peak_rss.py OUT CAP_BYTES -- CMD ARGS...` (used by
`tests.support.bounded` and `benchmarks/hostile.py`).

Why a launcher: Linux carries a process's peak RSS across fork and exec, so a child forked
from a big process (a pytest worker, a benchmark holding inputs) reports at least its
parent's RSS at fork time. Forked from this small interpreter instead, wait4's figure is the
command's own. CAP_BYTES > 0 caps the command's address space (RLIMIT_AS), so a regression
ends in a MemoryError instead of taking the machine down; 0 leaves it uncapped (Chromium
reserves far more address space than it uses). The command gets this process's exit status;
SIGTERM/SIGKILL to this process's group reach it too (it stays in the group).
"""

import os
import resource
import sys


def main() -> int:
    out, cap, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        print(__doc__, file=sys.stderr)
        return 2
    pid = os.fork()
    if pid == 0:
        if int(cap) > 0:
            resource.setrlimit(resource.RLIMIT_AS, (int(cap), int(cap)))
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    with open(out, "w") as f:
        f.write(str(usage.ru_maxrss))
    return os.waitstatus_to_exitcode(status) & 0xFF


if __name__ == "__main__":
    sys.exit(main())
