"""dse: design-space exploration of dataflow accelerators and FPGAs.

The spine: spec -> graph -> arch -> mapping -> metrics -> store -> report.

Importing this package stays light (``dse --help`` answers without numpy or pandas): the Python API's
names (``dse.load_spec``, ``dse.explore_spec``, ``dse.evaluate_design``, ``dse.figures``, ...) live in
``dse.api`` and are loaded on first use, by name, the way the command line loads a command's module.
"""

import importlib
from typing import Any

__version__ = "0.1.0"

API_NAMES = (
    "DesignResult",
    "RunResult",
    "compare_gpus",
    "evaluate_design",
    "explore_spec",
    "figures",
    "load_run",
    "load_spec",
    "metric_units",
    "spec_from_dict",
    "workload_graph",
)
__all__ = ["__version__", *API_NAMES]


def __getattr__(name: str) -> Any:
    """``dse.explore`` and the other API names, loaded from ``dse.api`` the first time one is used."""
    if name in API_NAMES:
        return getattr(importlib.import_module("dse.api"), name)
    raise AttributeError(f"module 'dse' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API_NAMES])
