#!/usr/bin/env bash
# The NVIDIA check on a real GPU (written for an offline H200 machine: Python 3.12 with CUDA
# PyTorch, nvidia-ml-py and psutil, but no pydantic, textual or plotext, and no network).
# One run takes about 2 minutes with the defaults (well inside 5).
#
#   tools/device_check.sh OUT_DIR            (or: OUT_DIR=... tools/device_check.sh)
#   PACK=1 tools/device_check.sh "$OUT"      (everything in one results.tgz + summary.txt,
#                                             for a runner that brings back few files)
#
# Variables: PYTHON (python3), CHECK_S (10: seconds of each check --json), WARM_S (20: seconds
# a training job runs before its check), LOAD_WARM_S (3), WHL (.whl: the wheel folder),
# TRAIN_JOB (tools/gpu_train_job.py), PACK (0).
#
# What it runs, every result written into OUT_DIR (summary.txt says what passed):
#   (a) gpusat-tui check --json --duration CHECK_S --record beside
#       nvidia-smi --query-gpu=... --format=csv -l 1 over the same seconds, under a steady
#       bf16 matmul load (tools/gpu_burn.py); tools/device_compare.py figures compares util,
#       memory, power, cap and temperature and asserts the NVML path was used;
#   (b) tools/gpu_train_job.py --mode input-bound, then --mode compute-bound (under
#       `gpusat-tui run` when this checkout has it), with check --json during each: expected
#       starving:input-bound, then saturated, with SM activity (GPM) in why where GPM answers.
#       Skipped, saying so, when tools/gpu_train_job.py is not in this checkout;
#   (c) the per-poll NVML cost (benchmarks/bench_nvml.py --real) and the monitor's own CPU
#       (from the recording of (a)).
#
# Offline install: the machine lacks pydantic and its needs. Fetch their wheels on a machine
# with network, into .whl/ of this checkout (listed in .git/info/exclude: `echo /.whl/ >>
# .git/info/exclude`), matching the venv's versions:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
#     typing-inspection==0.4.5 typing-extensions==4.16.0
# The project itself runs from this checkout (PYTHONPATH), so it needs no wheel; textual and
# plotext are not needed (check never imports them).
set -u

usage() {
    echo "usage: tools/device_check.sh OUT_DIR   (or OUT_DIR=... in the environment)" >&2
    exit 2
}
case "${1:-}" in
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
esac
[ "$#" -le 1 ] || usage
OUT_DIR=${1:-${OUT_DIR:-}}
[ -n "$OUT_DIR" ] || usage
mkdir -p "$OUT_DIR" || { echo "device_check: cannot create $OUT_DIR" >&2; exit 2; }
OUT_DIR=$(cd "$OUT_DIR" && pwd)

REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 2
PY=${PYTHON:-python3}
CHECK_S=${CHECK_S:-10}
WARM_S=${WARM_S:-20}
WHL=${WHL:-.whl}
LOG="$OUT_DIR/log.txt"
SUMMARY="$OUT_DIR/summary.txt"
: >"$LOG"
: >"$SUMMARY"
FAILED=0

say() { echo "$*" | tee -a "$SUMMARY"; }
log() { echo "== $*" >>"$LOG"; }
result() {  # result STEP RC DETAIL: 0 passed, 1 failed, anything else could not run
    case "$2" in
        0) say "PASS  $1${3:+: $3}" ;;
        skip) say "SKIP  $1${3:+: $3}" ;;
        *) say "FAIL  $1${3:+: $3}"; FAILED=1 ;;
    esac
}

# --- set-up ----------------------------------------------------------------------------------
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c "import pydantic" 2>>"$LOG"; then
    if ls "$WHL"/*.whl >/dev/null 2>&1; then
        log "installing wheels from $WHL"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/gpusat-site "$WHL"/*.whl >>"$LOG" 2>&1
        export PYTHONPATH="$REPO:/tmp/gpusat-site"
    fi
    if ! "$PY" -c "import pydantic" 2>>"$LOG"; then
        say "SETUP pydantic is not importable and no wheels in $WHL (see the header of $0)"
        exit 3
    fi
fi
GT=("$PY" -m gpusat_tui)
{ "$PY" --version; "${GT[@]}" --version; command -v nvidia-smi; } >>"$LOG" 2>&1
if ! command -v nvidia-smi >/dev/null 2>&1; then
    say "SETUP nvidia-smi not found: not an NVIDIA machine"
    exit 3
fi
nvidia-smi -L >>"$LOG" 2>&1

# --- (a) check --json beside nvidia-smi, under a steady load ---------------------------------
SMI_FIELDS=index,utilization.gpu,memory.used,memory.total,power.draw,enforced.power.limit
SMI_FIELDS=$SMI_FIELDS,temperature.gpu
REASONS=clocks_event_reasons.active
if ! nvidia-smi --query-gpu="$SMI_FIELDS,$REASONS" --format=csv >/dev/null 2>&1; then
    REASONS=clocks_throttle_reasons.active
    nvidia-smi --query-gpu="$SMI_FIELDS,$REASONS" --format=csv >/dev/null 2>&1 || REASONS=""
fi
log "(a) load + nvidia-smi -l 1 + check --json for ${CHECK_S}s (reasons field: ${REASONS:-none})"
"$PY" tools/gpu_burn.py $((CHECK_S + 10)) >>"$LOG" 2>&1 &
BURN=$!
sleep "${LOAD_WARM_S:-3}"
nvidia-smi --query-gpu="$SMI_FIELDS${REASONS:+,$REASONS}" --format=csv -l 1 \
    >"$OUT_DIR/smi_load.csv" 2>>"$LOG" &
SMI=$!
timeout $((CHECK_S + 30)) "${GT[@]}" check --json --duration "$CHECK_S" \
    --record "$OUT_DIR/record_load.jsonl" >"$OUT_DIR/check_load.json" 2>>"$LOG"
CHECK_RC=$?
kill "$SMI" 2>/dev/null
wait "$SMI" 2>/dev/null
wait "$BURN"
BURN_RC=$?
[ "$BURN_RC" -eq 0 ] || say "NOTE  the load did not run (gpu_burn exit $BURN_RC): figures are idle"
if [ "$CHECK_RC" -ne 0 ]; then
    result "(a) check --json" "$CHECK_RC" "exit $CHECK_RC (see log.txt)"
else
    "$PY" tools/device_compare.py figures "$OUT_DIR/check_load.json" "$OUT_DIR/smi_load.csv" \
        --record "$OUT_DIR/record_load.jsonl" >"$OUT_DIR/compare_load.json" 2>>"$LOG"
    result "(a) check --json vs nvidia-smi, NVML path" $? "compare_load.json"
fi
GPM=""
grep -q '"sm_active_pct"' "$OUT_DIR/check_load.json" 2>/dev/null && GPM="--gpm"
[ -n "$GPM" ] || say "NOTE  no GPM figures in check --json (not supported, or refused here)"

# --- (b) a real training job, input-bound then compute-bound ---------------------------------
JOB=${TRAIN_JOB:-tools/gpu_train_job.py}
RUN=()
"${GT[@]}" run --help >/dev/null 2>&1 && RUN=("${GT[@]}" run --)
for MODE in input-bound compute-bound; do
    case "$MODE" in
        input-bound) EXPECT=starving:input-bound ;;
        *) EXPECT=saturated ;;
    esac
    if [ ! -f "$JOB" ]; then
        result "(b) $MODE" skip "$JOB is not in this checkout (written on the probe branch)"
        continue
    fi
    log "(b) $MODE: ${RUN[*]:-(no gpusat-tui run)} $PY $JOB --mode $MODE"
    setsid "${RUN[@]}" "$PY" "$JOB" --mode "$MODE" >>"$LOG" 2>&1 &
    JOB_PID=$!
    sleep "$WARM_S"
    if ! kill -0 "$JOB_PID" 2>/dev/null; then
        wait "$JOB_PID"
        result "(b) $MODE" 1 "the job exited early (status $?; see log.txt)"
        continue
    fi
    timeout $((CHECK_S + 30)) "${GT[@]}" check --json --duration "$CHECK_S" \
        >"$OUT_DIR/check_$MODE.json" 2>>"$LOG"
    CHECK_RC=$?
    kill -TERM -- -"$JOB_PID" 2>/dev/null
    sleep 2
    kill -KILL -- -"$JOB_PID" 2>/dev/null
    wait "$JOB_PID" 2>/dev/null
    if [ "$CHECK_RC" -ne 0 ]; then
        result "(b) $MODE check --json" "$CHECK_RC" "exit $CHECK_RC"
        continue
    fi
    "$PY" tools/device_compare.py verdict "$OUT_DIR/check_$MODE.json" --expect "$EXPECT" \
        $GPM >"$OUT_DIR/verdict_$MODE.json" 2>>"$LOG"
    result "(b) $MODE is $EXPECT${GPM:+ with GPM in why}" $? "verdict_$MODE.json"
done

# --- (c) the NVML reader's per-poll cost and the monitor's CPU -------------------------------
log "(c) bench_nvml --real"
timeout 60 "$PY" benchmarks/bench_nvml.py --real --polls 60 --json \
    >"$OUT_DIR/nvml_cost.json" 2>>"$LOG"
result "(c) per-poll NVML cost" $? "nvml_cost.json"
"$PY" - "$OUT_DIR" <<'EOF' | tee -a "$SUMMARY"
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
def load(name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError):
        return {}
cost, cmp = load("nvml_cost.json"), load("compare_load.json")
print(f"      NVML per poll: median {cost.get('poll_ms_median')} ms, CPU "
      f"{cost.get('poll_cpu_ms_mean')} ms, {cost.get('cards')} cards, GPM on "
      f"{cost.get('gpm_cards')}; with the process list {cost.get('poll_with_processes_ms_median')} ms")
print(f"      monitor CPU during (a): mean {cmp.get('monitor_cpu_pct_mean')} %, "
      f"max {cmp.get('monitor_cpu_pct_max')} % of one core; GPM fields {cmp.get('gpm_fields')}")
EOF

if [ "${PACK:-0}" = 1 ]; then
    # GNU tar exits 1 when a file changed while it was read (a child's last lines landing in
    # log.txt): the archive is still whole, so that is no reason to keep the loose files.
    (cd "$OUT_DIR" && { tar czf results.tgz --exclude results.tgz --exclude summary.txt . \
        || [ $? -eq 1 ]; } \
        && find . -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt -delete)
fi
[ "$FAILED" -eq 0 ] && say "device check: all steps passed" || say "device check: FAILED steps above"
exit "$FAILED"
