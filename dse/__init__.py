"""dse: design-space exploration of dataflow accelerators and FPGAs.

The spine: spec -> graph -> arch -> mapping -> metrics -> store -> report.
Importing this package stays light; the CLI and explorer import what they need.
"""

__version__ = "0.1.0"
