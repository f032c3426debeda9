"""Command-line choices shared by the parsers (dse/cli.py) and the modules that run the commands.

Standard library only: `dse --help` builds every parser without loading the commands' modules.
"""

from __future__ import annotations

import os
from pathlib import Path

SCHEDULE_MAPPERS = ("cpsat", "greedy")  # the mappers `dse schedule` may run
EXPORT_BACKENDS = ("Vitis", "Vivado", "Catapult", "Quartus")  # hls4ml backends `dse export` writes for
MEASURED_SOURCE_KINDS = ("wa-hls4ml", "reports", "gpu-csv", "llmcompass")  # `dse surrogate measured KIND:PATH`


def scalesim_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dse/scalesim`` (``~/.cache/dse/scalesim``): shared by every dataset build."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dse" / "scalesim"
