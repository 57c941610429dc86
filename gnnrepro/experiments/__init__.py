"""The experiments behind the notebooks: one module per notebook, named after it
(01_stage_breakdown -> stage_breakdown, ...), each returning (tidy DataFrame, metadata)
computed once per parameter set and code version and stored under <out_dir>/results/.

`from_namespace` validates a notebook's parameters, `write_table` writes a display table as
.csv, .md and booktabs .tex; `gnnrepro.plots` draws the figures.
"""
from gnnrepro.experiments.disk_training import (disk_training, disk_training_table,
                                                skip_reason)
from gnnrepro.experiments.end_to_end import (end_to_end, end_to_end_table, pipeline_alone,
                                             pipeline_alone_table, timeline_frame)
from gnnrepro.experiments.gpu_results import (NOT_MEASURED, gpu_copy, gpu_end_to_end, gpu_label,
                                              gpu_paper_mark,
                                              gpu_sampling, stored_gpu_sessions)
from gnnrepro.experiments.heterogeneous import (heterogeneous, heterogeneous_label,
                                                heterogeneous_sampling_table, heterogeneous_table)
from gnnrepro.experiments.heterogeneous_disk import (heterogeneous_disk,
                                                     heterogeneous_disk_skip_reason)
from gnnrepro.experiments.labels import figure_label
from gnnrepro.experiments.params import Params, from_namespace
from gnnrepro.experiments.partitioned import partitioned, partitioned_table
from gnnrepro.experiments.sampling_speedup import sampling_speedup, speedup_table
from gnnrepro.experiments.scale_growth import growth_table, scale_growth
from gnnrepro.experiments.scaling import scaling, scaling_table
from gnnrepro.experiments.scaling_projection import (PROJECTION_CAPTION, PROJECTION_NOT_MEASURED,
                                                     projection_label, projection_rows)
from gnnrepro.experiments.sensitivity import sensitivity, sensitivity_table
from gnnrepro.experiments.stage_breakdown import stage_breakdown, stage_table
from gnnrepro.experiments.storage import storage, storage_table
from gnnrepro.experiments.store import Store, param_hash
from gnnrepro.experiments.tables import write_table
from gnnrepro.experiments.link_prediction import link_prediction, typed_link_prediction
from gnnrepro.experiments.temporal_sampling import temporal_sampling
from gnnrepro.experiments.weighted_sampling import weighted_sampling

__all__ = ["NOT_MEASURED", "PROJECTION_CAPTION", "PROJECTION_NOT_MEASURED", "disk_training", "disk_training_table", "end_to_end",
           "end_to_end_table", "figure_label", "from_namespace", "gpu_copy", "gpu_end_to_end",
           "gpu_label", "gpu_paper_mark", "gpu_sampling", "growth_table", "heterogeneous", "heterogeneous_disk",
           "heterogeneous_disk_skip_reason", "heterogeneous_label",
           "heterogeneous_sampling_table", "heterogeneous_table", "link_prediction", "param_hash",
           "Params", "partitioned", "partitioned_table", "pipeline_alone", "pipeline_alone_table",
           "projection_label", "projection_rows",
           "sampling_speedup", "scale_growth", "scaling", "scaling_table", "sensitivity",
           "sensitivity_table", "skip_reason", "speedup_table", "stage_breakdown", "stage_table",
           "storage", "storage_table", "Store", "stored_gpu_sessions", "temporal_sampling",
           "timeline_frame", "typed_link_prediction", "weighted_sampling", "write_table"]
