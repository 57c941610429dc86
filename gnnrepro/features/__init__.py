"""Feature extraction (stage 2): feature stores and the staging buffers rows are gathered into."""
from gnnrepro.features.staging import StagingRing, StagingSlot
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore
from gnnrepro.features.disk import DiskFeatureStore
from gnnrepro.features.baseline_stores import LmdbFeatureStore, MmapFeatureStore
from gnnrepro.features.factory import FEATURE_STORES, open_feature_store

__all__ = ["FEATURE_STORES", "DiskFeatureStore", "FeatureStore", "InMemoryFeatureStore",
           "LmdbFeatureStore", "MmapFeatureStore", "StagingRing", "StagingSlot",
           "open_feature_store"]
