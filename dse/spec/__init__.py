"""The YAML spec: what to explore, checked up front with one precise message per mistake.

``schema`` holds the pydantic models, ``load`` turns YAML text into a ``Spec``, ``messages``
words every mistake as ``<file>:<line>: <field.path>: <what was wrong>; <what is allowed>``
and ``checks`` validates what the schema cannot say. The names callers use are re-exported
here; new code may import them from their submodule.
"""

from __future__ import annotations

from dse.spec.load import load_spec, parse_spec
from dse.spec.messages import Loc, SpecError
from dse.spec.schema import (
    DEFAULT_OBJECTIVES,
    FINGERPRINT_VERSION,
    MODEL_FILE_SUFFIXES,
    ONNX_MAX_DETECTIONS,
    ONNX_OPTIONS,
    ONNX_SYMBOLIC_DIMS,
    Bound,
    Search,
    Spec,
    TemplateSpec,
    Workload,
)

__all__ = [
    "DEFAULT_OBJECTIVES",
    "FINGERPRINT_VERSION",
    "MODEL_FILE_SUFFIXES",
    "ONNX_MAX_DETECTIONS",
    "ONNX_OPTIONS",
    "ONNX_SYMBOLIC_DIMS",
    "Bound",
    "Loc",
    "Search",
    "Spec",
    "SpecError",
    "TemplateSpec",
    "Workload",
    "load_spec",
    "parse_spec",
]
