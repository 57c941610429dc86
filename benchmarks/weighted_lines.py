"""Cache lines a weighted batch's picks read, counted over a real frontier: why a destination of
at most 64 candidates picks by a sum tree over its weights rather than from its alias table
(csrc/common/weighted_picks.h, kTreeLeaves; benchmarks/NOTES.md, session 25).

For every destination of a few uniform batches (products-sim, fanouts 15,10,5, batch 1024) with
degree d and c picks, the expected number of distinct 64-byte lines that c distinct uniform
positions among d touch, for entries of 4 bytes (`indices`: a uniform pick) and 16 bytes (an
alias table entry with the ids inside); a sum tree reads its d weights (4 bytes each, in
order) and then its picks' `indices`. Printed per cut T (tree for d <= T, table above) and
per degree range, as lines a batch and as a ratio to uniform sampling's.

    python benchmarks/weighted_lines.py --scale 1.0 --batches 4
"""
from __future__ import annotations

import argparse

import torch

from gnnrepro.bench.sampling_speed import seed_batches
from gnnrepro.datasets import load_scaled
from gnnrepro.sampling import FusedSampler

LINE = 64  # bytes


def expected_lines(picks: torch.Tensor, degree: torch.Tensor, entry_bytes: int) -> torch.Tensor:
    """Expected distinct lines that `picks` distinct uniform positions among `degree` entries of
    `entry_bytes` touch (lines aligned to the list's start), per destination."""
    per_line = LINE // entry_bytes
    c, d = picks.double(), degree.double()

    def none_on(m: torch.Tensor) -> torch.Tensor:
        """P(a line of m positions holds none of the picks) = C(d - m, c) / C(d, c)."""
        m = m.double()
        log_p = (torch.lgamma(d - m + 1) - torch.lgamma(d - m - c + 1) - torch.lgamma(d + 1)
                 + torch.lgamma(d - c + 1))
        return torch.where(d - m >= c, log_p.exp(), torch.zeros_like(d))

    full = degree // per_line
    rest = degree - full * per_line
    lines = full.double() * (1 - none_on(torch.full_like(degree, per_line)))
    return lines + torch.where(rest > 0, 1 - none_on(rest.clamp(min=1)), torch.zeros_like(d))


def frontier(scale: float, batches: int, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(degree, picks) of every destination with a pick over `batches` uniform batches."""
    data = load_scaled("products-sim", None, scale)
    graph = data.graph
    degrees = graph.indptr[1:] - graph.indptr[:-1]
    sampler = FusedSampler(graph, [15, 10, 5], seed=0)
    ds, cs = [], []
    for b, seeds in enumerate(seed_batches(data.train_idx, batch_size, batches, 0)):
        for block in sampler.sample(seeds, b).blocks:
            picks = block.indptr[1:] - block.indptr[:-1]
            kept = picks > 0
            ds.append(degrees[block.src_nodes[:block.num_dst]][kept])
            cs.append(picks[kept])
    return torch.cat(ds), torch.cat(cs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="products-sim scale")
    parser.add_argument("--batches", type=int, default=4, help="uniform batches counted")
    parser.add_argument("--batch-size", type=int, default=1024, help="seeds a batch")
    parser.add_argument("--cuts", default="0,32,64,128,256,512",
                        help="comma-separated tree cuts T (tree for degree <= T)")
    args = parser.parse_args(argv)
    d, c = frontier(args.scale, args.batches, args.batch_size)
    uniform = expected_lines(c, d, 4)
    table = expected_lines(c, d, 16)
    tree = ((d * 4 + LINE - 1) // LINE).double() + uniform
    per_batch = 1.0 / args.batches
    print(f"products-sim {args.scale}: {int(c.sum()) * per_batch:.0f} picks and "
          f"{d.numel() * per_batch:.0f} destinations a batch; uniform reads "
          f"{float(uniform.sum()) * per_batch:.0f} lines of `indices`")
    for cut in (int(x) for x in args.cuts.split(",")):
        lines = float(torch.where(d <= cut, tree, table).sum())
        print(f"tree for degree <= {cut:4d}: {lines * per_batch:9.0f} lines a batch, "
              f"{lines / float(uniform.sum()):.2f}x uniform's")
    edges = [0, 16, 64, 128, 256, 1024, int(d.max()) + 1]
    for lo, hi in zip(edges, edges[1:]):
        sel = (d > lo) & (d <= hi)
        print(f"degree ({lo}, {hi}]: {int(sel.sum()) * per_batch:8.0f} destinations, "
              f"{int(c[sel].sum()) * per_batch:8.0f} picks; lines uniform "
              f"{float(uniform[sel].sum()) * per_batch:8.0f}, table "
              f"{float(table[sel].sum()) * per_batch:8.0f}, tree "
              f"{float(tree[sel].sum()) * per_batch:8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
