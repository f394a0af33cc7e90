"""Soak of the webhook sender: does it survive weeks of odd answers? (Not a unit test.)

Run by hand: ``.venv/bin/python benchmarks/soak_webhook.py [--minutes 10]``.

A raw server on 127.0.0.1 (in a child process, so its threads are not counted) answers the
connections in turn with a good answer, junk bytes, a TLS alert, a hang, a reset and a redirect.
One `WebhookSender` (2 s timeout, 1 retry, 0.2 s pause) gets a notice every second. Every 30 s the
sender's process is sampled: its threads and its open files. At the end: deliveries by outcome,
threads and open files at the start, the highest, and at the end (they must stay flat), and that
a good answer after all that is still delivered. Then a ``check --watch`` with a webhook that
never answers is stopped with SIGTERM, and the time to its exit is measured.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.notify.webhook import WebhookSender  # noqa: E402  (after the path insert)
from tests.notify.hostile_server import (  # noqa: E402
    GOOD,
    JUNK,
    RESET,
    TLS_ALERT,
    ScriptedServer,
    redirect,
)

NAMES = {GOOD: "good answer", JUNK: "junk bytes", TLS_ALERT: "TLS alert", None: "hang",
         RESET: "reset"}


def serve(kind: str) -> None:
    """Child process: print the port, answer until SIGTERM, then print what it answered."""
    answered: collections.Counter[str] = collections.Counter()
    if kind == "cycle":
        cycle = itertools.cycle([GOOD, JUNK, GOOD, TLS_ALERT, None, GOOD, RESET,
                                 redirect("http://127.0.0.1:1/stolen")])

        def reply() -> bytes | None:
            answer = next(cycle)
            answered[NAMES.get(answer, "redirect")] += 1
            return answer

        server = ScriptedServer(reply)
    else:
        server = ScriptedServer(lambda: None)
    print(server.port, flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    signal.sigwait({signal.SIGTERM})
    server.close()
    print(", ".join(f"{n} {name}" for name, n in answered.most_common()), flush=True)


def sample() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def child(kind: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def soak(minutes: float) -> None:
    proc, port = child("cycle")
    outcomes: collections.Counter[str] = collections.Counter()
    try:
        sender = WebhookSender(
            f"http://127.0.0.1:{port}/hook", timeout_s=2.0, retries=1, backoff_s=0.2,
            on_result=lambda r: outcomes.update(["ok" if r.ok else (r.error or "?")]))
        samples = [sample()]
        start = time.monotonic()
        end = start + minutes * 60
        n = 0
        next_sample = start + 30
        while time.monotonic() < end:
            sender.send({"n": n})
            n += 1
            time.sleep(1.0)
            if time.monotonic() >= next_sample:
                samples.append(sample())
                next_sample += 30
        print(f"{minutes:g} min, {n} notices sent, {sender.delivered + sender.failed} "
              f"deliveries ended, {sender.dropped} dropped from a full queue; by outcome:")
        for outcome, count in outcomes.most_common():
            print(f"  {count:5d}  {outcome}")
        threads = [t for t, _ in samples]
        fds = [f for _, f in samples]
        print(f"threads: start {threads[0]}, highest {max(threads)}, end {threads[-1]}; "
              f"open files: start {fds[0]}, highest {max(fds)}, end {fds[-1]} "
              f"({len(samples)} samples)")
        print(f"sender thread alive: {sender._thread.is_alive()}")
        # The server's turn decides what the next notice meets: send until one is delivered.
        while sender.delivered + sender.failed < n:  # what is still queued ends first
            time.sleep(0.05)
        tries = 0
        delivered = False
        for tries in range(1, 5):
            before = sender.delivered + sender.failed
            sender.send({"n": f"after-{tries}"})
            while sender.delivered + sender.failed == before:
                time.sleep(0.05)
            delivered = sender.results[-1].ok
            if delivered:
                break
        print(f"after the soak: {'delivered' if delivered else 'NOT delivered'} at the "
              f"{tries}. notice")
        sender.close(1.0)
    finally:
        proc.terminate()
        out, _ = proc.communicate()
        print(f"the server answered: {out.strip()}")


def exit_after_sigterm() -> None:
    """Seconds from SIGTERM to exit of ``check --watch`` with a webhook that never answers."""
    from tests.prom.hosts import fake_host

    proc, port = child("hang")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            fakes = fake_host(Path(tmp) / "h", "starving", cards=2)
            env = fakes.env({"GPUSAT_PROBE_DIR": str(Path(tmp) / "p")})
            watch = subprocess.Popen(
                [sys.executable, "-m", "gpusat_tui", "check", "--watch", "--interval", "0.25",
                 "--notify-hold", "1s", "--webhook", f"http://127.0.0.1:{port}/hook"],
                env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            # The POST is in flight once the server holds a connection.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not _holds_connection(port):
                time.sleep(0.1)
            sent = time.monotonic()
            watch.send_signal(signal.SIGTERM)
            _, err = watch.communicate(timeout=60)
            took = time.monotonic() - sent
            print(f"check --watch, hung webhook: exit {watch.returncode} {took:.2f} s after "
                  f"SIGTERM; said: {err.strip().splitlines()[-1] if err.strip() else ''}")
    finally:
        proc.terminate()
        proc.wait()


def _holds_connection(port: int) -> bool:
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return any(row[1].endswith(f":{port:04X}") and row[3] == "01" for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--serve", choices=("cycle", "hang"))
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    socket.setdefaulttimeout(None)
    soak(args.minutes)
    exit_after_sigterm()


if __name__ == "__main__":
    main()
