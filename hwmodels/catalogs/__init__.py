"""Every number taken from outside, with its source: technology nodes, GPUs, FPGA parts, RDU sockets.

Catalogs import nothing of the project; every other room reads them."""
