#!/usr/bin/env bash
# The GPU check, for a machine with a CUDA GPU:
#   1. the parity tests (tests/test_parity.py) on the GPU: TF32 off, tolerances 1e-3;
#   2. a short pre-training run (STEPS steps, default 50) on cuda and on the CPU: tokens/s from its log;
#   3. a short fine-tuning run of all-minilm-l6-v2 on synthetic labelled texts, on cuda and on the CPU;
# then a small table. Everything is written to a temporary folder, removed at the end.
#
#   scripts/device_check.sh                  # PYTHON=... picks the interpreter (default .venv/bin/python)
#   STEPS=100 CPU=0 scripts/device_check.sh  # CPU=0: the GPU runs only
#
# Exit status: 0 all ran and passed; 1 something failed; 3 no CUDA GPU here, so nothing was checked.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "device_check: this machine has no CUDA GPU (torch.cuda.is_available() is False in $PY):" >&2
    echo "nothing was checked. Run it where nvidia-smi shows a GPU and torch is a CUDA build." >&2
    exit 3
fi

STEPS=${STEPS:-50}
DEVICES="cuda"
if [ "${CPU:-1}" != "0" ]; then DEVICES="cuda cpu"; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()

"$PY" -c "import torch; print('torch', torch.__version__, '| CUDA', torch.version.cuda, '|', torch.cuda.get_device_name(0))"

echo "== 1. parity tests on cuda (TF32 off, tolerance 1e-3)"
if ! BERT_EXPLORER_TEST_DEVICE=cuda "$PY" -m pytest -q -p no:cacheprovider tests/test_parity.py; then
    failed+=("parity tests on cuda")
fi

# The text to pre-train on: the project's own documentation. The labelled texts: "good" or "bad"
# among filler words (an easy task: the accuracy only shows that learning happened).
cat README.md docs/*.md >"$work/text.txt"
"$PY" - "$work/labelled.csv" <<'EOF'
import csv, random, sys
r = random.Random(0)
filler = "the film was a very plot actor movie really quite and it story".split()
with open(sys.argv[1], "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["text", "label"])
    for i in range(1250):
        words = [r.choice(filler) for _ in range(r.randint(6, 40))]
        words.insert(r.randrange(len(words) + 1), "good" if i % 2 else "bad")
        w.writerow([" ".join(words), "pos" if i % 2 else "neg"])
EOF

for device in $DEVICES; do
    echo "== 2. pre-training, $STEPS steps on $device"
    if ! "$PY" -m bert pretrain --out "$work/pt-$device" --init scratch --text-file "$work/text.txt" \
        --layers 4 --hidden 256 --heads 4 --max-seq-length 128 --batch-size 32 --steps "$STEPS" \
        --warmup-steps 10 --log-every 10 --eval-every "$STEPS" --save-every 1000000 --eval-sequences 64 \
        --no-cache-tokens --no-resume --device "$device" >"$work/pt-$device.jsonl"; then
        failed+=("pre-training on $device")
    fi
    echo "== 3. fine-tuning all-minilm-l6-v2 on $device"
    if ! "$PY" -m bert finetune --data "$work/labelled.csv" --checkpoint all-minilm-l6-v2 --out "$work/ft-$device" \
        --epochs 1 --batch-size 32 --max-length 64 --device "$device" >"$work/ft-$device.jsonl"; then
        failed+=("fine-tuning on $device")
    fi
done

echo
"$PY" - "$work" $DEVICES <<'EOF' || failed+=("the table (a run's log or saved model is wrong)")
import json, sys
from pathlib import Path
from safetensors import safe_open

work, devices = Path(sys.argv[1]), sys.argv[2:]
ok = True

def events(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")] if path.is_file() else []

def dtypes(folder):
    path = folder / "model.safetensors"
    if not path.is_file():
        return "missing"
    with safe_open(str(path), "pt") as f:
        return ",".join(sorted({str(f.get_slice(k).get_dtype()) for k in f.keys()}))

rows = [("device", "pretrain tokens/s", "MLM loss first -> last", "finetune examples/s", "accuracy", "saved dtypes")]
for d in devices:
    pt, ft = events(work / f"pt-{d}.jsonl"), events(work / f"ft-{d}.jsonl")
    train = [e for e in pt if e.get("event") == "train"]
    speed = train[1:] or train  # the first window includes warm-up (and CUDA's start)
    tps = sum(e["tokens_per_s"] for e in speed) / len(speed) if speed else float("nan")
    loss = f"{train[0]['mlm_loss']:.2f} -> {train[-1]['mlm_loss']:.2f}" if train else "-"
    done = [e for e in ft if "accuracy" in e and "examples_per_s" in e and "out" in e]
    eps = f"{done[-1]['examples_per_s']:.1f}" if done else "-"
    acc = f"{done[-1]['accuracy']:.3f}" if done else "-"
    saved = f"{dtypes(work / f'pt-{d}' / 'final')} / {dtypes(work / f'ft-{d}')}"
    ok &= bool(train) and bool(done) and saved == "F32 / F32"
    rows.append((d, f"{tps:,.0f}", loss, eps, acc, saved))
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for r in rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
sys.exit(0 if ok else 1)
EOF

echo
if [ ${#failed[@]} -gt 0 ]; then
    printf 'device_check: FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "device_check: all passed"
