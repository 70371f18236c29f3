#!/usr/bin/env bash
# The README's GPU figures: one CUDA machine, one pass, every result a file under OUTDIR.
#
#     benchmarks/gpu.sh OUTDIR   (PYTHON=python3 by default; SMOKE=1 shrinks every size;
#                                 STEPS=seeds,profile,feedback,loco by default: the steps to run)
#
# 1. bench_seeds.py on the GPU and on the machine's CPUs, same sizes: what CUDA buys a CNN trial.
#    profile: one cnn_small fit of the same bundles on the GPU (3 epochs) under cProfile, the
#    functions that took its time (profile.txt): what bounds a trial once the convolutions are on a GPU.
# 2. bench_feedback_loop.py: the copies an engineer-confirmed bundle weighs (--weights) against the
#    number of feedback bundles, cnn_small (seeds=3) and logreg, fold 0.
# 3. bench_generalise.py leave-one-cause-out with twice the 2-core runs' training bundles and
#    a 200-bundle test set per fold: does more simulated data teach the held-out causes?
# Each step runs under its own time limit and writes JSON lines as it goes, so a step cut short still
# leaves what it measured.
set -u
out=${1:?usage: benchmarks/gpu.sh OUTDIR}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
data=${DATA:-var/bench-generalise}
if [ "${SMOKE:-0}" = 1 ]; then
    seeds="--train 16 --val 8 --epochs 1 --seeds 2" fb="--feedback 0,4 --weights 3,10 --train 24 --test 8 --val 8 --epochs 1 --cnn-seeds 1"
    loco="--train 24 --test 8 --val 8 --epochs 1 --cnn-seeds 1" t=(120 300 300) prof="--train 16 --val 8 --epochs 1"
else
    seeds="--train 200 --val 60 --epochs 4 --seeds 4" fb="--feedback 0,60 --weights 3,10,30 --epochs 30 --cnn-seeds 3"
    loco="--train 800 --test 200 --epochs 30 --cnn-seeds 3" t=(120 210 240) prof="--train 200 --val 60 --epochs 3"
fi

{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1; nproc
  $py -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"; } > "$out/env.txt" 2>&1
cat "$out/env.txt"

steps=,${STEPS:-seeds,profile,feedback,loco},
has_cuda() { $py -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; }
if [[ $steps == *,seeds,* ]]; then
    for dev in cuda cpu; do
        if [ $dev = cuda ] && ! has_cuda; then continue; fi
        timeout "${t[0]}" $py benchmarks/bench_seeds.py $seeds --device $dev --data var/bench-seeds > "$out/seeds-$dev.json" 2>"$out/seeds-$dev.err"
        echo "seeds $dev rc=$?"; cat "$out/seeds-$dev.json"
    done
fi
if [[ $steps == *,profile,* ]] && has_cuda; then
    # --seeds 1: one fit of a single network, then the same as a stack of one (two fits in all).
    timeout "${t[0]}" $py -m cProfile -o "$out/profile.prof" benchmarks/bench_seeds.py $prof --seeds 1 --device cuda \
        --data var/bench-seeds > "$out/profile.json" 2>"$out/profile.err"
    echo "profile rc=$?"
    $py -c "import pstats, sys; s = pstats.Stats(sys.argv[1]); s.sort_stats('cumulative').print_stats(45); s.sort_stats('tottime').print_stats(25)" \
        "$out/profile.prof" > "$out/profile.txt" 2>&1
    head -n 80 "$out/profile.txt"
fi
if [[ $steps == *,feedback,* ]]; then
    timeout "${t[1]}" $py benchmarks/bench_feedback_loop.py --models cnn_small,logreg $fb --data "$data" > "$out/feedback.jsonl" 2>"$out/feedback.err"
    echo "feedback rc=$?"; cat "$out/feedback.jsonl"
fi
if [[ $steps == *,loco,* ]]; then
    timeout "${t[2]}" $py benchmarks/bench_generalise.py --models cnn_small,rules,logreg --folds 0,1 --perturb "" $loco \
        --combine "cnn_small+rules*0.5,logreg+rules*0.5" --data "$data" --markdown > "$out/loco.jsonl" 2>"$out/loco.err"
    echo "loco rc=$?"; cat "$out/loco.jsonl"
fi
tail -n 3 "$out"/*.err
