"""Accuracy models: what a design point's number formats do to the workload's outputs on its evaluation data.

A hardware model of its own kind, beside the cost models: ``(arch, mapping) -> accuracy metrics``. The family
table (``dse.registry``) says which model a family uses; ``dse.evaluate.PointEvaluator`` builds it from the graph
and ``workload.data``.

* ``fpga_accuracy``: fpga_dataflow points, through the bit-exact emulator of hls4ml's C simulation
  (``hls_emulator`` with ``ap_fixed``, ``hls_tables``, ``hls_softmax``) of the network ``hls_network`` derives
  from the design (the layer list, weights and per-layer types ``dse export`` writes).
* ``precision_accuracy``: points of templates with a ``precision`` parameter, through the numpy ONNX runner
  (``onnx_runner``) rounding every GEMM's operands to the format (``number_formats``).
* ``data``: the evaluation data file, loaded and checked, and the metrics both models report.
* ``hls4ml_auto``: hls4ml's own 'auto' precision inference read back per layer, the baseline the emulator is
  compared with.
"""
