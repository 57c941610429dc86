"""Every user-facing setting, written once: its default, its check, its help.

`SETTINGS` is the one definition. It feeds the command line (`add_options`: both
`python -m gnnrepro` and the torchrun entry), the notebooks' parameters
(gnnrepro.experiments.params builds its fields from it) and `TrainConfig`, the settings of one
training run that train_pipeline, the benchmarks and every data-parallel rank take. Each value
is checked by its setting's check, with one error message that names it.

Placement (where the graph is read and how feature rows reach the GPU) is two settings:
`sampler_device` (cpu | cuda | uva) and `feature_source` (pinned | uva | device);
`check_placement` says which combinations a machine can run.

The feature-store benchmarks' own settings (`bench storage` and notebook 06_storage,
`bench disk-training`) are `STORAGE_DEFAULTS` and `DISK_TRAINING_DEFAULTS`: the command line's
defaults, the benchmark functions' and the notebook's, each written once here.

Every name is imported from here; by concept they live in `settings` (SETTINGS, the checks,
add_options), `machine` (the resolve_* functions, check_placement), `train_config`
(TrainConfig) and `bench_defaults` (STORAGE_DEFAULTS, DISK_TRAINING_DEFAULTS).
"""
# (list_of and fanouts_check, outside __all__, are imported from here too)
from gnnrepro.config.settings import (EVAL_METHODS, FEATURE_SOURCES, FEATURE_STORES, PIPELINES,
                                      SAMPLER_DEVICES, SETTINGS, WORKER_KINDS, Setting,
                                      add_options, fanouts_check, list_of, validate)
from gnnrepro.config.machine import (check_placement, resolve_device, resolve_prefetch,
                                     resolve_threads, resolve_workers)
from gnnrepro.config.train_config import TrainConfig
from gnnrepro.config.bench_defaults import (DISK_TRAINING_DEFAULTS, STORAGE_DEFAULTS,
                                            DiskTrainingDefaults, StorageDefaults)

__all__ = ["DISK_TRAINING_DEFAULTS", "EVAL_METHODS", "FEATURE_SOURCES", "FEATURE_STORES",
           "PIPELINES", "SAMPLER_DEVICES", "SETTINGS", "STORAGE_DEFAULTS", "WORKER_KINDS",
           "DiskTrainingDefaults", "Setting", "StorageDefaults", "TrainConfig", "add_options",
           "check_placement", "resolve_device", "resolve_prefetch", "resolve_threads",
           "resolve_workers", "validate"]
