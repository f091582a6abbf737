"""Part-of-speech purity of a model's dictionaries beside their controls, like for like, layer by layer.

    PYTHONPATH=. python scripts/dictionary_controls.py --work runs/dictionary-controls --builtin --write
    PYTHONPATH=. python scripts/dictionary_controls.py --work runs/dictionary-sweep --layers 1 2 3 4 5 \\
        --features 1024 --steps 200 --sentences 1500

At every layer of `--layers`, on one torch thread, the same recipe (TopK, `--features` features,
`--k` active a word piece, `--steps` steps on `--sentences` held-in sentences of the pre-training
corpora, at most `--max-tokens` word pieces, `--seed`) on three models: `--model`, the control (its
shape with random weights, bert.analysis.dictionary_training.random_control) at the same layer, and
mini-scratch at the same depth of its layers. Each dictionary's weights are rounded to fp16 (as a
shipped one is), then scored: variance explained and dead features on 300 held-out sentences, and
the part-of-speech purity on the held-out Brown files (bert/analysis/dictionary_purity.py), the one
rule for every dictionary: a feature is judged by its 50 strongest words when it is active on at
least 50 of them; the mean is over the features judged, and how many are judged is kept beside it.

`--builtin`: the model's built-in dictionary at its own layer, scored as shipped (not trained
again), and the two controls trained with its recipe (its features, k, steps, sentences and seed,
read from the file; at most `--max-tokens` word pieces, as scripts/make_dictionary.py) at that
layer. `--write` (with `--builtin`): the controls' purity written to
assets/<model>/dictionary_controls.json, which the Features page shows beside the built-in's.

Every dictionary is kept in `--work` (git-ignored runs/), so a run stopped and started again goes on.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch
from make_dictionary import recipe_arguments  # scripts/, beside this one

import bert
from app.jobs.dictionary_events import CONTROL, SCRATCH
from app.jobs.dictionary_job import SCRATCH_MODEL, scratch_layer
from bert.analysis.dictionary import Dictionary
from bert.analysis.dictionary_builtin import CONTROLS_FILE, builtin_dictionary, controls_path, rounded
from bert.analysis.dictionary_purity import held_out_tagged, pos_purity
from bert.analysis.dictionary_quality import variance_explained
from bert.analysis.dictionary_training import random_control, train_dictionary
from bert.analysis.dictionary_vectors import corpus_texts, gather_activations

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = 300


def _say(*a) -> None:
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def scored(bundle, d: Dictionary, held, tagged) -> dict:
    """Variance explained and dead features on `held`, and the purity on `tagged`."""
    acts = gather_activations(bundle, d.layer, held)
    with torch.inference_mode():
        x_hat, f = d.sae(acts.vectors)
    p = pos_purity(bundle, d, tagged)
    return {
        "variance_explained": variance_explained(acts.vectors, x_hat),
        "dead": int((~(f > 0).any(0)).sum()),
        "purity": {**p.summary(), "layer": d.layer, "model": bundle.name},
    }


def phase(work: Path, name: str, bundle, layer: int, recipe: dict, texts, held, tagged) -> dict:
    """One dictionary trained and scored, or read back from `work` when it was done before."""
    js = work / f"{name}.json"
    if js.is_file():
        return json.loads(js.read_text())
    _say(name, f"layer {layer} of {bundle.name}: training")
    t0, cpu0 = time.perf_counter(), time.process_time()
    done = list(
        train_dictionary(
            bundle,
            layer,
            texts,
            recipe["features"],
            recipe["k"],
            recipe["steps"],
            seed=recipe["seed"],
            max_tokens=recipe["max_tokens"],
            log_every=recipe["steps"],
        )
    )[-1].dictionary
    train_s, train_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    rounded(done.sae)
    out = {"name": name, "model": bundle.name, "layer": layer, "tokens": done.tokens, "train_s": train_s}
    out |= {"train_cpu_s": train_cpu, **scored(bundle, done, held, tagged)}
    js.write_text(json.dumps(out, indent=1))
    p = out["purity"]
    _say(name, f"VE {out['variance_explained']:.3f}, purity {p['mean']:.3f} ({p['counted']} judged), {train_cpu:.0f} s")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--work", default="runs/dictionary-controls")
    ap.add_argument("--layers", type=int, nargs="*", default=[])
    recipe_arguments(ap)
    ap.add_argument("--builtin", action="store_true", help="the built-in dictionary and its recipe's controls")
    ap.add_argument("--write", action="store_true", help=f"with --builtin: write assets/<model>/{CONTROLS_FILE}")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    model, scratch = bert.load(a.model), bert.load(SCRATCH_MODEL)
    control = random_control(model)
    tagged = held_out_tagged()
    recipe = {"features": a.features, "k": a.k, "steps": a.steps, "max_tokens": a.max_tokens, "seed": a.seed}
    texts, held = corpus_texts(a.sentences, HELD_OUT, seed=a.seed)
    rows = []
    if a.builtin:
        shipped = builtin_dictionary(model.name)
        d = shipped.dictionary
        bt, bh = corpus_texts(d.texts, HELD_OUT, seed=d.seed)
        br = {"features": d.n_features, "k": d.k, "steps": d.steps, "max_tokens": a.max_tokens, "seed": d.seed}
        js = work / "builtin.json"
        if not js.is_file():
            js.write_text(
                json.dumps({"name": "builtin", "model": model.name, "layer": d.layer, **scored(model, d, bh, tagged)})
            )
        sl = scratch_layer(d.layer, model.config.num_hidden_layers, scratch.config.num_hidden_layers)
        trio = [
            json.loads(js.read_text()),
            phase(work, f"builtin-control{d.layer}", control, d.layer, br, bt, bh, tagged),
            phase(work, f"builtin-scratch{sl}", scratch, sl, br, bt, bh, tagged),
        ]
        rows.append(("built-in", d.layer, trio))
        if a.write:
            out = controls_path(model.name, ROOT / "assets")
            command = "PYTHONPATH=. python scripts/dictionary_controls.py " + shlex.join(
                sys.argv[1:] if argv is None else argv
            )
            kept = {CONTROL: trio[1]["purity"], SCRATCH: trio[2]["purity"], "command": command}
            out.write_text(json.dumps(kept, indent=1) + "\n")
            _say("wrote", out)
    for layer in a.layers:
        sl = scratch_layer(layer, model.config.num_hidden_layers, scratch.config.num_hidden_layers)
        trio = [
            phase(work, f"layer{layer}", model, layer, recipe, texts, held, tagged),
            phase(work, f"control{layer}", control, layer, recipe, texts, held, tagged),
            phase(work, f"scratch{sl}", scratch, sl, recipe, texts, held, tagged),
        ]
        rows.append((f"{a.features}/{a.steps}", layer, trio))
    print(
        "| recipe | layer | trained | control (same layer) | gap | mini-scratch (layer) | judged: trained / control |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for recipe_name, layer, (t, c, s) in rows:
        tp, cp, sp = t["purity"], c["purity"], s["purity"]
        print(
            f"| {recipe_name} | {layer} | {tp['mean']:.3f} | {cp['mean']:.3f} | {tp['mean'] - cp['mean']:+.3f} | "
            f"{sp['mean']:.3f} ({s['layer']}) | {tp['counted']} / {cp['counted']} |"
        )


if __name__ == "__main__":
    main()
