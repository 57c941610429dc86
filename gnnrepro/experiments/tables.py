"""Table writers: one display table as .csv (full precision), .md and LaTeX booktabs .tex
(numbers to 3 significant digits, for reading), each written atomically."""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from gnnrepro.atomic import write_atomic, write_text_atomic

__all__ = ["format_cell", "to_latex", "to_markdown", "with_not_run", "write_table"]

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}


def format_cell(value: object, digits: int = 3) -> str:
    """A cell as text: reals to `digits` significant digits in fixed notation (8494, 1.52,
    0.0123), integers as they are, missing values (None, NaN) as '-'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral) or value == 0 or not math.isfinite(value):
        return str(value)
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:.{decimals}f}"


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def to_markdown(table: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table; numeric columns right-aligned."""
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", r"\|") for c in cells) + " |"
    align = ["---:" if _is_numeric(table[c]) else "---" for c in table.columns]
    lines = [row([str(c) for c in table.columns]), "| " + " | ".join(align) + " |"]
    lines += [row([format_cell(v, digits) for v in r]) for r in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(table: pd.DataFrame, caption: str, label: str, digits: int = 3) -> str:
    """A booktabs table (needs \\usepackage{booktabs}); numeric columns right-aligned."""
    spec = "".join("r" if _is_numeric(table[c]) else "l" for c in table.columns)
    def row(cells: list[str]) -> str:
        return " & ".join(_latex_escape(c) for c in cells) + r" \\"
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{_latex_escape(caption)}}}",
             rf"\label{{{label}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             row([str(c) for c in table.columns]), r"\midrule"]
    lines += [row([format_cell(v, digits) for v in r]) for r in table.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_table(table: pd.DataFrame, stem: Path | str, caption: str,
                digits: int = 3) -> list[Path]:
    """Write `table` to stem.csv, stem.md and stem.tex (label tab:<stem name>); return them."""
    stem = Path(stem)
    csv, md, tex = (stem.with_name(stem.name + ext) for ext in (".csv", ".md", ".tex"))
    write_atomic(csv, lambda tmp: table.to_csv(tmp, index=False))
    write_text_atomic(md, to_markdown(table, digits))
    write_text_atomic(tex, to_latex(table, caption, f"tab:{stem.name}", digits))
    return [csv, md, tex]


def with_not_run(table: pd.DataFrame, column: str,
                 not_run: Mapping[str, str] | None) -> pd.DataFrame:
    """`table` and, where `not_run` names any, a row for each ({column: name}, the rest
    empty) with a status column ('run', or 'not run: <reason>'), so that a table says what it
    left out and why."""
    if not not_run:
        return table
    missing = pd.DataFrame({column: list(not_run)})
    status = ["run"] * len(table) + [f"not run: {why}" for why in not_run.values()]
    return pd.concat([table, missing], ignore_index=True).assign(status=status)
