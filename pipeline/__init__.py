"""Bundle -> tensors: safe reading, parsing, topology and tensorisation (shared/spec/architecture.md)."""

from pipeline.api import Parsed, check_path, load_bundle, parse_bundle
from pipeline.channels import KIND_CHANNELS, KIND_STATIC, LOG_SCALED
from pipeline.config import PipelineConfig
from pipeline.errors import (
    BundleError,
    CorruptArchive,
    CorruptMember,
    LimitExceeded,
    NoPerfData,
    NotABundle,
    SeveralClusters,
    UnsafeMember,
)
from pipeline.tensors import SCHEMA_VERSION, BundleTensors, KindTensors

__all__ = [
    "KIND_CHANNELS",
    "KIND_STATIC",
    "LOG_SCALED",
    "SCHEMA_VERSION",
    "BundleError",
    "BundleTensors",
    "CorruptArchive",
    "CorruptMember",
    "KindTensors",
    "LimitExceeded",
    "NoPerfData",
    "NotABundle",
    "Parsed",
    "PipelineConfig",
    "SeveralClusters",
    "UnsafeMember",
    "check_path",
    "load_bundle",
    "parse_bundle",
]
