"""gnnrepro.models.sparse_adam.SparseAdam: torch.optim.SparseAdam's results (rows looked up
repeatedly, several tables, both float dtypes, checkpoints either way) within torch's tolerance
(torch's vectorised square root may round an ulp off; ours is correctly rounded, and the op
equals the update computed in Python's floats bit for bit), and the op's refusals of bad
arguments."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from gnnrepro import _ops
from gnnrepro.models.sparse_adam import SparseAdam


def _tables(dtype: torch.dtype) -> nn.ModuleList:
    torch.manual_seed(0)
    return nn.ModuleList([nn.Embedding(50, 7, sparse=True, dtype=dtype),
                          nn.Embedding(9, 3, sparse=True, dtype=dtype)])


def _steps(tables: nn.ModuleList, optimizer: torch.optim.Optimizer, steps: int,
           seed: int = 1) -> None:
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = 0
        for table in tables:  # repeated ids: the gradient is coalesced before the update
            ids = torch.randint(0, table.num_embeddings, (30,), generator=gen)
            loss = loss + (table(ids) ** 3).sum()
        loss.backward()
        optimizer.step()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.05, "betas": (0.8, 0.95), "eps": 1e-6}])
def test_equals_torch(dtype, kwargs):
    ours, theirs = _tables(dtype), _tables(dtype)
    opt_ours, opt_theirs = SparseAdam(ours.parameters(), **kwargs), \
        torch.optim.SparseAdam(theirs.parameters(), **kwargs)
    _steps(ours, opt_ours, 6)
    _steps(theirs, opt_theirs, 6)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b)
        sa, sb = opt_ours.state[a], opt_theirs.state[b]
        assert sa["step"] == sb["step"] == 6
        torch.testing.assert_close(sa["exp_avg"], sb["exp_avg"])
        torch.testing.assert_close(sa["exp_avg_sq"], sb["exp_avg_sq"])
    moved = (ours[0].weight - _tables(dtype)[0].weight).abs().max()
    assert moved > 100 * (ours[0].weight - theirs[0].weight).abs().max()  # it did train


def test_op_is_the_update_in_python_floats_bit_for_bit():
    gen = torch.Generator().manual_seed(5)
    param, m = torch.randn(40, 5, generator=gen, dtype=torch.float64), \
        torch.randn(40, 5, generator=gen, dtype=torch.float64) * 0.1
    v = torch.rand(40, 5, generator=gen, dtype=torch.float64) * 0.1
    rows = torch.tensor([1, 4, 9, 10, 33, 39])
    grad = torch.randn(6, 5, generator=gen, dtype=torch.float64)
    lr, b1, b2, eps, step = 0.01, 0.9, 0.999, 1e-8, 7
    expected = param.clone()
    size = lr * math.sqrt(1 - b2 ** step) / (1 - b1 ** step)
    for i, r in enumerate(rows.tolist()):
        for j in range(5):
            g, mj, vj = grad[i, j].item(), m[r, j].item(), v[r, j].item()
            m2, v2 = mj + (g - mj) * (1 - b1), vj + (g * g - vj) * (1 - b2)
            expected[r, j] = expected[r, j].item() + -size * (m2 / (math.sqrt(v2) + eps))
    _ops.ops.sparse_adam_(param, m, v, rows, grad, lr, b1, b2, eps, step)
    assert torch.equal(param, expected)


def test_checkpoints_cross_between_ours_and_torch():
    a, b = _tables(torch.float32), _tables(torch.float32)
    opt_a, opt_b = SparseAdam(a.parameters()), torch.optim.SparseAdam(b.parameters())
    _steps(a, opt_a, 3)
    _steps(b, opt_b, 3)
    resumed = _tables(torch.float32)
    resumed.load_state_dict(b.state_dict())
    opt_resumed = SparseAdam(resumed.parameters())
    opt_resumed.load_state_dict(opt_b.state_dict())  # torch's checkpoint, our optimiser
    _steps(resumed, opt_resumed, 2, seed=2)
    _steps(a, opt_a, 2, seed=2)
    for x, y in zip(a.parameters(), resumed.parameters()):
        torch.testing.assert_close(x, y)


def test_maximize_and_untouched_tables_take_torchs_path():
    ours, theirs = _tables(torch.float32), _tables(torch.float32)
    opt_ours = SparseAdam(ours.parameters(), maximize=True)
    opt_theirs = torch.optim.SparseAdam(theirs.parameters(), maximize=True)
    _steps(ours, opt_ours, 2)
    _steps(theirs, opt_theirs, 2)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(a, b)  # torch's own update: the same to the bit
    table = nn.Embedding(5, 2, sparse=True)
    before = table.weight.detach().clone()
    SparseAdam(table.parameters()).step()  # no gradient: nothing moves
    assert torch.equal(table.weight, before)


def test_dense_gradient_refused_as_torch_refuses_it():
    weight = nn.Parameter(torch.ones(4, 2))
    weight.grad = torch.ones(4, 2)
    with pytest.raises(RuntimeError, match="dense gradients"):
        SparseAdam([weight]).step()


def _op_args(**changes):
    args = {"param": torch.zeros(6, 3), "exp_avg": torch.zeros(6, 3),
            "exp_avg_sq": torch.zeros(6, 3), "indices": torch.tensor([0, 2, 5]),
            "values": torch.ones(3, 3), "step": 1}
    args.update(changes)
    return args


def _call(a):
    _ops.ops.sparse_adam_(a["param"], a["exp_avg"], a["exp_avg_sq"], a["indices"], a["values"],
                          1e-3, 0.9, 0.999, 1e-8, a["step"])


@pytest.mark.parametrize("changes,error,match", [
    ({"indices": torch.tensor([0, 6, 5])}, IndexError, "outside"),
    ({"indices": torch.tensor([-1, 2, 5])}, IndexError, "outside"),
    ({"indices": torch.tensor([2, 2, 5])}, ValueError, "strictly increasing"),
    ({"indices": torch.tensor([0, 2, 5], dtype=torch.int32)}, TypeError, "int64"),
    ({"values": torch.ones(2, 3)}, ValueError, "values"),
    ({"values": torch.ones(3, 3, dtype=torch.float64)}, TypeError, "values"),
    ({"exp_avg": torch.zeros(6, 2)}, ValueError, "exp_avg"),
    ({"exp_avg_sq": torch.zeros(6, 3, dtype=torch.float64)}, TypeError, "exp_avg_sq"),
    ({"param": torch.zeros(6, 3, dtype=torch.int64)}, TypeError, "float32 or float64"),
    ({"step": 0}, ValueError, "step"),
])
def test_op_refuses_bad_arguments_and_writes_nothing(changes, error, match):
    args = _op_args(**changes)
    before = args["param"].clone()
    with pytest.raises(error, match=match):
        _call(args)
    assert torch.equal(args["param"], before)
