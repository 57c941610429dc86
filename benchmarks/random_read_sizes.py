"""Random-read rate against the array's size: why `bench sampling --ceiling` probes each array
the sampler reads instead of one array of the graph's size (benchmarks/NOTES.md, "papers-sim at
size"). Independent random 64-byte line reads per second (gnnrepro.bench.random_reads) over
zero-filled arrays of each size, without prefetch and prefetching 32 reads ahead, per thread
count.

    python benchmarks/random_read_sizes.py --mib 4,32,444,888,6460 --threads 1,2
"""
from __future__ import annotations

import argparse
import json
import sys

import torch

from gnnrepro.bench.random_reads import probe_ceiling
from gnnrepro.env import environment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", default="4,32,444,888,6460",
                        help="comma-separated array sizes in MiB")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--prefetch", default="0,32", help="comma-separated prefetch distances")
    parser.add_argument("--reads", type=int, default=1 << 23, help="reads per thread per run")
    parser.add_argument("--out", default=None, help="write the JSON here")
    args = parser.parse_args(argv)
    rows = []
    for mib in (int(x) for x in args.mib.split(",")):
        array = torch.zeros(mib << 18, dtype=torch.int32)  # written, so its pages exist
        for threads in (int(x) for x in args.threads.split(",")):
            for ahead in (int(x) for x in args.prefetch.split(",")):
                probe = probe_ceiling(array, threads, reads_per_thread=args.reads, repeats=3,
                                      prefetch_ahead=ahead)
                rows.append({"mib": mib, "threads": threads, "prefetch_ahead": ahead,
                             "lines_per_s": probe["lines_per_s"],
                             "transparent_hugepages": probe["transparent_hugepages"]})
                print(f"{mib:6d} MiB  {threads} threads  prefetch {ahead:3d}: "
                      f"{probe['lines_per_s'] / 1e6:7.1f} M lines/s", flush=True)
        del array
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"benchmark": "random-read-sizes", "rows": rows, "env": environment()},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
