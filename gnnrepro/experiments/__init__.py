"""The experiments behind the notebooks: one function per notebook returns (tidy DataFrame,
metadata), computed once per parameter set and stored under <out_dir>/results/.

`from_namespace` validates a notebook's parameters, `write_table` writes a display table as
.csv, .md and booktabs .tex; `gnnrepro.plots` draws the figures.
"""
from gnnrepro.experiments.epoch_time import end_to_end, end_to_end_table, timeline_frame
from gnnrepro.experiments.multi_gpu import scaling, scaling_table
from gnnrepro.experiments.params import Params, from_namespace
from gnnrepro.experiments.speedup import sampling_speedup, speedup_table
from gnnrepro.experiments.stages import stage_breakdown, stage_table
from gnnrepro.experiments.storage import storage, storage_table
from gnnrepro.experiments.store import Store, param_hash
from gnnrepro.experiments.sweeps import sensitivity, sensitivity_table
from gnnrepro.experiments.tables import write_table

__all__ = ["Params", "Store", "end_to_end", "end_to_end_table", "from_namespace",
           "param_hash", "sampling_speedup", "scaling", "scaling_table", "sensitivity",
           "sensitivity_table", "speedup_table", "stage_breakdown", "stage_table", "storage",
           "storage_table",
           "timeline_frame", "write_table"]
