"""Notebooks of a finished training run, built like app/export/notebook.py's fine-tuning report:
the run's curves redrawn from its recorded events (written with to_dict) by the page's figure
builder, its final numbers said in words and kept in `numbers`, and its model loaded where it can be. A
pre-training run's model (a session's) is loaded from the folder its download unzips to, once the
user points the notebook at it; until then those cells say so. The Decoder page offers no download:
its decoding's numbers travel in the notebook instead. Typed text reaches the code cells only as
Python string literals (repr)."""

from __future__ import annotations

import json

import numpy as np

from bert.train.next_word import NEXT_WORD
from bert.train.pretrain_args import PretrainArgs
from bert.train.seq2seq import EVENTS

from .notebook import SAVED_MODEL, ModelRef, md_text, notebook_without_model, run_intro
from .notebook_prose import DECODER_MD, DECODER_MODEL_MD, MODEL_MD, NEXT_WORD_MD, PRETRAIN_MD
from .stamp import Stamp


def _load(ref: ModelRef) -> tuple[tuple[str, str], ...]:
    """The cells that set `bundle`: the run's model, or None while a session's model is not downloaded."""
    if (ref.key or "").partition(":")[0] in ("builtin", "path"):
        return (("code", ref.code()),)
    code = f"folder = {SAVED_MODEL!r}  # the unzipped download\n"
    code += "bundle = bert.load(folder) if os.path.isdir(folder) else None"
    return ("markdown", MODEL_MD), ("code", code)


def _try_it(args: PretrainArgs) -> str:
    none = (
        "if bundle is None:\n    print('No model loaded yet: set `folder` above, then run these cells again.')\nelse:\n"
    )
    if args.objective == NEXT_WORD:
        return (
            "from bert.analysis.generate import continue_text\nfrom bert.train.next_word import next_word_probe\n\n"
            f"text = next_word_probe({args.probe!r})  # the probe's words before its first [MASK]\n"
            + none
            + "    cont = continue_text(bundle, text, 20)  # greedy: the likeliest token at every step\n"
            "    print(bundle.tokenizer.decode(cont.prompt_ids), '→', bundle.tokenizer.decode([s.token_id for s in "
            "cont.steps]))\n"
            "    numbers = {'written': [s.token for s in cont.steps],\n"
            "               'probs': [s.prob for s in cont.steps]}  # for your own code"
        )
    return (
        "from bert.train.pretrain_eval import probe_predictions\n\n"
        f"text = {args.probe!r}  # a sentence with [MASK]\n"
        + none
        + "    guesses = probe_predictions(bundle, text, k=5)  # each [MASK]'s top (word, probability)\n"
        "    numbers = {'guesses': guesses}  # for your own code\n"
        "    for i, cands in enumerate(guesses[:6]):\n"
        "        masked_lm.mlm_topk_bar([t for t, _ in cands], [p for _, p in cands], f'[MASK] {i + 1}').show()"
    )


def pretrain_report(model: ModelRef, stamp: Stamp, name: str, key: str, events: list, done, args: PretrainArgs) -> str:
    """A finished pre-training run `name` (its model's key `key`, a session's): its curves from
    the run's `events`, its final scores (`done`, its PretrainDone), when it left the plateau, the
    probe table, and the page's "Try it" on the run's model (`args`: its PretrainArgs). The page's
    `model` is not the run's: no model is loaded before the last cells."""
    next_word = args.objective == NEXT_WORD
    explanation = NEXT_WORD_MD if next_word else PRETRAIN_MD
    cells = [
        *run_intro(explanation, name, events, "PRETRAIN", f"training.pretrain_curves(events, {int(args.steps)})"),
        (
            "code",
            "from app.run_session.progress import probe_frame\nfrom bert.train.plateau import plateau_exit\n\n"
            f"done = ev.from_dict(json.loads({json.dumps(done.to_dict())!r}), ev.PRETRAIN)  # its final scores\n"
            "start = ev.last(events, ev.PretrainStart)\n"
            "left = plateau_exit(ev.of_type(events, ev.PretrainEval), start.baseline_token if start else None)\n"
            "print(f'{done.step or 0:,} steps; left the plateau at step {left.step:,}' if left else\n"
            "      f'{done.step or 0:,} steps; still on the plateau')\n"
            "numbers = {'step': done.step, 'top1': done.mlm_top1, 'top5': done.mlm_top5, 'nsp_acc': done.nsp_acc,\n"
            "           'baseline_top1': done.baseline_top1,\n"
            "           'left_plateau_at': left.step if left else None}  # for your own code\n"
            f"probe_frame(events, next_word={next_word})  # the probe's top guesses at every evaluation",
        ),
        *_load(ModelRef(key, name)),
        ("code", _try_it(args)),
    ]
    return notebook_without_model(f"Pre-training run {name}", stamp, ModelRef(key, name), cells)


DIGITS = 6  # decimals of the attention a decoding notebook carries: within 1e-6, a fraction of the size


def _rounded(x) -> list:
    return np.round(np.asarray(x, dtype=np.float64), DIGITS).tolist()


def _decoder_curves_code(events: list) -> str:
    """A cell that rebuilds the run's events (bert.train.seq2seq's) and draws its curves."""
    kept = [e for e in events if isinstance(e, tuple(EVENTS.values()))]
    return (
        "from app.figures import seq2seq as s2s_figures\nfrom bert.train.events import last\n"
        "from bert.train.seq2seq import Seq2SeqDone, event_from_dict\n\n"
        f"events = [event_from_dict(e) for e in json.loads({json.dumps([e.to_dict() for e in kept])!r})]\n"
        "done = last(events, Seq2SeqDone)\n"
        "if done is not None:\n"
        "    print(f'held-out exact match {done.exact_match:.0%}, kept model of step {done.best_step:,}')\n"
        "    numbers = {'exact_match': done.exact_match, 'best_step': done.best_step}  # for your own code\n"
        "s2s_figures.curves(events)"
    )


def _decoding_cells(trace, text: str, step: int, layer: int) -> list[tuple[str, str]]:
    """The trace's tokens and attention (mean over heads, rounded) as numbers, and the cross- and
    self-attention at `step` and `layer` (0-based) drawn from them."""
    cross = trace.cross.float().mean(1).numpy()  # (L, T, S)
    selfs = trace.selfs.float().mean(1).numpy()  # (L, T, T)
    numbers = (
        "import numpy as np\n\n"
        f"text = {text!r}  # the source typed on the page\n"
        f"source = {list(trace.source)!r}  # the encoder's tokens\n"
        f"inputs = {list(trace.inputs)!r}  # what the decoder read at each step\n"
        f"outputs = {list(trace.outputs)!r}  # what it wrote at each step\n"
        f"probs = {[float(p) for p in trace.probs]!r}  # the probability of each written token\n"
        f"cross = np.array(json.loads({json.dumps(_rounded(cross))!r}))  # (layers, steps, source tokens)\n"
        f"selfs = np.array(json.loads({json.dumps(_rounded(selfs))!r}))  # (layers, steps, steps)\n"
        f"step, layer = {int(step) + 1}, {int(layer) + 1}\n"
        "t = step - 1\n"
        "print(f'Step {step}: it read {inputs[t]} and wrote {outputs[t]} (p = {probs[t]:.2f}). '\n"
        "      f'Output so far: {\" \".join(outputs[:step])}')\n"
        "numbers = {'outputs': outputs, 'probs': probs, 'cross': cross[layer - 1].tolist(),\n"
        "           'self': selfs[layer - 1].tolist()}  # for your own code\n"
        "s2s_figures.attention(cross[layer - 1], outputs, source, f'cross-attention, layer {layer}', t,\n"
        "                      'source token')"
    )
    selfs_drawn = (
        "s2s_figures.attention(selfs[layer - 1], outputs, inputs, f'masked self-attention, layer {layer}', t,\n"
        "                      'read')"
    )
    return [("code", numbers), ("code", selfs_drawn)]


def decoding(
    model: ModelRef,
    stamp: Stamp,
    name: str,
    title: str,
    code: str | None,
    events: list,
    text: str,
    trace,
    step: int,
    layer: int,
) -> str:
    """The Decoder page's "Watch it decode" for run `name` (trained on `title`; `code` its run code
    when it was saved): its curves from the run's `events` (bert.train.seq2seq's), and `trace` (a
    bert.seq2seq.generate.Trace of `text`) at `step` and `layer` (0-based), its attention carried
    as numbers (mean over heads, every layer): the run's model is a session's, with no download."""
    reopen = (
        f"; the run itself reopens on the Decoder page with its run code **{md_text(code)}** (for a day)"
        if code
        else ""
    )
    cells = [
        ("markdown", DECODER_MD + f"\n\nRun **{md_text(name)}**, trained on {md_text(title)}."),
        ("markdown", DECODER_MODEL_MD.format(digits=DIGITS, reopen=reopen)),
        ("code", _decoder_curves_code(events)),
        *_decoding_cells(trace, text, step, layer),
    ]
    return notebook_without_model(f"Decoding with {name}", stamp, ModelRef(None, name), cells)
