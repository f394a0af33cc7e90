"""A steady CUDA load for N seconds (bf16 matrix products), so that the figures compared by
tools/device_check.sh are not all idle zeros. Exit 3, with one line, when there is no CUDA.

    python3 tools/gpu_burn.py SECONDS [--size 8192]
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seconds", type=float)
    parser.add_argument("--size", type=int, default=8192)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_burn: torch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("gpu_burn: no CUDA device", file=sys.stderr)
        return 3
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    end = time.monotonic() + args.seconds
    products = 0
    while time.monotonic() < end:
        for _ in range(8):
            a = (a @ b) * 1e-4
        torch.cuda.synchronize()
        products += 8
    print(f"gpu_burn: {products} products of {args.size}^2 bf16 in {args.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
