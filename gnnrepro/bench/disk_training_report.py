"""`bench disk-training`'s report: the device's ceiling (fio in the same run), each store's
ratios to the mmap baselines and its share of fio's rate, and the table printed
(gnnrepro.bench.disk_training runs the stores)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from gnnrepro.bench.device_ceiling import fio_random_read

__all__ = ["device_ceiling", "format_table", "summarise"]


def device_ceiling(file: Path, disk: dict[str, Any], depth: int,
                   seconds: float) -> dict[str, Any]:
    """Random direct 4 KiB reads of `file` at queue depth 1 and `depth`, and (when the disk
    store gathered) at its mean request size, whose key is added to its gather phase as
    fio_key."""
    ceiling = {f"4096B_qd{d}": fio_random_read(file, 4096, d, seconds) for d in (1, depth)}
    if "gather" in disk and disk["gather"].get("requests"):
        size = max(4096, round(disk["gather"]["mean_request_bytes"] / 4096) * 4096)
        ceiling[f"{size}B_qd{depth}"] = fio_random_read(file, size, depth, seconds)
        disk["gather"]["fio_key"] = f"{size}B_qd{depth}"
    return ceiling


def _batch_s(r: dict[str, Any]) -> float | None:
    """Seconds per training step, a lower bound where training was skipped, or None where
    no step was timed (a run resumed at its last step)."""
    return r["train"].get("batch_s", r["train"].get("batch_s_at_least"))


def summarise(results: dict[str, Any], ceiling: dict[str, Any]) -> None:
    """Ratios to each mmap baseline and the disk store's share of fio's rate."""
    for r in results.values():
        if "gather" not in r:
            continue
        g = r["gather"]
        for base in ("mmap", "mmap-random"):
            other = results.get(base, {})
            if "gather" in other:
                r[f"gather_vs_{base}"] = g["rows_per_s"] / other["gather"]["rows_per_s"]
                # a lower bound where the baseline did not train (its step is a lower bound)
                if _batch_s(other) is not None and _batch_s(r) is not None:
                    r[f"batch_vs_{base}"] = _batch_s(other) / _batch_s(r)
        fio = ceiling.get(g.get("fio_key", ""))
        if fio and g.get("device_bytes_per_s_busy"):
            g["share_of_fio_busy"] = g["device_bytes_per_s_busy"] / fio["bytes_per_s"]
            g["share_of_fio_wall"] = g["device_bytes_per_s_wall"] / fio["bytes_per_s"]


def format_table(result: dict[str, Any]) -> str:
    """One line per store (">": a lower bound, the step was not run)."""
    ff = result["feature_file"]
    lines = [f"feature file {ff['bytes'] / 1e9:.1f} GB ({result['table_vs_memory']:.2f}x "
             f"memory); disk store budget {result['params']['budget_fraction']:.0%} of it; "
             f"read_ahead_kb {result.get('read_ahead_kb')}",
             f"{'store':11} {'Mrows/s':>8} {'x mmap':>7} {'B rd/B':>7} {'hit':>5} {'fio':>5} "
             f"{'step s':>8} {'epoch h':>8} {'test acc':>8} {'train GB':>8} identical"]

    def fmt(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for name, r in result["stores"].items():
        if "error" in r:
            lines.append(f"{name:11} {r['error']}")
            continue
        g, t = r["gather"], r["train"]
        step = (f"{t['batch_s']:8.2f}" if "batch_s" in t else
                f">{t['batch_s_at_least']:7.0f}" if "batch_s_at_least" in t else f"{'-':>8}")
        epoch = t.get("epoch_s_extrapolated")
        lines.append(
            f"{name:11} {g['rows_per_s'] / 1e6:8.3f} {fmt(r.get('gather_vs_mmap'), '7.1f')} "
            f"{fmt(g.get('bytes_read_per_byte_used'), '7.2f')} {fmt(g.get('hit_rate'), '5.2f')} "
            f"{fmt(g.get('share_of_fio_busy'), '5.2f')} {step} "
            f"{fmt(None if epoch is None else epoch / 3600, '8.2f')} "
            f"{fmt(t.get('test_acc'), '8.3f')} "
            f"{r['memory']['train']['peak_rss_bytes'] / 1e9:8.2f} {r['check']['identical']}")
    return "\n".join(lines)
