"""One timed run of a command, shared by the bench scripts (run them as `python3 bench/X.py`,
so this directory is on the import path)."""
import os, subprocess, time


def run_once(cmd):
    """(seconds, peak RSS in MB, exit code, CPU seconds), output discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime
