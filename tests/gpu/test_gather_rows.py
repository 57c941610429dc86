"""gather_rows on "cpu" and "cuda" from one parametrization: rows of a host table (on the GPU:
pinned or page-locked in place, read over UVA) or a device table; the CUDA kernel is
stream-ordered (no host sync), so an out-of-range index zero-fills its row instead of raising."""
from __future__ import annotations

import warnings

import pytest
import torch

from gnnrepro._ops import ops


def gather_rows(src: torch.Tensor, index: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The op, and the rows it wrote: out[:len(index)]."""
    ops.gather_rows(src, index, out)
    return out[: index.numel()]
from gnnrepro.pinning import pin_in_place

from .conftest import needs_cuda


def table(rows: int, dim: int, dtype: torch.dtype) -> torch.Tensor:
    values = torch.rand(rows, dim, generator=torch.Generator().manual_seed(0)) * 200
    return values.to(dtype)  # non-negative, so integer dtypes hold them too


def placed(src: torch.Tensor, device: str, where: str, registered) -> torch.Tensor:
    """The table where the op reads it: on `device`, or on the host pinned ("pinned": a pinned
    copy; "registered": page-locked in place, like InMemoryFeatureStore's table)."""
    if where == "device":
        return src.to(device)
    if device == "cpu":
        pytest.skip("UVA: a CUDA op reading a pinned host table")
    if where == "pinned":
        return src.pin_memory()
    registered(src)
    return src


# Row sizes that take each word width: 16, 8, 4, 2 and 1 bytes.
@pytest.mark.parametrize("dtype,dim", [
    (torch.float32, 100), (torch.float32, 6), (torch.float32, 37), (torch.float16, 5),
    (torch.uint8, 33), (torch.float64, 3), (torch.bfloat16, 64),
])
@pytest.mark.parametrize("where", ["device", "pinned", "registered"])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_gather_equals_index_select(device, dtype, dim, where, index_dtype, registered):
    src_cpu = table(1000, dim, dtype)
    src = placed(src_cpu.clone(), device, where, registered)
    index = torch.randint(0, 1000, (5000,), generator=torch.Generator().manual_seed(1))
    index = torch.cat([index, torch.tensor([0, 999, 999])]).to(index_dtype)
    out = torch.empty(index.numel(), dim, dtype=dtype, device=device)
    result = gather_rows(src, index.to(device), out)
    assert result.shape == (index.numel(), dim)
    assert torch.equal(result.cpu(), src_cpu.index_select(0, index.long()))


def test_misaligned_views_and_prefix_of_out(device):
    src_cpu = table(300, 33, torch.uint8)
    src = (src_cpu.pin_memory() if device == "cuda" else src_cpu.clone())[1:]  # 33 bytes in
    index = torch.tensor([5, 0, 298, 5], device=device)
    out = torch.full((10, 33), 7, dtype=torch.uint8, device=device)
    result = gather_rows(src, index, out[1:])  # misaligned output too
    assert torch.equal(result.cpu(), src_cpu[1:][index.cpu()])
    assert bool((out[0] == 7).all()) and bool((out[5:] == 7).all())


def test_empty_index(device):
    out = torch.empty(4, 8, device=device)
    src = table(10, 8, torch.float32)
    src = src.pin_memory() if device == "cuda" else src
    assert gather_rows(src, torch.empty(0, dtype=torch.int64, device=device), out).shape == (0, 8)


@pytest.mark.parametrize("bad", [-1, 500, 10**12])
def test_index_out_of_range(device, bad):
    """CPU: raises, naming the position. CUDA: the row is never read and comes out zero; the
    rows around it are gathered, and the GPU stays usable (no device assert)."""
    src_cpu = table(500, 16, torch.float32) + 1  # no zero rows
    src = src_cpu.to(device)
    index = torch.zeros(20_000, dtype=torch.int64)
    index[17_123] = bad
    out = torch.full((20_000, 16), -5.0, device=device)
    if device == "cpu":
        with pytest.raises(RuntimeError, match=rf"index\[17123\] = {bad} is outside \[0, 500\)"):
            gather_rows(src, index, out)
        return
    result = gather_rows(src, index.to(device), out).cpu()
    assert bool((result[17_123] == 0).all())
    keep = torch.ones(20_000, dtype=torch.bool)
    keep[17_123] = False
    assert torch.equal(result[keep], src_cpu[index[keep]])


@needs_cuda
def test_no_host_sync_and_current_stream():
    """No sync (the sync debug mode would warn) and ordered on the current stream: an index
    written behind a long sleep on that stream is the one gathered."""
    src = table(100, 8, torch.float32).cuda()
    index = torch.zeros(64, dtype=torch.int64, device="cuda")
    out = torch.empty(64, 8, device="cuda")
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught, torch.cuda.stream(stream):
            warnings.simplefilter("always")
            torch.cuda._sleep(100_000_000)
            index.fill_(42)
            gather_rows(src, index, out)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert not [w for w in caught if "synchroniz" in str(w.message)]
    stream.synchronize()
    assert torch.equal(out.cpu(), src.cpu()[42].expand(64, 8))


@needs_cuda
def test_interior_pointer_into_registered_memory():
    base = table(1000, 12, torch.float32)
    assert pin_in_place(base)
    src = base[123:700]  # starts inside the registered range
    index = torch.tensor([0, 576, 300, 5], device="cuda")
    out = torch.empty(4, 12, device="cuda")
    assert torch.equal(gather_rows(src, index, out).cpu(), src[index.cpu()])


@needs_cuda
def test_bad_arguments():
    src = table(10, 4, torch.float32)
    index = torch.tensor([1, 2], device="cuda")
    out = torch.empty(2, 4, device="cuda")
    with pytest.raises(RuntimeError, match="pinned"):  # a pageable host table
        gather_rows(src, index, out)
    with pytest.raises(RuntimeError, match="index and out must be CUDA tensors"):
        gather_rows(src.cuda(), index, out.cpu())
    with pytest.raises(RuntimeError, match="out has dtype"):
        gather_rows(src.cuda(), index, out.double())
    with pytest.raises(RuntimeError, match="fewer than"):
        gather_rows(src.cuda(), index, out[:1])
    with pytest.raises(RuntimeError, match="columns"):
        gather_rows(src.cuda(), index, torch.empty(2, 3, device="cuda"))
