"""Training: the one loop (train, train_epoch), its four-stage profiler, mini-batch evaluation,
its checkpoints (Checkpointing: resume bit for bit, clean stops), and the named pipelines
(train_pipeline) that the benchmarks and every data-parallel rank run."""
from gnnrepro.training.evaluate import accuracy, correct_in, count_correct
from gnnrepro.training.loop import (EpochStats, TrainResult, build_model, data_parallel, train,
                                    train_epoch, train_epochs)
from gnnrepro.training.pipelines import make_evaluator, make_loader, run_training, train_pipeline
from gnnrepro.training.profiler import StageTimer, reduce_stages
from gnnrepro.training.resume import Checkpointing, TrainingStopped

__all__ = ["Checkpointing", "EpochStats", "StageTimer", "TrainResult", "TrainingStopped",
           "accuracy", "build_model", "correct_in", "count_correct", "data_parallel",
           "make_evaluator", "make_loader", "reduce_stages", "run_training", "train",
           "train_epoch", "train_epochs", "train_pipeline"]
