"""The explorer in a private tmux server, read as a user sees it: the helpers the tmux benches
(runsearch.py, load_keys.py) share. The session is named `b`."""
import subprocess, time


def tmux(sock, *args):
    return subprocess.run(["tmux", "-L", sock, *args], check=True, capture_output=True, text=True).stdout


def screen(sock):
    return tmux(sock, "capture-pane", "-p", "-t", "b")


def wait(sock, pred, timeout=60.0, poll=0.002):
    """Poll the screen until `pred` holds: (seconds waited, the screen)."""
    t0 = time.perf_counter()
    while True:
        s = screen(sock)
        if pred(s):
            return time.perf_counter() - t0, s
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"timed out; screen:\n{s}")
        time.sleep(poll)
