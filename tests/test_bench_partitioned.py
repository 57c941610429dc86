"""bench partitioned: the settings reach the ranks unchanged, and the CLI declares it."""
from __future__ import annotations

import dataclasses

from gnnrepro.__main__ import build_parser
from gnnrepro.bench.partitioned import train_args
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
