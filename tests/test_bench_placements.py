"""bench placements and bench copy-overlap refuse what this machine cannot run, naming the
argument, before loading anything (their happy paths run in the GPU session's rehearsal,
tests/test_gpu_session.py); the workers' thread share on a GPU machine."""
from __future__ import annotations

import pytest
import torch

from gnnrepro import __main__ as cli
from gnnrepro.bench import copy_overlap, placements
from gnnrepro.training.pipelines import worker_threads


def test_gpu_contenders_need_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match=r"contenders \['fused-cuda'\] need a CUDA device"):
        placements.measure(scale=0.002, contenders=["fused-cuda", "fused-cpu"])
    assert placements.contenders_here() == ["fused-cpu", "unfused-cpu"]


@pytest.mark.parametrize("contenders", [[], ["fused-cpu", "fused-cpu"], ["bogus"]])
def test_contenders_must_be_known_and_distinct(contenders: list[str]) -> None:
    with pytest.raises(ValueError, match="contenders must be a non-empty subset"):
        placements.measure(scale=0.002, contenders=contenders)


def test_cli_rejects_unknown_contenders(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "placements", "--contenders", "fused-cpu,fused-tpu"])
    assert exit_info.value.code == 2
    assert "fused-tpu" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs,match", [({"step_ms": -1.0}, "step_ms must be a number"),
                                          ({"streams": 0}, "streams"),
                                          ({"batches": 0}, "batches")])
def test_copy_overlap_checks_its_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        copy_overlap.measure(scale=0.002, **kwargs)


def test_workers_share_a_gpu_ranks_cores() -> None:
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert worker_threads(cuda, 4, 16) == 3  # the trainer keeps one core
    assert worker_threads(cuda, 4, 2) == 1
    assert worker_threads(cuda, 0, 16) == 1
    assert worker_threads(cpu, 1, 16) == 1  # on the CPU the model step needs the cores
