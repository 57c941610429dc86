"""The paper's figures in one style: large enough type for print, colour-blind-safe colours
(Okabe-Ito) that stay distinct in greyscale through value labels, axes labelled with units,
and the paper's values marked in black, dashed.

Every function takes an experiment's tidy data (gnnrepro.experiments) and returns a Figure;
`save` writes it as .png and .pdf atomically. Nothing here picks a backend, so the functions
work inline in Jupyter and headless (Agg).

The figures live by subject in `pipelines` (01-03, 09, GPU), `sweeps` (04, 05, 07, 08) and
`storage` (06), the style and its shared helpers in `style`, writing in `saving`; every name is
imported from here.
"""
from gnnrepro.plots.style import (LOG_SCALE_RATIO, PAPER, PIPELINE_COLORS, SAMPLER_COLORS,
                                  STAGE_COLORS, STORE_COLORS, STYLE)
from gnnrepro.plots.pipelines import (end_to_end_bars, gpu_bars, heterogeneous_bars,
                                      pipeline_alone_bars, speedup_bars, stage_bars, timeline,
                                      link_bars, temporal_bars, weighted_bars)
from gnnrepro.plots.sweeps import (growth_lines, partitioned_lines, projection_lines,
                                   scaling_lines, sensitivity_bars)
from gnnrepro.plots.storage import disk_training_bars, storage_lines
from gnnrepro.plots.saving import save, save_figure

__all__ = ["STYLE", "end_to_end_bars", "gpu_bars", "growth_lines", "heterogeneous_bars",
           "partitioned_lines", "pipeline_alone_bars", "projection_lines", "save", "save_figure",
           "scaling_lines",
           "sensitivity_bars", "speedup_bars", "stage_bars", "storage_lines", "timeline",
           "link_bars", "temporal_bars", "weighted_bars"]
