"""Shared fixtures and the suite's two splits: unit vs integration, and the default run vs ``slow``.

unit vs integration is a marker, not a folder: every module below ``INTEGRATION_MODULES`` runs a whole
pipeline (the CLI, ``explore``, a subprocess, an external tool such as SCALE-Sim, g++ or Chromium, a
surrogate training); every other module checks one piece (a template, a mapper, a model, a parser) and
is marked ``unit``. A marker keeps the files where they are (other work edits them; helper modules such
as explore_fixtures.py must stay importable by pool workers and ``python -m``), and one table here says
which is which. ``pytest -m unit`` runs the fast pieces alone, ``pytest -m integration`` the pipelines.

``slow``: the default run (``make test``) deselects it; ``make test-all`` runs everything. The tests that
moved there re-check on a larger input or a longer run what a faster default test already checks; each
entry of ``SLOW_TESTS`` says which.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dse import zoo
from dse.graph import Graph

ROOT = Path(__file__).resolve().parent.parent
DIGITS_TRAINER = ROOT / "tools" / "train_digits.py"
DIGITS_FILES = ("digits_mlp.onnx", "digits_val.npz", "digits_all.npz")

INTEGRATION_MODULES = frozenset(
    {
        "test_array_explore",
        "test_cli",
        "test_compare",
        "test_conformance",
        "test_describe",
        "test_docs",
        "test_docs_pages",
        "test_explore",
        "test_pooled_arrays",
        "test_export",
        "test_fault_injection",
        "test_faults",
        "test_fuzz_inputs",
        "test_fuzz_onnx",
        "test_gpu_measure",
        "test_hybrid",
        "test_import_real_models",
        "test_interrupt",
        "test_quant",
        "test_quant_precision",
        "test_rdu",
        "test_report_browser",
        "test_scalesim_calc",
        "test_scalesim_truth",
        "test_scalesim_validation",
        "test_schedule_cli",
        "test_silicon",
        "test_solver_limits",
        "test_sparsity_scalesim",
        "test_store",
        "test_surrogate",
        "test_surrogate_measured",
        "test_user_mode_batch",
        "test_user_mode_surrogate",
    }
)

# "module.py::test_name" (every parameter) or "module.py::test_name[id]" (one) -> why it runs only with
# -m slow, naming the default test that covers the same code.
SLOW_TESTS: dict[str, str] = {
    "test_gpu_calibration.py::test_fit_on_the_h100_graph_rows_is_not_worse_than_its_start": (
        "a full fit on the measured H100 graph rows (~4 s); test_fit_recovers_known_constants_from_synthetic_"
        "measurements runs the same fit and test_gpu_small_kernels.py its held-out check"
    ),
    "test_pooled_arrays.py::test_arrays_on_real_workers_store_the_in_process_frame[dask]": (
        "a Dask LocalCluster of two worker processes (~3 s); the default [local] case runs the same sub-batches "
        "on a spawn pool and test_arrays_on_a_named_executor_store_the_in_process_frame the merge and fallback"
    ),
    "test_column_sweep.py::test_the_two_paths_resume_each_other": (
        "three explorer runs that write their files and reports (~3 s); the default "
        "test_array_and_point_paths_store_the_same_points and the store's chunk tests cover the same code"
    ),
    "test_onnx_contrib.py::test_quantizers_keep_the_macs_and_label_precision": (
        "importing onnxruntime.quantization alone takes seconds; the default kernel tests cover the same "
        "converters (QGemm, MatMulNBits, DynamicQuantizeMatMul) on hand-built nodes checked against onnxruntime"
    ),
    "test_onnx_contrib.py::test_hugging_face_models_through_the_transformer_optimizer": (
        "torch exports of BERT and GPT-2 plus onnxruntime's optimizer and quantizers (~30 s); "
        "test_graph_optimizer_kernels_keep_the_macs runs onnxruntime's graph optimizer on a hand-built block"
    ),
    "test_onnx_contrib.py::test_a_thousand_node_decoder_imports_in_seconds": (
        "a timing (about 2 s on 2 loaded cores); test_genai_decoder_with_int4_weights_and_kv_cache imports the same "
        "layers"
    ),
    "test_onnx_qonnx.py::test_a_brevitas_export_imports_with_its_layer_precisions": (
        "a torch export through brevitas (skipped where brevitas is absent); "
        "test_quantizers_become_per_layer_precision "
        "imports a hand-built graph of the same form"
    ),
    "test_onnx_qonnx.py::test_brevitas_style_model_explores_and_exports": (
        "explore + hls4ml project export; test_fpga_mapper_takes_the_trained_weight_types checks the same types"
    ),
    "test_array_explore.py::test_explorer_streams_a_grid_to_the_array_evaluator_and_stores_what_evaluate_prints": (
        "two explore runs with files and reports: test_explorer_streams_a_grid_to_the_array_evaluator checks the "
        "array sweep's stored metrics in memory"
    ),
    "test_report_browser.py::test_a_million_point_report_opens_and_stays_under_25_mb": (
        "a million-point frame, its report and a headless Chromium opening it (about a minute on 2 loaded cores); "
        "test_report_scale.py::test_above_the_threshold_the_front_is_webgl_and_the_rest_a_density_image checks the "
        "same figures on 150 points with the threshold at 40"
    ),
    "test_fpga_arrays.py::test_array_evaluation_equals_the_scalar_path_on_ten_thousand_designs": (
        "10,000 random designs on each of two graphs through the scalar path (about 2 minutes on 2 loaded cores): "
        "test_array_evaluation_equals_the_scalar_path_on_random_designs checks the same code on 400 points"
    ),
    "test_gpu_arrays.py::test_array_evaluation_equals_the_scalar_path_on_ten_thousand_designs": (
        "10,000 random designs on a CNN, a one-layer BERT and ResNet-18 through the scalar path's tile searches "
        "(minutes): "
        "test_array_evaluation_equals_the_scalar_path_on_random_designs checks the same code on 40 points"
    ),
    "test_systolic_arrays.py::test_array_evaluation_equals_the_scalar_model_on_ten_thousand_designs": (
        "10,000 random designs over every axis with USER walks and CALC replays (minutes of the scalar path): "
        "test_array_evaluation_equals_the_scalar_model_on_random_designs checks the same code on 88 designs"
    ),
    "test_systolic_arrays.py::test_array_evaluation_equals_the_scalar_model_on_resnet50": (
        "ResNet-50 at 224x224, shared DRAM, every other axis: the default random-design test covers the same "
        "code on a small CNN"
    ),
    "test_torchvision_zoo.py::test_zoo_model_matches_torch": (
        "imports every stored torchvision export (about 190, up to 14,000 nodes, ~45 s on 2 cores); "
        "test_small_zoo_models_match_torch runs the same check on 7 small exports of both exporters and "
        "test_import_absent_data.py covers Shape/Size through absent data and the detection bounds on small graphs"
    ),
    "test_interrupt.py::test_signal_while_writing_outputs_leaves_no_partial_file[SIGINT]": (
        "the [SIGTERM] case runs the same cleanup (Terminated is a KeyboardInterrupt, so both signals unwind "
        "through the same finally blocks); the SIGINT exit code and message are checked by "
        "test_signal_during_sweep_keeps_points_and_resumes[SIGINT]; each case is a subprocess sweep"
    ),
    "test_interrupt.py::test_signal_during_export_leaves_no_partial_project[SIGINT]": (
        "the [SIGTERM] case runs the same export cleanup; each case is a subprocess sweep plus a g++ build"
    ),
    "test_interrupt.py::test_signal_during_sweep_keeps_points_and_resumes[SIGTERM]": (
        "SIGTERM unwinds as SIGINT does (Terminated is a KeyboardInterrupt): the [SIGINT] case checks the sweep's "
        "resume, the SIGTERM handler is checked by the writing-outputs and export [SIGTERM] cases"
    ),
    "test_surrogate_measured.py::test_cli_measured_then_train_and_eval": (
        "the three commands chained on wa-hls4ml rows (35 s of gradient boosting): the measured rows are checked "
        "by test_wa_hls4ml_rows_are_contract_rows_with_measured_truth, train/eval on the command line by "
        "test_surrogate.py::test_cli_dataset_train_eval"
    ),
    "test_surrogate_measured.py::test_dsp_zero_in_the_closed_form_stays_a_finite_prediction": (
        "a 20 s gradient-boosting fit on every measured row to check one edge (DSP-free designs); the contract "
        "surrogate on the same rows is fitted and scored by test_fpga_surrogate_held_out_by_network_is_reported_"
        "next_to_the_model"
    ),
    "test_fuzz_inputs.py::test_fuzz_yaml_bombs_and_deep_nesting": (
        "a 20 s fuzz campaign of hostile YAML; the spec loader's clear-error contract is fuzzed by default in "
        "test_fuzz_spec_documents"
    ),
    "test_search.py::test_optuna_samplers_same_seed_same_points[gp-6]": (
        "the Gaussian-process sampler fits a model per proposal (10 s for 6 points); same-seed determinism is "
        "checked by default for nsga2 and tpe, and the GP's objective scaling by "
        "test_gp_is_told_objectives_on_one_monotone_log_scale"
    ),
    "test_export.py::test_export_jet_mlp_with_csim": (
        "a second real hls4ml project with a g++ C-simulation build: "
        "test_quant.py::test_digits_explore_measures_accuracy_and_export_checks_it exports and C-simulates by default"
    ),
    "test_quant.py::test_emulator_is_bit_exact_against_hls4ml_csim[mlp_softmax_stable]": (
        "each case is a g++ build of hls4ml's C simulation; [conv_pool_w8_overrides] runs the same emulator "
        "against C-sim by default (the softmax tables themselves only here: CI runs the slow suite too)"
    ),
    "test_quant.py::test_emulator_is_bit_exact_against_hls4ml_csim[mlp_sigmoid_rnd_sat_stream]": (
        "each case is a g++ build of hls4ml's C simulation; [conv_pool_w8_overrides] runs by default and the "
        "fixed-point rounding/saturation modes are checked against exact arithmetic by "
        "test_fixed_point_modes_match_exact_arithmetic"
    ),
    "test_multicore.py::test_fusion_lowers_resnet18_dram_traffic": (
        "fusion on the whole ResNet-18 (6 s of CP-SAT); test_fused_bands_stay_on_chip_and_cut_dram_traffic checks "
        "the same rule on a small graph"
    ),
    "test_rdu_exact.py::test_plans_match_brute_force_on_random_graphs_and_chips": (
        "30 random chips against brute force; test_mapper_proves_brute_force_optimum_with_zero_tolerance and the "
        "threshold/knapsack enumeration test check the same optimality by default"
    ),
    "test_rdu_node.py::test_lower_bound_holds_on_random_graphs_and_chips": (
        "random chips and graphs; test_lower_bound_never_exceeds_the_brute_force_optimum checks the bound by default"
    ),
    "test_scalesim_validation.py::test_live_user_mode[ws-8-16]": (
        "a real SCALE-Sim USER-mode run; [os-16-8] runs SCALE-Sim live by default and every cached USER-mode "
        "layer is compared in test_scalesim_calc.py"
    ),
    "test_import_real_models.py::test_cnn_with_groupnorm_and_upsample[dynamo]": (
        "the dynamo exporter of the same model; the TorchScript export of it is imported by default"
    ),
    "test_import_real_models.py::test_mlp[dynamo]": (
        "the dynamo export of a plain MLP; the TorchScript export is imported by default, the dynamo exporter "
        "by test_transformer_encoder[dynamo] and the attention blocks"
    ),
    "test_import_real_models.py::test_hugging_face_models[gpt2-dynamo]": (
        "GPT-2 through the dynamo exporter; [gpt2-torchscript] imports the same model by default and the "
        "gpt2_block attention case covers the dynamo graph of its attention"
    ),
    "test_quant.py::test_emulator_is_bit_exact_against_hls4ml_csim[conv_pool_w8_overrides]": (
        "a g++ build of hls4ml's C simulation; test_digits_explore_measures_accuracy_and_export_checks_it builds "
        "the exported project and compares its C simulation with the emulator by default"
    ),
    "test_search.py::test_gp_is_told_objectives_on_one_monotone_log_scale": (
        "a GP fit per proposal (5 s); LogScale serves the GP sampler alone, so the GP path (this test and the "
        "[gp-6] determinism case) runs in the slow suite, which CI runs after make test"
    ),
    "test_faults.py::test_sigkill_of_explore_leaves_no_process_of_the_run[dask]": (
        "a local Dask cluster killed with its explorer: the worker plugin installs the same parent-death guard "
        "(dse.executors.exit_with_parent) that [local] checks by default"
    ),
    "test_systolic.py::test_more_bandwidth_is_never_slower[os-per_operand]": (
        "the same monotonicity walk as [ws-per_operand] and the three shared cases, which run by default"
    ),
    "test_systolic.py::test_more_bandwidth_is_never_slower[is-per_operand]": (
        "the same monotonicity walk as [ws-per_operand] and the three shared cases, which run by default"
    ),
    "test_explore.py::test_sigkill_mid_sweep_then_resume_loses_nothing_and_repeats_nothing": (
        "two subprocess sweeps with a spawn pool (10 s): resuming exactly the missing points after an interruption "
        "is checked by default by test_interrupt.py::test_signal_during_sweep_keeps_points_and_resumes[SIGINT], a "
        "store cut short by test_faults.py::test_recover_saves_readable_points_and_explore_evaluates_only_the_lost; "
        "the fault-injection suite (make test-faults, run by CI) resumes after 22 SIGKILLs at random moments"
    ),
    "test_explore.py::test_local_executor_survives_a_dying_worker": (
        "three spawn pools rebuilt around a worker that exits (9 s); the executor's per-item outcome capture runs by "
        "default in test_executors_capture_exceptions_per_item"
    ),
    "test_interrupt.py::test_signal_during_export_leaves_no_partial_project[SIGTERM]": (
        "a subprocess sweep plus a g++ build interrupted; the atomic project writer it relies on is checked by "
        "default by test_faults.py::test_disk_full_while_writing_outputs_leaves_every_file_whole and the export "
        "itself by test_quant.py::test_digits_explore_measures_accuracy_and_export_checks_it"
    ),
    "test_interrupt.py::test_signal_while_writing_outputs_leaves_no_partial_file[SIGTERM]": (
        "a subprocess sweep interrupted while it writes its outputs (9 s): the fault-injection suite (make "
        "test-faults, run by CI) SIGKILLs output-only runs on the local pool and Dask and checks every file whole, "
        "and test_faults.py::test_disk_full_while_writing_outputs_leaves_every_file_whole checks the atomic writers "
        "by default"
    ),
    "test_faults.py::test_sigkill_of_explore_leaves_no_process_of_the_run[local]": (
        "a subprocess sweep with a spawn pool killed (4 s): the fault-injection suite (make test-faults, run by CI) "
        "kills 22 runs at seeded random moments and checks after each that no process of the run is left"
    ),
    "test_import_real_models.py::test_transformer_encoder[dynamo]": (
        "the dynamo export of the encoder (6 s); [torchscript] imports the same model by default, and the dynamo "
        "exporter's attention graph is imported by default in test_attention_blocks[llama_block-dynamo]"
    ),
    "test_import_real_models.py::test_attention_blocks[gpt2_block-dynamo]": (
        "GPT-2's block through the dynamo exporter; [gpt2_block-torchscript] imports it by default and "
        "[llama_block-dynamo] the dynamo graph of a causal block"
    ),
    "test_scalesim_calc.py::test_every_calc_row_of_the_shared_reference_matches_exactly": (
        "replays every stored CALC row of the shared SCALE-Sim reference (5 s); test_scalesim_validation.py::"
        "test_live_calc_compute_exact_and_cycles_within_2_percent runs SCALE-Sim itself in CALC mode by default and "
        "checks the same model against it"
    ),
    "test_import_real_models.py::test_lstm_dynamo": (
        "the dynamo export of a 2-layer LSTM; test_lstm_torchscript imports the same recurrence by default"
    ),
    "test_import_real_models.py::test_local_response_norm_from_torch[dynamo]": (
        "the dynamo export of the LRN model; [torchscript] and test_lrn_op_alexnet_style import LRN by default"
    ),
    "test_import_real_models.py::test_attention_blocks[mha-dynamo]": (
        "nn.MultiheadAttention through the dynamo exporter; [mha-torchscript] imports it by default and "
        "[llama_block-dynamo] the dynamo exporter's attention graph"
    ),
    "test_ofmap_drain.py::test_drain_replay_matches_scalesim_write_buffer[shape0-ws-8-8-2048]": (
        "SCALE-Sim's write-buffer replay for one more ws shape; [shape3-ws-8-12-4096] and [shape6-ws-16-8-3000] run "
        "the ws drain by default"
    ),
    "test_ofmap_drain.py::test_drain_replay_matches_scalesim_write_buffer[shape5-os-12-8-1024]": (
        "SCALE-Sim's write-buffer replay for one more os shape; [shape1-os-8-8-2048] and [shape7-os-5-7-700] run "
        "the os drain by default"
    ),
    "test_user_mode_batch.py::test_filter_reads_identical_on_convolutions[0]": (
        "a second random seed of the same equality; [1] runs by default"
    ),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test unit or integration, and the tests of SLOW_TESTS slow (a stale entry is an error)."""
    seen: set[str] = set()
    modules: set[str] = set()
    for item in items:
        module = item.path.stem
        modules.add(module)
        item.add_marker(pytest.mark.integration if module in INTEGRATION_MODULES else pytest.mark.unit)
        base = item.originalname if isinstance(item, pytest.Function) else item.name
        for key in (f"{item.path.name}::{base}", f"{item.path.name}::{item.name}"):  # all parameters, or one
            if key in SLOW_TESTS:
                seen.add(key)
                item.add_marker(pytest.mark.slow)
    # A module named by node id (``tests/test_x.py::test_y``) is collected in part: its other entries are not stale.
    partial = {Path(arg.split("::")[0]).stem for arg in config.args if "::" in arg}
    stale = [key for key in SLOW_TESTS if key.split(".py::")[0] in modules - partial and key not in seen]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py SLOW_TESTS names tests that do not exist: {', '.join(stale)}")


@pytest.fixture(scope="session")
def zoo_graph() -> Callable[..., Graph]:
    """``zoo_graph(name, **options)``: a model-zoo workload graph built once per session (treat it as read-only)."""
    build = functools.cache(lambda name, options: zoo.build(name, **dict(options)))
    return lambda name, **options: build(name, tuple(sorted(options.items())))


@pytest.fixture(scope="session")
def digits_workloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the trained digits MLP and its data, written once per session by ``tools/train_digits.py``
    (the demo's trainer, run as ``make demo`` runs it); tests copy it where they add files of their own."""
    folder = tmp_path_factory.mktemp("digits_workloads")
    subprocess.run([sys.executable, str(DIGITS_TRAINER), str(folder)], check=True, capture_output=True)
    assert all((folder / name).is_file() for name in DIGITS_FILES)
    return folder
