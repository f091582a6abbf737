"""Notebooks of the analysis pages (Head ablation, Head patterns, Compare's two models), built like
those of app/export/notebook.py: the same model and inputs, cells that compute with `bert` and
draw with the page's figure builders, the page's explanation, its numbers kept in `numbers`.
Typed text reaches the code cells only as Python string literals (repr)."""

from __future__ import annotations

import html

from bert.analysis.attention_heads import BROAD_ENTROPY, PATTERN_THRESHOLD

from .notebook import ModelRef, notebook, notebook_without_model
from .notebook_prose import ABLATION_MD, COMPARE_MD, IMPORTANCE_MD
from .stamp import Stamp

ABLATION_MASKS = 5  # [MASK]s drawn, as the page draws them


def ablation(model: ModelRef, stamp: Stamp, text: str, off, k: int) -> str:
    """The Head ablation page: `text`'s predictions (top `k` a [MASK]) with every head on and with
    the heads `off` ((layer, head) pairs, 0-based) switched off, and each head's importance alone."""
    off = sorted([int(l), int(h)] for l, h in off)
    cells = [
        ("markdown", ABLATION_MD),
        (
            "code",
            "import pandas as pd\n\n"
            "from app.figures.attention_heads import class_probs_before_after, importance_heatmap, topk_before_after\n"
            "from bert.analysis.ablation import head_importance, head_mask\n"
            "from bert.analysis.mlm import classifier_probs, mlm_topk\n\n"
            f"text = {text!r}\n"
            f"off = {off!r}\n"
            "L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads\n"
            "mask = head_mask(L, H, off) if off else None  # (L, H): 0 off, 1 on",
        ),
        (
            "code",
            "if bundle.is_classifier:\n"
            "    before, after = classifier_probs(bundle, text), classifier_probs(bundle, text, head_mask=mask)\n"
            "    numbers = {'before': before.tolist(), 'after': after.tolist()}\n"
            "    class_probs_before_after(bundle.labels, before, after).show()\n"
            "else:\n"
            f"    full = mlm_topk(bundle, text, k={int(k)})\n"
            f"    cut = mlm_topk(bundle, text, k={int(k)}, head_mask=mask)\n"
            "    numbers = {'before': full.top_probs.tolist(), 'after': cut.top_probs.tolist(),\n"
            "               'before_tokens': full.top_tokens, 'after_tokens': cut.top_tokens}\n"
            f"    for i, pos in enumerate(full.positions[:{ABLATION_MASKS}]):\n"
            "        title = f'[MASK] at token {pos}' if len(full.positions) > 1 else ''\n"
            "        topk_before_after(full.top_tokens[i], full.top_probs[i], cut.top_tokens[i], cut.top_probs[i],\n"
            "                          title=title).show()",
        ),
        ("markdown", IMPORTANCE_MD),
        (
            "code",
            "imp = head_importance(bundle, text)  # L x H runs, one a head\n"
            "numbers['importance'] = imp.scores.tolist()  # numbers: this view's, for your own code\n"
            "((l, h, s),) = imp.ranking(1)\n"
            "print(f'Switched off alone, layer {l + 1} head {h + 1} costs the most: {s:+.2f} {imp.unit}')\n"
            "importance_heatmap(imp.scores, imp.unit, imp.target, off)",
        ),
        (
            "code",
            "pd.DataFrame([{'rank': n + 1, 'layer': l + 1, 'head': h + 1, f'drop in {imp.unit}': s}\n"
            "              for n, (l, h, s) in enumerate(imp.ranking(10))])",
        ),
    ]
    return notebook("Head ablation", stamp, model, cells)


HEAD_PATTERNS_MD = (
    "Many attention heads follow one simple habit: always look at the previous word, always look at `[CLS]` or "
    "`[SEP]`, or spread out over everything. Here every head of every layer gets the name of its strongest "
    f"habit. A head gets a pattern's name when it puts at least {PATTERN_THRESHOLD:.0%} of its attention there "
    f"(on average over the tokens); otherwise it is *broad* when its attention is spread out (entropy at least "
    f"{BROAD_ENTROPY:.0%} of the maximum) and *other* when it is focused on something else. Change `layer` and "
    "`head` (counted from 1) and run again to see another head's numbers."
)


def head_patterns(
    model: ModelRef, stamp: Stamp, text_a: str, text_b: str | None, probe: bool, layer: int, head: int
) -> str:
    """The Head patterns page: each head's pattern measured on `text_a` (and `text_b`), or
    averaged over the probe sentences (`probe`), with head (`layer`, `head`) (0-based) picked."""
    if probe:
        measure = (
            "from bert.analysis.attention_heads import head_patterns_over\n\n"
            "hp = head_patterns_over(bundle)  # averaged over the built-in probe sentences\n"
            "stats, labels = hp.stats, hp.labels\n"
            "hp.sentences"
        )
    else:
        measure = (
            "from bert.analysis import full\n"
            "from bert.analysis.attention_heads import head_pattern_stats, label_heads\n\n"
            f"text_a = {text_a!r}\ntext_b = {(text_b or None)!r}\n"
            "an = full.analyze(bundle, text_a, text_b)\n"
            "stats = head_pattern_stats(an.attentions, an.tokens)  # {pattern: (L, H)}\n"
            "labels = label_heads(stats)  # (L, H): each head's pattern\n"
            "an.tokens"
        )
    cells = [
        ("markdown", HEAD_PATTERNS_MD),
        ("code", measure),
        (
            "code",
            "from app.figures.attention_heads import STAT_NAMES, head_stats_bar, pattern_map\n\n"
            f"layer, head = {int(layer) + 1}, {int(head) + 1}\n"
            "numbers = {'labels': labels.tolist(), **{name: stats[name].tolist() for name in STAT_NAMES}}\n"
            "print(f'Layer {layer}, head {head}: {labels[layer - 1, head - 1]}')\n"
            "pattern_map(labels, stats, selected=(layer - 1, head - 1))",
        ),
        (
            "code",
            "import pandas as pd\n\nfrom bert.analysis.attention_heads import LABEL_HELP, LABELS\n\n"
            "pd.DataFrame({'pattern': list(LABELS), 'heads': [int((labels == lab).sum()) for lab in LABELS],\n"
            "              'what the head does': [LABEL_HELP[lab] for lab in LABELS]})",
        ),
        ("code", "head_stats_bar(stats, layer - 1, head - 1)"),
    ]
    return notebook("Head patterns", stamp, model, cells)


COMPARE_MASKS = 3  # [MASK]s drawn a model, as the page draws them


def _compare_answers_code(k: int) -> str:
    """A cell that draws each model's answer: its class probabilities, or the top `k` words of its
    first COMPARE_MASKS [MASK]s."""
    return (
        "for side, m in (('a', bundle_a), ('b', bundle_b)):\n"
        "    if not m.is_classifier and '[MASK]' not in text:\n"
        "        print(f'model {side.upper()}: put [MASK] in the sentence to see its guesses')\n"
        "        continue\n"
        f"    out = model_outputs(m, text, {int(k)})\n"
        "    if out.kind == 'classifier':\n"
        "        numbers[f'{side}_probs'] = out.probs.tolist()\n"
        "        class_probs_bar(out.labels, out.probs).show()\n"
        "        continue\n"
        "    numbers[f'{side}_probs'], numbers[f'{side}_tokens'] = out.mlm.top_probs.tolist(), out.mlm.top_tokens\n"
        f"    for i, pos in enumerate(out.mlm.positions[:{COMPARE_MASKS}]):\n"
        "        masked_lm.mlm_topk_bar(out.mlm.top_tokens[i], out.mlm.top_probs[i], f'[MASK] at token {pos}').show()\n"
        "# numbers: this view's, for your own code"
    )


def compare_models(
    model: ModelRef, stamp: Stamp, text: str, layer: int, head: int, a: ModelRef, b: ModelRef, k: int
) -> str:
    """Compare's "Two models side by side": models `a` and `b` on `text`, their attention at
    (`layer`, `head`) (0-based), its difference and each head's share moved, and their answers
    (top `k` a [MASK]). The page's noted `model` is not the view's: the stamp names both, with no
    weights hash."""
    titles = f"A: {html.escape(a.label or '?')}", f"B: {html.escape(b.label or '?')}"
    cells = [
        (
            "markdown",
            " ".join(
                filter(
                    None,
                    [COMPARE_MD, a.note().replace("The model", "Model A"), b.note().replace("The model", "Model B")],
                )
            ),
        ),
        (
            "code",
            f"{a.code('bundle_a')}\n{b.code('bundle_b')}\n\n"
            "from app.figures.compare import attention_diff_heatmap, class_probs_bar, moved_heatmap\n"
            "from bert.analysis.compare import attentions_of, compare_attention, model_outputs\n\n"
            f"text = {text!r}\n"
            f"layer, head = {int(layer) + 1}, {int(head) + 1}\n"
            "ta, aa = attentions_of(bundle_a, text)  # tokens, attention (L, H, T, T)\n"
            "tb, ab = attentions_of(bundle_b, text)\n"
            "numbers = {'a': aa[layer - 1, head - 1].tolist(), 'b': ab[layer - 1, head - 1].tolist()}\n"
            f"attention.attention_heatmap(aa[layer - 1, head - 1], ta, title={titles[0]!r}).show()\n"
            f"attention.attention_heatmap(ab[layer - 1, head - 1], tb, title={titles[1]!r}).show()",
        ),
        (
            "code",
            f"same_model = {a.key is not None and a.key == b.key}  # then the page draws no difference\n"
            "if aa.shape[:2] == ab.shape[:2] and ta == tb and not same_model:  # else the maps do not line up\n"
            "    d = compare_attention(aa, ab, ta, tb)\n"
            "    numbers['moved'] = d.moved.tolist()\n"
            "    attention_diff_heatmap(d.diff[layer - 1, head - 1], ta, f'A − B, layer {layer}, head {head}').show()\n"
            "    moved_heatmap(d.moved, (layer - 1, head - 1)).show()\n"
            "else:\n"
            "    print('The same model twice, or models that differ in shape or tokens: no difference map.')",
        ),
        ("code", _compare_answers_code(k)),
    ]
    both = ModelRef(None, f"A: {a.label or '?'}, B: {b.label or '?'}")
    return notebook_without_model("Compare two models", stamp, both, cells)
