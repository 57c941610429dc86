"""Feature extraction (stage 2): feature stores and the staging buffers rows are gathered into."""
from gnnrepro.features.staging import StagingRing, StagingSlot
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore

__all__ = ["FeatureStore", "InMemoryFeatureStore", "StagingRing", "StagingSlot"]
