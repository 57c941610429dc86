"""Feature extraction (stage 2): feature stores and the staging buffers rows are gathered into."""
from gnnrepro.features.staging import StagingRing, StagingSlot
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore, pin_in_place
from gnnrepro.features.disk import DiskFeatureStore
from gnnrepro.features.baseline_stores import LmdbFeatureStore, MmapFeatureStore
from gnnrepro.features.factory import FEATURE_STORES, open_feature_store

__all__ = ["FeatureStore", "InMemoryFeatureStore", "StagingRing", "StagingSlot", "pin_in_place",
           "DiskFeatureStore", "MmapFeatureStore", "LmdbFeatureStore", "FEATURE_STORES",
           "open_feature_store"]
