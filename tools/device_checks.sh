#!/usr/bin/env bash
# The checks that need a lent CUDA GPU, in one run of under 300 s (issue 30 item 6, GPU board power):
#   A. the systolic array path with its GEMM cost kernel on torch / CuPy (benchmarks/array_eval.py --backend,
#      ResNet-50, 1M grid points) and the kernel alone (benchmarks/array_kernel.py, 1M designs x 54 GEMMs);
#   B. board power of GEMMs per precision and of a DRAM copy (tools/gpu_power_measure.py) -> gpu_power_<gpu>.csv.
# Run from the repository root as `bash tools/device_checks.sh`; it writes under $OUT (default /tmp/device_out).
# Pure-python wheels the machine lacks travel in .whl/ (not committed): ortools, protobuf, absl-py,
# immutabledict (the mappers import ortools) and array-api-compat. Each part has its own timeout; a part that
# fails or times out is reported and the next one runs.
set -u
OUT=${OUT:-/tmp/device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
START=$(date +%s)
declare -a SUMMARY=()

part() {  # part NAME SECONDS COMMAND...: run with a timeout, log to $OUT/NAME.log, record the exit status
    local name=$1 limit=$2
    shift 2
    local t0=$(date +%s)
    echo "=== $name (timeout ${limit}s): $*"
    timeout --kill-after=5 "$limit" "$@" > >(tee "$OUT/$name.log") 2>&1
    local rc=$?
    SUMMARY+=("$(printf '%-16s rc=%-3s %4ss' "$name" "$rc" "$(( $(date +%s) - t0 ))")")
    return 0
}

if ls .whl/*.whl >/dev/null 2>&1; then
    part wheels 20 python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
else
    echo "no .whl/ folder: ortools and array-api-compat must already be installed"
fi
export PYTHONPATH=/tmp/site:$PWD
if ls .whl/*.whl >/dev/null 2>&1 && ! python3 -c "import ortools.sat.python.cp_model, array_api_compat" 2>/dev/null; then
    echo "pip did not install the wheels: unpacking them into /tmp/site (a wheel is a zip of its files)"
    python3 -c "import glob, zipfile; [zipfile.ZipFile(w).extractall('/tmp/site') for w in glob.glob('.whl/*.whl')]"
fi

part env 10 bash -c 'nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,memory.total --format=csv;
  python3 -c "import sys, numpy, torch; print(sys.version.split()[0], \"numpy\", numpy.__version__, \"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.get_device_name(0))";
  python3 -c "import cupy; print(\"cupy\", cupy.__version__)";
  python3 -c "import array_api_compat, ortools; print(\"array_api_compat\", array_api_compat.__version__, \"ortools\", ortools.__version__)";
  python3 -c "import pynvml; print(\"pynvml ok\")"'

# B first, on a cool and idle board: 2 copies + 4 precisions x 7 GEMM shapes, 2 s each, stops starting kernels at 85 s
part power 110 python3 tools/gpu_power_measure.py --out "$OUT/gpu_power.csv" --seconds 2 --budget-s 85
if [ -s "$OUT/gpu_power.csv" ]; then  # name it by the GPU's catalog key, as hwmodels/data expects
    gpu=$(python3 -c "import csv, sys; print(next(csv.DictReader(open(sys.argv[1])))['gpu'])" "$OUT/gpu_power.csv" 2>/dev/null)
    [ -n "$gpu" ] && mv "$OUT/gpu_power.csv" "$OUT/gpu_power_${gpu%_sxm}.csv"
fi

# A: whole points (numpy, then torch on the GPU, same 1M points, every metric compared), chunk 262,144 designs
part eval_torch 65 python3 benchmarks/array_eval.py --points 1000000 --scalar-points 50 --chunk 262144 \
    --backend torch --device cuda
part eval_cupy 30 python3 benchmarks/array_eval.py --points 200000 --scalar-points 20 --chunk 200000 \
    --backend cupy --device 0
# A: the kernel alone, 1M designs x ResNet-50's 54 GEMMs, 262,144 designs a call; numpy on 65,536 (os: 32,768) designs
part kernel_torch 20 python3 benchmarks/array_kernel.py --backend torch --device cuda --designs 1000000 --chunk 262144
part kernel_torch_os 20 python3 benchmarks/array_kernel.py --backend torch --device cuda --designs 1000000 \
    --chunk 262144 --numpy-designs 32768 --dataflow os
part kernel_cupy 15 python3 benchmarks/array_kernel.py --backend cupy --device 0 --designs 1000000 --chunk 262144

{
    echo "=== summary ($(( $(date +%s) - START )) s in all)"
    printf '%s\n' "${SUMMARY[@]}"
    for name in eval_torch eval_cupy; do
        grep -E "^(ResNet|array path|scalar path|torch|cupy|ratio)" "$OUT/$name.log" 2>/dev/null | sed "s/^/$name: /"
    done
    for name in kernel_torch kernel_torch_os kernel_cupy; do
        grep -E "^(ResNet|numpy|torch|cupy|speed-up)" "$OUT/$name.log" 2>/dev/null | sed "s/^/$name: /"
    done
    grep -E "^  (copy|gemm)_|rows ->|skipped" "$OUT/power.log" 2>/dev/null | sed "s/^/power: /"
    ls -la "$OUT"
} | tee "$OUT/summary.txt"
