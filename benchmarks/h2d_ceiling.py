"""Host-to-device copy ceiling: GB/s of one large copy from pinned and from pageable host memory,
the bound every feature path (pinned staging, UVA gather) is measured against.

    python benchmarks/h2d_ceiling.py --gib 1 --repeats 5 --out benchmarks/results/h2d.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch


def copy_gbps(src: torch.Tensor, dst: torch.Tensor, repeats: int) -> list[float]:
    """GB/s of `repeats` timed copies src -> dst (after one warm-up), CUDA events on the
    current stream."""
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    rates = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        end.synchronize()
        rates.append(src.numel() / (start.elapsed_time(end) / 1e3) / 1e9)
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="bytes per copy, in GiB")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("h2d_ceiling: CUDA is not available here; run it on a machine with a GPU",
              file=sys.stderr)
        return 1
    nbytes = int(args.gib * 2**30)
    device = torch.device("cuda")
    dst = torch.empty(nbytes, dtype=torch.uint8, device=device)
    result = {"bytes": nbytes, "repeats": args.repeats, "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "cuda": torch.version.cuda}
    for kind in ("pinned", "pageable"):
        src = torch.ones(nbytes, dtype=torch.uint8, pin_memory=kind == "pinned")
        rates = copy_gbps(src, dst, args.repeats)
        result[kind] = {"gbps_median": statistics.median(rates), "gbps": rates}
        print(f"h2d {kind}: {statistics.median(rates):.2f} GB/s (median of {args.repeats})")
        del src
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
