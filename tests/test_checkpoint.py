"""Checkpoints: files refused when damaged or foreign, never unpickling code; resumed runs
(after SIGTERM, after SIGKILL at a step or in the middle of a write, after a rank's death with
and without torchrun's restarts) ending with the uninterrupted run's weights, losses and
accuracies, bit for bit, and leaving no process, shared-memory segment or temporary file."""
from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from gnnrepro import datasets
from gnnrepro.pipeline.loader import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import Checkpointing, TrainingStopped, train_pipeline
from gnnrepro.training.checkpoint import CheckpointError, Checkpointer, _encode, read_checkpoint
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


def _state(step: int = 1, **identity: object) -> dict:
    return {"identity": {"dataset": "d", "world_size": 1, **identity}, "code": "x",
            "position": [0, step, step], "model": {"w": torch.arange(6.0).reshape(2, 3)}}


def test_a_checkpoint_reads_back_what_was_saved(tmp_path: Path) -> None:
    store = Checkpointer(tmp_path / "ckpt")
    path = store.save(_state(), 1)
    state = read_checkpoint(path)
    assert torch.equal(state["model"]["w"], torch.arange(6.0).reshape(2, 3))
    assert state["identity"] == {"dataset": "d", "world_size": 1}


@pytest.mark.parametrize("damage, words", [
    (lambda b: b[:len(b) - 100], "truncated"),
    (lambda b: b[:len(b) // 2] + bytes([b[len(b) // 2] ^ 1]) + b[len(b) // 2 + 1:],
     "corrupted"),
    (lambda b: b"PK\x03\x04" + b[4:], "not a gnnrepro checkpoint"),
    (lambda b: b[:10], "not a gnnrepro checkpoint"),
])
def test_damaged_checkpoint_is_refused_by_name(tmp_path: Path, damage, words) -> None:
    path = Checkpointer(tmp_path).save(_state(), 1)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError, match=words) as info:
        read_checkpoint(path)
    assert str(path) in str(info.value)


class _RunsCode:
    """A pickle that would run code when loaded (what weights_only must refuse)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_checkpoint_that_would_run_code_is_refused_without_running_it(tmp_path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "step-0000000001.ckpt"
    path.write_bytes(_encode({"identity": {}, "evil": _RunsCode(marker)}))  # digest valid
    with pytest.raises(CheckpointError, match="other than tensors and plain data"):
        read_checkpoint(path)
    assert not marker.exists()
    pickle.loads(pickle.dumps(_RunsCode(marker)))  # the same object, unpickled freely, does
    assert marker.exists()


def test_latest_skips_a_damaged_checkpoint_and_says_so(tmp_path, capsys) -> None:
    store = Checkpointer(tmp_path)
    store.save(_state(1), 1)
    newest = store.save(_state(2), 2)
    newest.write_bytes(newest.read_bytes()[:-1])
    state, path = store.latest({"dataset": "d", "world_size": 1})
    assert path.name == "step-0000000001.ckpt" and state["position"] == [0, 1, 1]
    err = capsys.readouterr().err
    assert "skipping checkpoint" in err and newest.name in err and "truncated" in err


def test_another_runs_checkpoint_is_refused_naming_each_difference(tmp_path) -> None:
    store = Checkpointer(tmp_path)
    store.save(_state(1, hidden=256), 1)
    with pytest.raises(CheckpointError, match="another run") as info:
        store.latest({"dataset": "other", "world_size": 2, "hidden": 256})
    message = str(info.value)
    assert "dataset: checkpoint 'd', this run 'other'" in message
    assert "world_size: checkpoint 1, this run 2" in message and "hidden" not in message


def test_the_last_k_are_kept_and_a_killed_writers_leftover_is_removed(tmp_path) -> None:
    leftover = tmp_path / ".step-0000000009.ckpt.tmp-12345"
    tmp_path.mkdir(exist_ok=True)
    leftover.write_bytes(b"half")
    store = Checkpointer(tmp_path, keep=2)
    assert not leftover.exists()
    for step in range(1, 5):
        store.save(_state(step), step)
    assert [p.name for p in store.paths()] == ["step-0000000003.ckpt", "step-0000000004.ckpt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in store.paths()]


def test_a_full_disk_names_the_path_and_bytes_and_keeps_the_previous(tmp_path) -> None:
    """A file size limit (RLIMIT_FSIZE) stands in for a full disk: the write fails midway."""
    script = textwrap.dedent(f"""
        import resource, signal, sys, torch
        sys.path.insert(0, {str(ROOT)!r})
        from gnnrepro.training.checkpoint import Checkpointer
        store = Checkpointer({str(tmp_path)!r})
        store.save({{"identity": {{}}, "w": torch.zeros(10)}}, 1)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            store.save({{"identity": {{}}, "w": torch.zeros(100_000)}}, 2)
        except OSError as exc:
            print(exc)
    """)
    out = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "could not write checkpoint" in out.stdout and "step-0000000002.ckpt" in out.stdout
    assert "bytes needed" in out.stdout and "bytes free" in out.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["step-0000000001.ckpt"]
    read_checkpoint(tmp_path / "step-0000000001.ckpt")


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MiB tmpfs (needs the right to mount: root, as on this project's machines)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_disk_that_fills_keeps_the_previous_checkpoint_and_says_how_much(small_disk) -> None:
    store = Checkpointer(small_disk / "ckpt")
    store.save({"identity": {}, "w": torch.zeros(100_000)}, 1)  # 0.4 MB
    with pytest.raises(OSError, match="No space left on device") as info:
        store.save({"identity": {}, "w": torch.zeros(1_000_000)}, 2)  # 4 MB: does not fit
    message = str(info.value)
    assert "step-0000000002.ckpt" in message
    needed, free = (int(n) for n in re.findall(r"(\d+) bytes (?:needed|free)", message))
    assert needed > 4_000_000 and free < 2 * 2**20
    assert [p.name for p in (small_disk / "ckpt").iterdir()] == ["step-0000000001.ckpt"]
    assert torch.equal(read_checkpoint(store.paths()[0])["w"], torch.zeros(100_000))


def test_bad_checkpoint_settings_name_the_argument(tmp_path) -> None:
    with pytest.raises(ValueError, match="checkpoint_every"):
        Checkpointing(tmp_path, every=0)
    with pytest.raises(ValueError, match="keep_checkpoints"):
        Checkpointing(tmp_path, keep=0)
    with pytest.raises(TypeError, match="checkpoint_dir"):
        Checkpointing(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="resume"):
        Checkpointing(tmp_path, resume="yes")  # type: ignore[arg-type]


def test_a_loader_started_at_a_step_yields_the_rest_of_that_epoch_then_whole_ones(
        dataset) -> None:
    def batches(loader: Loader, epochs: int) -> list[list[torch.Tensor]]:
        return [[torch.cat([mb.input_nodes, mb.y]) for mb in loader] for _ in range(epochs)]

    sampler = FusedSampler(dataset.graph, [5, 5], seed=3)
    with Loader(dataset, sampler, "cpu", 64) as whole, Loader(dataset, sampler, "cpu", 64) as cut:
        expected = batches(whole, 3)
        cut.start_at(1, 4)
        got = batches(cut, 2)
        with pytest.raises(ValueError, match="step must be at most"):
            cut.start_at(0, len(cut) + 1)
    assert len(got[0]) == len(expected[1]) - 4
    assert all(torch.equal(a, b) for a, b in zip(got[0], expected[1][4:]))
    assert all(torch.equal(a, b) for a, b in zip(got[1], expected[2]))


# -- whole runs -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset cache the runs share, built once."""
    root = tmp_path_factory.mktemp("data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GNNREPRO_DATA", str(root))
        datasets.load("products-sim", scale=0.003)
    return root


def _assert_same_run(a: dict, b: dict) -> None:
    assert a["losses"] == b["losses"] and a["val_acc"] == b["val_acc"]
    assert a["test_acc"] == b["test_acc"]
    assert a["state"].keys() == b["state"].keys()
    for key in a["state"]:
        assert torch.equal(a["state"][key], b["state"][key]), key


def _in_process(data_dir: Path, monkeypatch, checkpointing: Checkpointing | None,
                **settings) -> dict:
    monkeypatch.setenv("GNNREPRO_DATA", str(data_dir))
    dataset = datasets.load("products-sim", scale=0.003)
    result = train_pipeline(settings.pop("pipeline", "fused"), dataset, [5, 5], epochs=3,
                            batch_size=64, threads=1, checkpointing=checkpointing, **settings)
    return {"losses": result.losses, "val_acc": result.val_acc, "test_acc": result.test_acc,
            "state": result.state}


@pytest.mark.parametrize("settings", [{}, {"pipeline": "fused+pinned", "workers": 2,
                                           "worker_kind": "thread"}])
def test_sigterm_stops_after_the_step_and_the_resumed_run_is_identical(
        data_dir, monkeypatch, tmp_path, settings) -> None:
    whole = _in_process(data_dir, monkeypatch, None, **settings)
    steps = 0

    def sigterm_at_step_13() -> None:
        nonlocal steps
        steps += 1
        if steps == 13:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr("gnnrepro.training.loop.Progress.update",
                        lambda self, n=1: sigterm_at_step_13())
    stopping = Checkpointing(tmp_path, every=100)
    with pytest.raises(TrainingStopped, match="stopped by SIGTERM at epoch 1, step 3") as info:
        _in_process(data_dir, monkeypatch, stopping, **dict(settings))
    assert info.value.checkpoint.name == "step-0000000013.ckpt"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers given back
    monkeypatch.undo()
    resumed = _in_process(data_dir, monkeypatch, Checkpointing(tmp_path, every=100,
                                                               resume=True), **dict(settings))
    _assert_same_run(whole, resumed)


FAULTS = load_script(ROOT / "benchmarks" / "checkpoint_faults.py")


@pytest.fixture(scope="module")
def references(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each setting's uninterrupted run, made once: setting -> its final state."""
    made: dict = {}

    def reference(setting: str) -> dict:
        if setting not in made:
            made[setting] = FAULTS.uninterrupted(setting, data_dir,
                                                 tmp_path_factory.mktemp("whole"))
        return made[setting]
    return reference  # type: ignore[return-value]


@pytest.mark.parametrize("setting, fault", [
    ("one process", "step:4"),   # SIGKILL after a step; 2 worker processes die with it
    ("one process", "write:6"),  # SIGKILL half-way through writing a checkpoint
    ("one process", "sigterm:12"),
    ("2 ranks restarted by torchrun", "step:7"),  # torchrun restarts the group
])
def test_a_cut_run_resumes_to_the_identical_result_and_leaves_nothing(
        data_dir, references, tmp_path, setting, fault) -> None:
    case = FAULTS.fault_case(setting, fault, data_dir, tmp_path, references(setting))
    assert case["error"] is None and case["fired"]
    assert case["cut_status"] != 0 or "restarted" in setting
    assert case["resumed"] and case["identical"]
    assert case["leftovers"] == {"processes": [], "shm": [], "temporary": []}
    if fault.startswith("sigterm"):
        assert case["cut_status"] == 128 + signal.SIGTERM
        assert case["stop_line"].endswith("run the same command with --resume (resume=True) "
                                          "to go on from there")


def test_resume_refuses_another_runs_checkpoints(data_dir, tmp_path) -> None:
    env = {**os.environ, "GNNREPRO_DATA": str(data_dir)}
    train = [PYTHON, "-m", "gnnrepro.training", *FAULTS.RUN, "--checkpoint-dir", str(tmp_path)]
    first = FAULTS.run_command([*train, "--epochs", "1"], env)
    assert first.returncode == 0, first.stderr
    other = FAULTS.run_command([*train, "--hidden", "32", "--resume"], env)
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert "belongs to another run" in other.stderr
    assert "hidden: checkpoint 256, this run 32" in other.stderr


def test_checkpoint_options_need_a_directory(data_dir) -> None:
    out = FAULTS.run_command([PYTHON, "-m", "gnnrepro.training", "--resume"],
                             {**os.environ, "GNNREPRO_DATA": str(data_dir)})
    assert out.returncode == 2
    assert "--resume and --checkpoint-every need --checkpoint-dir" in out.stderr
