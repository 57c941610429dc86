"""Feature extraction (stage 2): feature stores and the staging buffers rows are gathered into."""
from gnnrepro.features.staging import StagingRing, StagingSlot
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore, pin_in_place

__all__ = ["FeatureStore", "InMemoryFeatureStore", "StagingRing", "StagingSlot", "pin_in_place"]
