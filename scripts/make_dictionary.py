"""Build a model's built-in dictionary of features (assets/<model>/dictionary.safetensors) and its card.

    PYTHONPATH=. python scripts/make_dictionary.py --work runs/dictionary-builtin

On one torch thread: the same recipe (TopK, `--features` features, `--k` active a word piece,
`--steps` steps on `--sentences` held-in sentences of the pre-training corpora, at most
`--max-tokens` word pieces) on each of `--layers`, each scored with the weights rounded to fp16 as
shipped: variance explained, L0, dead features and splice cost on 300 held-out sentences, and the
part-of-speech purity on the held-out Brown files. The layer shipped: the purest of those with
variance explained >= 0.8 and an everyday cloze top-1 cost <= 5 points, else the one explaining
most. Then the same recipe at that layer on the random-weights control and on mini-scratch (at
the same depth of its layers) for the purity beside it, like for like. `--write` also removes a
controls file (scripts/dictionary_controls.py) left beside an earlier dictionary: the new file
holds its own. Every phase is kept in `--work`
(git-ignored runs/), so a run stopped and started again goes on from the next phase.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

import bert
from app.jobs.dictionary_job import SCRATCH_MODEL, scratch_layer
from bert.analysis.dictionary import Dictionary, DictionaryStep, SparseDictionary
from bert.analysis.dictionary_builtin import PARAMETERS, SCALARS, builtin_path, controls_path, rounded, save_builtin
from bert.analysis.dictionary_purity import held_out_tagged, pos_purity
from bert.analysis.dictionary_quality import Quality, Splice, dictionary_quality
from bert.analysis.dictionary_training import random_control, train_dictionary
from bert.analysis.dictionary_vectors import corpus_texts, gather_activations

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = 300
VE_MIN, CLOZE_COST_MAX = 0.8, 0.05


def _say(*a) -> None:
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def phase(work: Path, name: str, bundle, layer: int, a, texts, held, tagged) -> dict:
    """One dictionary trained and scored, or read back from `work` when it was done before."""
    js, st = work / f"{name}.json", work / f"{name}.safetensors"
    if js.is_file() and st.is_file():
        _say(name, "done before:", js)
        return json.loads(js.read_text())
    _say(name, f"layer {layer} of {bundle.name}: training")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    done = None
    for m in train_dictionary(
        bundle, layer, texts, a.features, a.k, a.steps, seed=a.seed, max_tokens=a.max_tokens, log_every=50
    ):
        if isinstance(m, DictionaryStep):
            _say(name, f"step {m.step}: variance explained {m.variance_explained:.3f}, dead {m.dead:.1%}")
        else:
            done = m.dictionary
    train_s, train_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    rounded(done.sae)
    acts = gather_activations(bundle, layer, held)
    q = dictionary_quality(bundle, done, acts, held[: acts.texts_read])
    p = pos_purity(bundle, done, tagged)
    out = {
        "name": name,
        "model": bundle.name,
        "layer": layer,
        "train_s": train_s,
        "train_cpu_s": train_cpu,
        "dictionary": {k: getattr(done, k) for k in SCALARS},
        "curve": [asdict(s) for s in done.curve],
        "quality": asdict(q),
        "purity": {**p.summary(), "layer": layer, "model": bundle.name},
    }
    save_file({k: getattr(done.sae, k).detach().contiguous() for k in PARAMETERS}, str(st))
    js.write_text(json.dumps(out, indent=1))
    _say(
        name,
        f"VE {q.variance_explained:.3f}, L0 {q.l0:.1f}, dead {q.dead}, cloze top-1 {q.cloze.top1:.3f} -> "
        f"{q.cloze.spliced_top1:.3f}, held-out top-1 {q.splice.top1:.3f} -> {q.splice.spliced_top1:.3f}, "
        f"purity {p.mean:.3f} (chance {p.chance:.3f}, {p.counted} features), {train_s:.0f} s",
    )
    return out


def pick(results: list[dict]) -> dict:
    """The purest layer meeting the quality bar, else the one explaining most variance."""

    def ok(r):
        q = r["quality"]
        return q["variance_explained"] >= VE_MIN and q["cloze"]["top1"] - q["cloze"]["spliced_top1"] <= CLOZE_COST_MAX

    good = [r for r in results if ok(r)]
    if good:
        return max(good, key=lambda r: r["purity"]["mean"])
    return max(results, key=lambda r: r["quality"]["variance_explained"])


def recipe_arguments(ap: argparse.ArgumentParser) -> None:
    """The recipe's options (the built-in dictionary's by default)."""
    ap.add_argument("--features", type=int, default=2048)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--max-tokens", type=int, default=60000)
    ap.add_argument("--seed", type=int, default=0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--work", default="runs/dictionary-builtin")
    ap.add_argument("--layers", type=int, nargs="+", default=[2, 3, 4])
    recipe_arguments(ap)
    ap.add_argument("--write", action="store_true", help="write the chosen layer to assets/<model>/")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    bundle = bert.load(a.model)
    texts, held = corpus_texts(a.sentences, HELD_OUT, seed=a.seed)
    tagged = held_out_tagged()
    _say(f"{len(texts)} held-in sentences, {len(held)} held out, {len(tagged)} held-out tagged Brown sentences")
    results = [phase(work, f"layer{L}", bundle, L, a, texts, held, tagged) for L in a.layers]
    best = pick(results)
    _say("chosen:", best["name"])
    c = best["layer"]
    control = phase(work, f"control{c}", random_control(bundle), c, a, texts, held, tagged)
    scratch = bert.load(SCRATCH_MODEL)
    sl = scratch_layer(c, bundle.config.num_hidden_layers, scratch.config.num_hidden_layers)
    scratch_r = phase(work, f"scratch{sl}", scratch, sl, a, texts, held, tagged)
    summary = {"layers": results, "control": control, "scratch": scratch_r, "chosen": best["name"]}
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    if not a.write:
        return
    st = load_file(str(work / f"{best['name']}.safetensors"))
    sae = SparseDictionary(st["W_dec"].shape[0], st["W_dec"].shape[1], a.k)
    sae.load_state_dict(st)
    curve = [DictionaryStep(**s) for s in best["curve"]]
    d = Dictionary(sae=sae, curve=curve, **best["dictionary"])
    q = best["quality"]
    quality = Quality(**{**q, "splice": Splice(**q["splice"]), "cloze": Splice(**q["cloze"])})
    purity = {
        "this model": best["purity"],
        "random-weights control": control["purity"],
        "mini-scratch": scratch_r["purity"],
    }
    figures = {
        "layers": [{k: r[k] for k in ("layer", "quality", "purity", "train_s", "train_cpu_s")} for r in results],
        "train_s": best["train_s"],
        "train_cpu_s": best["train_cpu_s"],
        "threads": 1,
    }
    command = "PYTHONPATH=. python scripts/make_dictionary.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    path = builtin_path(a.model, ROOT / "assets")
    save_builtin(path, d, quality, purity, command, figures)
    path.chmod(0o644)
    controls_path(a.model, ROOT / "assets").unlink(missing_ok=True)
    size = path.stat().st_size / 2**20
    card = path.with_suffix(".md")
    card.write_text(card_text(a, best, results, control, scratch_r, command, size))
    _say("wrote", path, f"{size:.2f} MB", "and", card)


def card_text(a, best: dict, results: list[dict], control: dict, scratch: dict, command: str, size: float) -> str:
    """The dictionary's card: what it is, the command, the layers compared, the purity beside the controls."""

    def row(r: dict, label: str) -> str:
        q, p = r["quality"], r["purity"]
        return (
            f"| {label} | {q['variance_explained']:.3f} | {q['l0']:.1f} | {q['dead']} | "
            f"{q['cloze']['top1']:.3f} → {q['cloze']['spliced_top1']:.3f} | "
            f"{q['splice']['top1']:.3f} → {q['splice']['spliced_top1']:.3f} | {p['mean']:.3f} ({p['chance']:.3f}) | "
            f"{r['train_cpu_s']:.0f} / {r['train_s']:.0f} |"
        )

    d = best["dictionary"]
    lines = [
        f"# The built-in dictionary of features of `{a.model}`",
        "",
        f"`dictionary.safetensors` ({size:.1f} MB, fp16): a TopK sparse autoencoder (bert/analysis/dictionary.py) "
        f"of {d['n_features']:,} features, {d['k']} active a word piece, on the state leaving layer {d['layer']}. "
        f"Trained on {d['tokens']:,} word pieces of {d['texts']:,} sentences of the pre-training corpora's "
        f"training documents (every other sentence with 15 % of its pieces masked), {d['steps']} steps of "
        "1,024 word pieces, seed 0, one torch thread. The Features page opens with it.",
        "",
        "    " + command,
        "",
        "Every figure below is of the weights as shipped (rounded to fp16), on text no dictionary trained on: "
        "variance explained, L0 and dead features on 300 held-out sentences; the splice cost (the layer's "
        "output replaced by its reconstruction) on those sentences' masked pieces and on the everyday cloze "
        "set; the part-of-speech purity (bert/analysis/dictionary_purity.py: the share of a feature's 50 "
        "strongest words with its commonest Brown tag, averaged over the features active on at least 50 "
        "words, on the Brown files pre-training held out; in brackets: 50 words drawn at random). Seconds: "
        "reading the vectors and training on one thread, its CPU time (what one free core takes) and the wall "
        "clock on the 2-core machine it was built on, shared with other work.",
        "",
        "| dictionary | variance explained | L0 | dead | everyday cloze top-1 | held-out top-1 "
        "| purity (random words) | CPU s / wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *[row(r, f"layer {r['layer']}" + (" (shipped)" if r is best else "")) for r in results],
        row(control, f"random-weights control, layer {control['layer']} (the same layer)"),
        row(scratch, f"mini-scratch, layer {scratch['layer']} of 4"),
        "",
        f"The layer shipped is picked by `pick`: the purest of the layers with variance explained at least {VE_MIN} "
        f"and an everyday-cloze top-1 cost of at most {CLOZE_COST_MAX * 100:g} points, else the one explaining "
        "most. The control and mini-scratch rows are the same recipe on a model of this shape with random "
        "weights and on this project's small BERT pre-trained from random weights (at the same depth of its "
        "layers): how much of a feature's purity is the trained model's own.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
