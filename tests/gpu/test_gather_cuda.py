"""The CUDA gather_rows: rows of a pinned host table (read over UVA) or a GPU table."""
from __future__ import annotations

import pytest
import torch

from gnnrepro._ops import ops

CUDA = torch.device("cuda")


def table(rows: int, dim: int, dtype: torch.dtype) -> torch.Tensor:
    values = torch.rand(rows, dim, generator=torch.Generator().manual_seed(0)) * 200
    return values.to(dtype)  # non-negative, so integer dtypes hold them too


def placed(src: torch.Tensor, where: str, registered) -> torch.Tensor:
    if where == "gpu":
        return src.to(CUDA)
    if where == "pinned":
        return src.pin_memory()
    registered(src)  # page-locked in place, like InMemoryFeatureStore's table
    return src


# Row sizes that take each word width: 16, 8, 4, 2 and 1 bytes.
@pytest.mark.parametrize("dtype,dim", [
    (torch.float32, 100), (torch.float32, 6), (torch.float32, 37), (torch.float16, 5),
    (torch.uint8, 33), (torch.float64, 3), (torch.bfloat16, 64),
])
@pytest.mark.parametrize("where", ["gpu", "pinned", "registered"])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_gather_equals_index_select(dtype, dim, where, index_dtype, registered):
    src_cpu = table(1000, dim, dtype)
    src = placed(src_cpu.clone(), where, registered)
    index = torch.randint(0, 1000, (5000,), generator=torch.Generator().manual_seed(1))
    index = torch.cat([index, torch.tensor([0, 999, 999])]).to(index_dtype)
    out = torch.empty(index.numel(), dim, dtype=dtype, device=CUDA)
    result = ops.gather_rows(src, index.to(CUDA), out)
    assert result.data_ptr() == out.data_ptr() and result.shape == (index.numel(), dim)
    assert torch.equal(result.cpu(), src_cpu.index_select(0, index.long()))


def test_misaligned_views_and_prefix_of_out():
    src_cpu = table(300, 33, torch.uint8)
    src = src_cpu.pin_memory()[1:]  # data starts one row (33 bytes) into the pinned block
    index = torch.tensor([5, 0, 298, 5], device=CUDA)
    out = torch.full((10, 33), 7, dtype=torch.uint8, device=CUDA)
    result = ops.gather_rows(src, index, out[1:])  # misaligned output too
    assert torch.equal(result.cpu(), src_cpu[1:][index.cpu()])
    assert bool((out[0] == 7).all()) and bool((out[5:] == 7).all())


def test_empty_index():
    out = torch.empty(4, 8, device=CUDA)
    src = table(10, 8, torch.float32).pin_memory()
    assert ops.gather_rows(src, torch.empty(0, dtype=torch.int64, device=CUDA), out).shape == (0, 8)


@pytest.mark.parametrize("bad", [-1, 500, 10**12])
@pytest.mark.parametrize("where", ["gpu", "pinned"])
def test_index_out_of_range_raises(bad, where, registered):
    src = placed(table(500, 16, torch.float32), where, registered)
    index = torch.zeros(20_000, dtype=torch.int64)
    index[17_123] = bad
    with pytest.raises(RuntimeError, match=rf"index\[17123\] = {bad} is outside \[0, 500\)"):
        ops.gather_rows(src, index.to(CUDA), torch.empty(20_000, 16, device=CUDA))
    # The GPU is still usable afterwards (no device-side assert).
    ok = ops.gather_rows(src, index[:5].to(CUDA), torch.empty(5, 16, device=CUDA))
    assert torch.equal(ok.cpu(), src.cpu()[:1].expand(5, 16))


def test_bad_arguments():
    src = table(10, 4, torch.float32)
    index = torch.tensor([1, 2], device=CUDA)
    out = torch.empty(2, 4, device=CUDA)
    with pytest.raises(RuntimeError, match="pinned"):  # a pageable host table
        ops.gather_rows(src, index, out)
    with pytest.raises(RuntimeError, match="index and out must be CUDA tensors"):
        ops.gather_rows(src.to(CUDA), index, out.cpu())
    with pytest.raises(RuntimeError, match="out has dtype"):
        ops.gather_rows(src.to(CUDA), index, out.double())
    with pytest.raises(RuntimeError, match="fewer than"):
        ops.gather_rows(src.to(CUDA), index, out[:1])
    with pytest.raises(RuntimeError, match="columns"):
        ops.gather_rows(src.to(CUDA), index, torch.empty(2, 3, device=CUDA))
