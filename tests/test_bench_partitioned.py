"""bench partitioned: the settings reach the ranks unchanged, and the CLI declares it."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from gnnrepro.__main__ import build_parser
from gnnrepro.bench.partitioned import train_args
from gnnrepro.eval_subset import eval_subset
from gnnrepro.config import TrainConfig
from gnnrepro.distributed.partitioned.__main__ import TRAIN_OPTIONS
from gnnrepro.distributed.partitioned.__main__ import build_parser as rank_parser


def test_train_args_round_trip():
    config = TrainConfig(fanouts=(7, 3), batch_size=33, epochs=4, lr=0.01, threads=2,
                         seed=5, timeout_s=12.5)
    args = rank_parser().parse_args(["--partition", "p", *train_args(config)])
    again = TrainConfig(**{name: getattr(args, name) for name in TRAIN_OPTIONS})
    assert dataclasses.asdict(again) == dataclasses.asdict(config)


def test_cli_declares_the_benchmark():
    args = build_parser().parse_args(["bench", "partitioned", "--machines", "1,2",
                                      "--skip-dgl", "--scale", "0.01"])
    assert args.machines == [1, 2] and args.skip_dgl and args.ranks_per_machine == 1


def test_eval_subset_is_seeded_sorted_and_no_larger_than_asked():
    ids = torch.arange(100, 1100)
    small = eval_subset(ids, 50, seed=3)
    assert small.numel() == 50 and torch.equal(small, small.sort().values)
    assert bool(torch.isin(small, ids).all()) and small.unique().numel() == 50
    assert torch.equal(small, eval_subset(ids, 50, seed=3))
    assert not torch.equal(small, eval_subset(ids, 50, seed=4))
    assert eval_subset(ids, 5000, seed=3) is ids
    assert eval_subset(ids, None, seed=3) is ids  # no limit: every id


def test_cli_takes_eval_ids():
    args = build_parser().parse_args(["bench", "partitioned", "--eval-ids", "500"])
    assert args.eval_ids == 500
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "partitioned", "--eval-ids", "0"])
