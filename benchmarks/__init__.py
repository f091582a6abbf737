"""`python -m benchmarks`: our BERT side by side with Hugging Face `transformers`, in one run.

    python -m benchmarks [--quick] [--json PATH] [--markdown PATH] [--threads N] [--only ROWS]
                         [--clock wall|cpu] [--tiny] [--profile]

Both libraries get the same weights (ours are loaded from theirs with `hf_names.hf_to_ours`, or
theirs from `bert.export_hf` of ours), the same inputs, `torch.set_num_threads(N)` and
`torch.inference_mode()` for inference. Each row warms both up, then alternates them
(ours, theirs / theirs, ours / ...) for several repeats: on a shared machine the load changes
from second to second, and the ratio of two timings taken back to back is far steadier than
either timing. The table shows the median time of each and the median of the paired ratios
ours/theirs, which is what the targets are about.

Rows (`--only` takes comma-separated prefixes of these names, e.g. `--only infer-minilm,pretrain`):

    infer-{minilm,base}-{attn,fast}-{32,128}   batch 1; attn = with attentions + hidden states
                                               (transformers eager), fast = without (SDPA)
    finetune-step, finetune-throughput, finetune-gflops     32 x 64, sequence classification
    pretrain-step, pretrain-throughput, pretrain-gflops     16 x 128, MLM 15 % + NSP
    tokenize                                   10,000 lines: ours vs `tokenizers` (Rust), + id parity
    analysis-64, bertviz-head-64, bertviz-model-64          the app's work at 64 tokens
    startup-health, startup-home, mem-app      `streamlit run` cold start (vs a bare Streamlit app);
                                               `--only startup,mem-app` runs just these (about 30 s)
    mem-load, mem-finetune, mem-pretrain       peak RSS (VmHWM) in subprocesses, one per library;
                                               the peak is reset between stages (clear_refs)
    patch-all-sites, probe-run                 activation patching of one pair at every site, and a
                                               probe run on one thread, against their targets (not --tiny)
    class-pairs-100                            a full class board's minimal pairs scored (not --tiny)
    dictionary-run                             the Features page's default dictionary and its quality on
                                               one thread, the control beside it (not --tiny)
    dictionary-purity                          their part-of-speech purity: the trained model's minus the
                                               control's, target >= 0.2 (not --tiny)
    dictionary-2048, dictionary-splice         the built-in dictionary's recipe (2,048 features) on one
                                               thread, and its everyday-cloze splice cost (not --tiny)
    feature-card, feature-steer                one feature card, one steering, of that dictionary (not --tiny)
    save-attention-file, save-at-once          a saved view's file (the Attention map with every head) against
                                               its 5 MB budget; 10 sessions saving it at once (save_views.py)

fp32 against bf16 (the training steps, the Fine-tuning page's runs, the class rows and the
causal-evidence rows, side by side with their ratio and each row's target) is `python -m
benchmarks.precision` (benchmarks/precision.py).

Every timing is also taken in CPU time of the process (`--clock cpu` makes that the figure the
rows and targets use; with `--threads 1` it leaves out the time spent waiting for a core on a
loaded machine). `--profile` prints torch profiler tables (self CPU time per op) of each row run.

The package, by concern:

    timing.py      paired back-to-back samples, medians, the matmul floor and peak, the profiler
    report.py      the row names, one result row and its target, the printed and Markdown tables
    models.py      ours and theirs on the same weights: transformers (imported inside functions,
                   offline), the shared set-up, inputs, training steps
    model_rows.py  inference, fine-tuning, pre-training and tokenizer rows
    app_rows.py    the app's analysis, bertviz HTML sizes, `streamlit run` cold start (Chromium)
    memory.py      peak RSS in worker subprocesses
    causes_rows.py activation patching, a probe run and a board's pairs on minilm-l6, against targets
    features_rows.py the Features page's dictionaries on minilm-l6, against their targets
    save_views.py  saved views: each page kind's file size and build time, a class saving at once
    precision.py   fp32 against bf16: training steps, the pages' runs and analyses, with their ratio
    bench.py       `Bench`, the state of one run: selection, rows measured and skipped
    runner.py      one run: the machine, the sections in order
    cli.py         the options; __main__.py runs it

Nothing in bert/ imports this package: it is where `transformers`, app/, Streamlit and the
browser meet our library. FLOPs are counted analytically: see `benchmarks/flops.py`.
"""
