"""The FPGA (hls4ml-style) hardware model: ``cost`` (engine resources and cycles mappers query), ``model``."""
