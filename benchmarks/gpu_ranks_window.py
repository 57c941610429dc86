"""The GPU session's multi-GPU window (`--steps ranks,projection`, issue 49 items 3 and 4): the
1-8 GPU code path run on the one chip, and 2, 4 and 8 GPUs projected from measured parts."""
from __future__ import annotations

from gpu_machine import PY
from gpu_runner import WORK, Session


def step_ranks(s: Session, cuda: bool, built: bool) -> None:
    """The multi-GPU code path on the one GPU (issue 49 item 3, benchmarks/rank_equivalence.py):
    one rank over NCCL against 2, 4 and 8 ranks sharing it over gloo, 50 steps, products-sim
    0.05 (its own small dataset: the ranks' weights, not their speed, are the result)."""
    if not built:
        s.skip("rank-equivalence", "skipped: the build failed")
        return
    out = WORK / "ranks"
    (out / "rank-equivalence.json").unlink(missing_ok=True)
    args = (["--device", "cuda", "--world-sizes", "2,4,8"] if cuda else
            ["--device", "cpu", "--scale", "0.003", "--world-sizes", "2", "--steps", "10",
             "--batch-size", "64", "--threads", "1"])
    step = s.run("rank-equivalence", [PY, "benchmarks/rank_equivalence.py", "--out", str(out),
                                      *args], timeout_s=300)
    result = s.keep("rank-equivalence", out / "rank-equivalence.json") if step["ok"] else None
    if result:
        s.report["figures"]["rank_equivalence"] = result["rows"]


def step_projection(s: Session, cuda: bool, built: bool, scale: float) -> None:
    """2, 4 and 8 GPUs projected from measured parts (issue 49 item 4,
    benchmarks/scaling_projection.py): the host work of 1, 2, 4 and 8 ranks at once on the
    machine's cores, the model's step and the copy rate on its GPU, and the one-GPU epoch
    measured through the launcher (NCCL at one rank) beside the projection's."""
    if not built or "dataset" not in s.report["steps"] or not s.report["steps"]["dataset"]["ok"]:
        s.skip("scaling-projection", "skipped: no build or no dataset")
        return
    out = WORK / "projection"
    (out / "scaling-projection.json").unlink(missing_ok=True)
    args = (["--device", "cuda"] if cuda else
            ["--device", "cpu", "--ranks", "1,2", "--pipelines", "fused+pinned", "--batches",
             "2", "--batch-size", "64", "--epochs", "1", "--eval-ids", "64"])
    s.run("scaling-projection", [PY, "benchmarks/scaling_projection.py", "--out",
                                        str(out), "--scale", str(scale), "--validate", *args],
                 timeout_s=300)
    # written before the validation runs: the parts are kept even if that is cut short
    result = s.keep("scaling-projection", out / "scaling-projection.json")
    if result:
        s.report["figures"]["scaling_projection"] = result["rows"]
