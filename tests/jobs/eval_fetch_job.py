"""A real (CPU-only) PyTorch evaluation loop whose DataLoader workers fetch every sample from a
slow server: forward passes only, no optimizer step.

Run as ``python -m tests.jobs.eval_fetch_job --port P --how read``. Each worker keeps one TCP
connection to ``127.0.0.1:P``, sends a request per sample and sleeps until the answer comes:
little CPU, but its progress counters move. ``--how read`` reads the answer with ``read(2)``
(``rchar`` grows, as for a socket read as a file), ``--how recv`` with ``recv(2)`` (which the
kernel does not count in ``rchar``: only the wake-ups show). Prints ``ready`` once the first
batch is through; ends after ``--max-s``.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

ANSWER = 4096


class Remote(Dataset[torch.Tensor]):
    """Samples fetched one by one from the server (a stand-in for a remote object store)."""

    def __init__(self, port: int, how: str) -> None:
        self.port = port
        self.how = how
        self.sock: socket.socket | None = None

    def __len__(self) -> int:
        return 1_000_000

    def _fetch(self) -> bytes:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.sock.sendall(b"get\n")
        got = b""
        while len(got) < ANSWER:
            if self.how == "read":
                chunk = os.read(self.sock.fileno(), ANSWER - len(got))
            else:
                chunk = self.sock.recv(ANSWER - len(got))
            if not chunk:
                raise ConnectionError("server went away")
            got += chunk
        return got

    def __getitem__(self, index: int) -> torch.Tensor:
        data = self._fetch()
        assert get_worker_info() is not None, "fetched in a worker"
        return torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--how", choices=["read", "recv"], default="read")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--max-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = torch.nn.Linear(64, 8).eval()
    loader = DataLoader(Remote(args.port, args.how), batch_size=args.batch,
                        num_workers=args.workers, persistent_workers=True)
    end = time.monotonic() + args.max_s
    said = False
    with torch.no_grad():  # evaluation: forward passes, no optimizer step
        for batch in loader:
            model(batch)
            if not said:
                print("ready", flush=True)
                said = True
            if time.monotonic() > end:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
