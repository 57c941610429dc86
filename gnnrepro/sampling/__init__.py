"""Neighbour samplers (fused C++ op and pure-torch reference) and the Block/MiniBatch types."""
from gnnrepro.sampling.block import Block, MiniBatch, TypedBlock
from gnnrepro.sampling.fused import FusedSampler
from gnnrepro.sampling.reference import ReferenceSampler

__all__ = ["Block", "TypedBlock", "MiniBatch", "FusedSampler", "ReferenceSampler"]
