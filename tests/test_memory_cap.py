"""bench storage's memory cgroups (gnnrepro.bench.memory_cap) on fake cgroup trees in tmp_path,
never the real /sys/fs/cgroup: v1, v2 and the hybrid layout are found, a v2 hierarchy gets the
memory controller enabled for its children, and where no cgroup can be made the reason says
why."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gnnrepro.bench import memory_cap

#: What the kernel puts in a new memory cgroup, per version (a fake: only these files).
KERNEL_FILES = {"v1": ("memory.limit_in_bytes", "memory.usage_in_bytes",
                       "memory.max_usage_in_bytes", "cgroup.procs"),
                "v2": ("memory.max", "memory.current", "memory.peak", "cgroup.procs")}


def v1_tree(fs: Path) -> Path:
    (fs / "memory").mkdir(parents=True)
    (fs / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    return fs / "memory"


def v2_tree(fs: Path, controllers: str = "cpuset cpu io memory pids",
            subtree: str = "cpu io memory") -> Path:
    fs.mkdir(parents=True, exist_ok=True)
    (fs / "cgroup.controllers").write_text(controllers + "\n")
    (fs / "cgroup.subtree_control").write_text(subtree + "\n")
    return fs


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """mkdir in a fake hierarchy makes the control files a kernel would (v2: only where the
    parent's subtree_control enables memory)."""
    real = Path.mkdir

    def mkdir(self: Path, *args, **kwargs) -> None:
        real(self, *args, **kwargs)
        if (self.parent / "memory.limit_in_bytes").exists():
            kind = "v1"
        elif "memory" in _read(self.parent / "cgroup.subtree_control").replace("+", " ").split():
            kind = "v2"
        else:
            return
        for name in KERNEL_FILES[kind]:
            (self / name).write_text("0\n")

    monkeypatch.setattr(Path, "mkdir", mkdir)


def _read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


def test_v1_is_the_memory_controllers_own_hierarchy(tmp_path: Path) -> None:
    root = v1_tree(tmp_path)
    assert memory_cap.find_hierarchy(tmp_path) == (root, "v1")


def test_v2_is_the_unified_hierarchy_with_the_memory_controller(tmp_path: Path) -> None:
    assert memory_cap.find_hierarchy(tmp_path) != (tmp_path, "v2")  # nothing there yet
    assert memory_cap.find_hierarchy(v2_tree(tmp_path)) == (tmp_path, "v2")


def test_the_hybrid_layout_uses_whichever_hierarchy_has_memory(tmp_path: Path) -> None:
    v2_tree(tmp_path / "unified", controllers="")  # v1 controllers beside an empty v2
    root = v1_tree(tmp_path)
    assert memory_cap.find_hierarchy(tmp_path) == (root, "v1")
    other = tmp_path / "other"
    v2_tree(other / "unified")  # memory on the v2 side, no v1 memory hierarchy
    assert memory_cap.find_hierarchy(other) == (other / "unified", "v2")


def test_without_a_memory_hierarchy_the_reason_says_what_was_looked_for(tmp_path: Path) -> None:
    reason = memory_cap.find_hierarchy(tmp_path)
    assert reason == (f"no memory cgroup: neither {tmp_path}/memory/memory.limit_in_bytes "
                      f"(v1) nor {tmp_path}/cgroup.controllers (v2)")
    assert memory_cap.make_cgroup(tmp_path) == reason
    v2_tree(tmp_path, controllers="cpu io pids")
    assert memory_cap.make_cgroup(tmp_path) == (
        f"cgroup v2 at {tmp_path} without the memory controller "
        f"({tmp_path}/cgroup.controllers: cpu io pids)")


@pytest.mark.usefixtures("kernel")
@pytest.mark.parametrize("kind", ["v1", "v2"])
def test_a_cgroup_is_made_capped_read_and_removed(tmp_path: Path, kind: str) -> None:
    root = v1_tree(tmp_path) if kind == "v1" else v2_tree(tmp_path)
    made = memory_cap.make_cgroup(tmp_path)
    assert isinstance(made, tuple), made
    cgroup, found = made
    assert found == kind and cgroup.parent == root
    assert cgroup.name.startswith(f"gnnrepro-storage-{os.getpid()}-")
    limit, usage, peak = KERNEL_FILES[kind][:3]
    memory_cap.set_limit(cgroup, kind, 123 << 20)
    assert (cgroup / limit).read_text() == str(123 << 20)
    (cgroup / usage).write_text("4096\n")
    (cgroup / peak).write_text("8192\n")
    assert memory_cap.usage(cgroup, kind) == 4096 and memory_cap.peak(cgroup, kind) == 8192
    memory_cap.reset_peak(cgroup, kind)
    assert memory_cap.peak(cgroup, kind) == 0
    memory_cap.join(cgroup)
    assert (cgroup / "cgroup.procs").read_text() == str(os.getpid())
    (cgroup / peak).unlink()  # a kernel without the peak counter: 0
    assert memory_cap.peak(cgroup, kind) == 0
    memory_cap.remove_cgroup(cgroup)  # the real cgroupfs removes it with its files; here
    assert cgroup.exists()  # a directory with files stays, without an error


@pytest.mark.usefixtures("kernel")
def test_v2_enables_the_memory_controller_for_its_children_first(tmp_path: Path) -> None:
    v2_tree(tmp_path, subtree="cpu io")
    made = memory_cap.make_cgroup(tmp_path)
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory"
    assert isinstance(made, tuple) and (made[0] / "memory.max").exists()


def test_a_memory_controller_that_cannot_be_enabled_is_the_reason(tmp_path: Path) -> None:
    v2_tree(tmp_path)
    (tmp_path / "cgroup.subtree_control").unlink()
    (tmp_path / "cgroup.subtree_control").mkdir()  # unreadable as a file: an OSError
    reason = memory_cap.make_cgroup(tmp_path)
    assert isinstance(reason, str) and reason.startswith(
        f"cgroup v2: the memory controller is not enabled for the children of {tmp_path} and "
        "cannot be")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup.controllers",
                                                          "cgroup.subtree_control"]


def test_a_cgroup_without_its_limit_file_is_removed_and_named(tmp_path: Path) -> None:
    root = v1_tree(tmp_path)  # a plain mkdir: no control files, as in a cgroup without memory
    reason = memory_cap.make_cgroup(tmp_path)
    assert isinstance(reason, str) and reason.startswith(f"the cgroup made in {root} (cgroup v1")
    assert reason.endswith("has no memory.limit_in_bytes")
    assert [p.name for p in root.iterdir()] == ["memory.limit_in_bytes"]  # nothing left


def test_the_default_hierarchy_is_read_when_called(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_cap, "CGROUP_FS", tmp_path)
    v1_tree(tmp_path)
    assert memory_cap.find_hierarchy() == (tmp_path / "memory", "v1")


def test_a_cap_is_reached_only_where_the_peak_came_to_the_limit() -> None:
    """The two real mmap records of bench storage at products-sim 0.05 (cgroup v1): at
    5a34829 the peak came within 3 KB of the limit; at e5635fd it stayed 54 MB under it, the
    file's pages having been cached outside the cgroup."""
    held = {"mode": "cgroup-v1", "baseline_bytes": 241315840, "limit_bytes": 302541540,
            "peak_bytes": 302538752}
    unbound = {"mode": "cgroup-v1", "baseline_bytes": 241098752, "limit_bytes": 302324452,
               "peak_bytes": 247853056}
    assert memory_cap.reached(held) is True
    assert memory_cap.reached(unbound) is False
    assert memory_cap.reached({"mode": "none"}) is None
    assert memory_cap.reached({"mode": "cgroup-v2", "limit_bytes": 10}) is None  # no peak
    # the slack is 5% of the allowance (limit - baseline), at least 1 MiB
    small = {"baseline_bytes": 0, "limit_bytes": 2**22, "peak_bytes": 2**22 - 2**20}
    assert memory_cap.reached(small) is True
    assert memory_cap.reached({**small, "peak_bytes": 2**22 - 2**20 - 1}) is False


def test_resident_bytes_counts_a_files_cached_pages(tmp_path: Path) -> None:
    """A file just written and read is in the page cache, every page of it; an empty file
    has none; the count never exceeds the file's size."""
    from gnnrepro.bench.child_process import resident_bytes
    path = tmp_path / "rows.bin"
    path.write_bytes(os.urandom(3 * 4096 + 100))
    assert path.read_bytes()  # read back: cached
    assert resident_bytes(path) == path.stat().st_size
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert resident_bytes(empty) == 0
    with pytest.raises(OSError):
        resident_bytes(tmp_path / "missing.bin")
