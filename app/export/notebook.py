"""A view as a Jupyter notebook (.ipynb, format 4) that reproduces it with the project installed
as a package: cells that load the same model, compute with `bert` and draw with the same
figure builders the app uses (app.figures), markdown cells with the page's explanation.

The first code cell gets the `bert` package for someone who has only the file: it installs the
project's wheel (app/export/wheel.py, offered for download beside every notebook) from the
notebook's folder, or from the project's repository (BERT_EXPLORER_PROJECT_URL) where the wheel is
not there, and does nothing where `bert` is already importable.

What a notebook prints is for the student (sentences, tables); the view's numbers are kept, JSON-able,
in the variable NUMBERS for the student's own code, and the tests read them from there to compare
them with the app's. Typed text reaches the code cells only as Python string literals (repr) and the
markdown cells escaped. No streamlit, no nbformat: the file is plain JSON in the documented format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import PurePath

from bert import settings

from .notebook_prose import (
    ATTENTION_MD,
    EMBEDDINGS_MD,
    EXPLANATIONS_MD,
    FINETUNE_MD,
    MASKED_LM_MD,
    PATCHING_MD,
    TOKENIZATION_MD,
)
from .stamp import Stamp
from .wheel import wheel_name

NUMBERS = "numbers"  # the variable a notebook keeps its view's numbers in (a JSON-able dict)
MIME = "application/x-ipynb+json"
PIP_SAFE = re.compile(r"[A-Za-z0-9+:/._@~=-]+")  # a pip source as one word (a URL, a requirement)
SAVED_MODEL = "path/to/the/saved/model/folder"  # where a notebook loads a session's model from: the user edits it


@dataclass(frozen=True)
class ModelRef:
    """How a notebook loads the view's model: the app's key ("builtin:<name>", "path:<folder>",
    "session:...") and its label."""

    key: str | None
    label: str | None

    def code(self, name: str = "bundle") -> str:
        """The line(s) that load the model into the variable `name`."""
        kind, _, source = (self.key or "").partition(":")
        if kind == "builtin":
            return f"{name} = bert.load({source!r})"
        if kind == "path":
            folder = PurePath(source).name
            return (
                "# a model of the server's models folder: point this at your copy of the folder\n"
                f"{name} = bert.load(os.path.join(os.environ.get('BERT_EXPLORER_MODELS_DIR', 'models'), {folder!r}))"
            )
        return (
            "# the view's model was trained in a session of the app: save it there (its download), unzip it,\n"
            "# and load its folder here\n"
            f"{name} = bert.load({SAVED_MODEL!r})"
        )

    def note(self) -> str:
        kind = (self.key or "").partition(":")[0]
        if kind == "session":
            return "The model was trained in a session of the app: the first code cell says how to load it."
        return ""


def md_text(text: str) -> str:
    """Typed text for a markdown cell: HTML and markdown characters escaped, on one line."""
    text = re.sub(r"\s+", " ", text or "")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~])", r"\\\1", text)


def _cell(kind: str, source: str) -> dict:
    lines = source.strip("\n").splitlines(keepends=True)
    cell = {"cell_type": kind, "metadata": {}, "source": lines}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def project_url() -> str:
    """BERT_EXPLORER_PROJECT_URL when it is a source pip takes as one word (PIP_SAFE), else ''."""
    url = settings.text("BERT_EXPLORER_PROJECT_URL")
    return url if PIP_SAFE.fullmatch(url) else ""


def install_md() -> str:
    """How to run the notebook with nothing but the file (and the wheel beside it)."""
    url = project_url()
    fallback = f" Without the wheel, it installs from the project's repository (`{url}`)." if url else ""
    return (
        f"**To run it at home:** save this notebook and the app's *bert package* download (`{wheel_name()}`, "
        "offered beside *Open as a notebook*) in one folder, open the notebook in Jupyter (`pip install jupyter`, "
        "then `jupyter notebook`), VS Code or Google Colab (upload both files), and run the cells in order. The "
        "first code cell installs the package (and what it needs: torch, plotly, ...) once per Python "
        f"environment.{fallback}"
    )


def install_code() -> str:
    """The first code cell: install `bert` from the wheel beside the notebook (or from the project's
    repository, where one is set and the wheel is not there), unless it is already importable. Plain
    Python (no %pip): it parses and runs in any kernel."""
    url = project_url()
    lines = [
        "# BERT Explorer's `bert` package (its code, the app's figure builders, the built-in models),",
        "# installed once per Python environment",
        "import importlib\nimport importlib.util\nimport subprocess\nimport sys\nfrom pathlib import Path\n",
        f"wheel = {wheel_name()!r}  # the app's download, saved beside this notebook",
    ]
    if url:
        lines += [
            f"project = {url!r}  # the project's repository, where the wheel is not at hand",
            "if importlib.util.find_spec('bert') is not None:",
            "    print('bert is installed: run the next cells.')",
            "else:",
            "    source = wheel if Path(wheel).is_file() else project",
        ]
    else:
        lines += [
            "if importlib.util.find_spec('bert') is not None:",
            "    print('bert is installed: run the next cells.')",
            "elif not Path(wheel).is_file():",
            "    print(f'Save {wheel} (the app offers it beside the notebook) in {Path.cwd()},'",
            "          ' then run this cell again.')",
            "else:",
            "    source = wheel",
        ]
    lines += [
        "    print(f'Installing bert from {source} (a minute or two the first time) ...')",
        "    pip = subprocess.run([sys.executable, '-m', 'pip', 'install', source], capture_output=True, text=True)",
        "    importlib.invalidate_caches()",
        "    print('Done: run the next cells.' if pip.returncode == 0 else pip.stderr)",
    ]
    return "\n".join(lines)


def _stamp_md(title: str, stamp: Stamp, model: ModelRef, load: bool) -> str:
    weights = f", weights sha256 `{stamp.weights}`" if stamp.weights else ""
    inputs = "".join(f"\n- **{md_text(label)}**: {md_text(text)}" for label, text in stamp.inputs if text)
    model_line = f"Model **{md_text(model.label or '?')}**{weights}. {model.note() if load else ''}".rstrip()
    return (
        f"# {md_text(title)}\n\nSaved from BERT Explorer {md_text(stamp.version)} on {stamp.saved}. "
        f"{model_line}\n{inputs}\n\n{install_md()}"
    )


def notebook(title: str, stamp: Stamp, model: ModelRef, cells: list[tuple[str, str]], load: bool = True) -> str:
    """The .ipynb text: the stamp, the cell that installs `bert` (install_code), the imports and (if
    `load`) the model, then `cells` ((kind, source) with kind "markdown" or "code")."""
    setup = "import json\nimport os\n\nimport bert\nfrom app.figures import attention, embeddings, masked_lm, training"
    setup += f"\n\n{model.code()}" if load else ""
    body = [_cell("markdown", _stamp_md(title, stamp, model, load)), _cell("code", install_code())]
    body.append(_cell("code", setup))
    body += [_cell(kind, source) for kind, source in cells]
    nb = {
        "cells": body,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for n, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{n}"
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def notebook_without_model(title: str, stamp: Stamp, ref: ModelRef, cells: list[tuple[str, str]]) -> str:
    """A notebook whose own cells load what they need (a run's records and model, or two models):
    stamped with `ref`'s label and no weights hash, since the model on the page is not the one it
    shows; no model loaded before the cells."""
    return notebook(title, replace(stamp, model=ref.label, weights=None), ref, cells, load=False)


def run_intro(
    explanation: str, name: str, events: list, trainer: str, curves: str, imports: str = ""
) -> list[tuple[str, str]]:
    """A finished training run's first cells: the page's `explanation` with the run's name, then
    the cell that rebuilds the run's `events` (written with to_dict; `trainer` names the
    bert.train.events constant `from_dict` reads them with, e.g. "FINETUNE") as `events` and
    draws them with `curves` (code calling the figure builder), after `imports` (code lines)."""
    written = json.dumps([e.to_dict() for e in events])
    return [
        ("markdown", explanation + f"\n\nRun **{md_text(name)}**."),
        (
            "code",
            f"{imports}from bert.train import events as ev\n\n"
            f"events = [ev.from_dict(e, ev.{trainer}) for e in json.loads({written!r})]\n{curves}",
        ),
    ]


CONFUSION_SCORES = (  # notebook code: `report['confusion']` read as its accuracy and each label's precision and recall
    "conf = np.array(report['confusion'], dtype=float)  # rows: the true label, columns: the predicted\n"
    "accuracy = float(np.trace(conf) / conf.sum())\n"
    "precision = np.diag(conf) / np.maximum(conf.sum(0), 1)\n"
    "recall = np.diag(conf) / np.maximum(conf.sum(1), 1)\n"
)


def attention(model: ModelRef, stamp: Stamp, text_a: str, text_b: str | None, layer: int, head: int) -> str:
    """The Attention page: one head's map at `layer`, `head` (0-based) and all heads."""
    cells = [
        ("markdown", ATTENTION_MD),
        (
            "code",
            "from bert.analysis import full\n\n"
            f"text_a = {text_a!r}\ntext_b = {(text_b or None)!r}\n"
            "an = full.analyze(bundle, text_a, text_b)  # the app's analysis: tokens, attentions (L, H, T, T), ...\n"
            "an.tokens",
        ),
        (
            "code",
            f"layer, head = {layer + 1}, {head + 1}\n"
            "att = an.attentions[layer - 1, head - 1]  # (tokens, tokens): row i is where token i looks\n"
            "numbers = {'tokens': an.tokens, 'attention': att.tolist()}  # this view's numbers, for your own code\n"
            "strongest = att.argmax(-1)\n"
            "print(f'Layer {layer}, head {head}: where each token looks most')\n"
            "for token, j, row in zip(an.tokens, strongest, att):\n"
            "    print(f'  {token:>12} → {an.tokens[j]:<12} {row[j]:.0%}')\n"
            "attention.attention_heatmap(att, an.tokens, title=f'layer {layer}, head {head}')",
        ),
        ("code", "attention.attention_grid(an.attentions, selected=(layer - 1, head - 1))"),
    ]
    return notebook("Attention", stamp, model, cells)


def masked_lm(model: ModelRef, stamp: Stamp, text: str, k: int) -> str:
    """The Masked LM page: the top `k` words for each [MASK] of `text`."""
    cells = [
        ("markdown", MASKED_LM_MD),
        (
            "code",
            "from bert.analysis import mlm\n\n"
            f"text = {text!r}\n"
            f"pred = mlm.mlm_topk(bundle, text, k={int(k)})\n"
            "numbers = {'tokens': pred.top_tokens, 'probs': pred.top_probs.tolist()}  # for your own code\n"
            "for n, position in enumerate(pred.positions):\n"
            "    guesses = ', '.join(f'{t} {p:.1%}' for t, p in zip(pred.top_tokens[n], pred.top_probs[n]))\n"
            "    print(f'[MASK] {n + 1} (token {position}): {guesses}')",
        ),
        (
            "code",
            "for n, position in enumerate(pred.positions):\n"
            "    title = f'gap {n + 1} (token {position})'\n"
            "    masked_lm.mlm_topk_bar(pred.top_tokens[n], pred.top_probs[n], title).show()",
        ),
    ]
    return notebook("Masked LM", stamp, model, cells)


def finetune_report(model: ModelRef, stamp: Stamp, name: str, key: str, events: list, report: dict, steps: int) -> str:
    """A finished fine-tuning run `name` (its model's key `key`, a session's): its curves from the
    run's events (bert.train.events, written with to_dict), its report. The page's `model` is not
    the run's, and the run's model is not needed to draw it: no model is loaded."""
    cells = [
        *run_intro(FINETUNE_MD, name, events, "FINETUNE", f"training.finetune_curves(events, {int(steps)})"),
        (
            "code",
            "import numpy as np\n\n"
            f"report = json.loads({json.dumps(report)!r})\n"
            + CONFUSION_SCORES
            + "f1 = np.where(precision + recall > 0,\n"
            "              2 * precision * recall / np.maximum(precision + recall, 1e-12), 0)\n"
            "numbers = {'accuracy': accuracy, 'macro_f1': float(f1.mean())}  # for your own code\n"
            "print(f'Accuracy on the held-out texts {accuracy:.1%}, macro F1 {f1.mean():.1%}')\n"
            "training.confusion_matrix(report['confusion'], report['classes'])",
        ),
    ]
    return notebook_without_model(f"Fine-tuning run {name}", stamp, ModelRef(key, name), cells)


def tokenization(model: ModelRef, stamp: Stamp, text_a: str, text_b: str | None) -> str:
    """The Tokenization page: the token table of `text_a` (and `text_b`)."""
    cells = [
        ("markdown", TOKENIZATION_MD),
        (
            "code",
            "from app.formatting import token_table\nfrom bert.analysis.common import encode\n\n"
            f"text_a = {text_a!r}\ntext_b = {(text_b or None)!r}\n"
            "enc = encode(bundle, text_a, text_b)\n"
            "numbers = {'tokens': enc.tokens, 'ids': [int(i) for i in enc.ids]}  # for your own code\n"
            "print(f'{len(enc.tokens)} tokens: ' + ' '.join(enc.tokens))\n"
            "token_table(enc.tokens, enc.ids, enc.type_ids, enc.offsets, enc.word_ids, enc.sequence_ids, text_a, "
            "text_b, unk_token=bundle.tokenizer.unk_token)",
        ),
    ]
    return notebook("Tokenization", stamp, model, cells)


def embeddings(model: ModelRef, stamp: Stamp, text_a: str, text_b: str | None, part: str, rows: int) -> str:
    """The Embeddings page: one part of the embeddings (`part`) for the first `rows` tokens, and the
    parts' norms."""
    cells = [
        ("markdown", EMBEDDINGS_MD),
        (
            "code",
            "import numpy as np\n\nfrom bert.analysis import full\n\n"
            f"text_a = {text_a!r}\ntext_b = {(text_b or None)!r}\n"
            f"part, n = {part!r}, {int(rows)}\n"
            "an = full.analyze(bundle, text_a, text_b)  # an.parts: {part: (T, hidden)}\n"
            "embeddings.embedding_part_heatmap(an.parts[part][:n], an.tokens[:n], part)",
        ),
        (
            "code",
            "norms = {k: np.linalg.norm(an.parts[k][:n], axis=1) for k in ('token', 'segment', 'position', 'normed')}\n"
            "numbers = {k: v.tolist() for k, v in norms.items()}  # for your own code\n"
            "print('Mean length of each part over the tokens: '\n"
            "      + ', '.join(f'{k} {v.mean():.2f}' for k, v in norms.items()))\n"
            "embeddings.norms_bar(norms, an.tokens[:n])",
        ),
    ]
    return notebook("Embeddings", stamp, model, cells)


def explanations(model: ModelRef, stamp: Stamp, text: str, mask: int, word: str | None) -> str:
    """The Explanations page for a masked-word model: rollout vs saliency for `word` (None: the top
    guess) at the `mask`-th [MASK] (0-based) of `text`, and the logit lens there."""
    cells = [
        ("markdown", EXPLANATIONS_MD),
        (
            "code",
            "from app.figures import explain as figures\nfrom bert.analysis import explain, mlm\n\n"
            f"text = {text!r}\nmask = {int(mask) + 1}  # which [MASK], counted from 1\n"
            "guesses = mlm.mlm_topk(bundle, text, k=8)\n"
            "position = guesses.positions[mask - 1]\n"
            f"word = {word!r} or guesses.top_tokens[mask - 1][0]\n"
            "sal = explain.saliency_mlm(bundle, text, position=position, target=word)\n"
            "print(f'rank correlation of rollout and saliency (Spearman): {sal.correlation:+.2f}')\n"
            "figures.saliency_bars(sal.tokens, sal.rollout, sal.saliency, sal.position, f'“{word}” at the [MASK]')",
        ),
        (
            "code",
            "lens = explain.logit_lens(bundle, text, k=5)\n"
            "i = lens.positions.index(position)\n"
            "answer = lens.top_tokens[i][-1][0]\n"
            "numbers = {'rollout': sal.rollout.tolist(), 'saliency': sal.saliency.tolist(),\n"
            "           'lens': lens.top_probs[i].tolist(), 'answer': answer}  # for your own code\n"
            "ranks = lens.answer_rank[i]  # the answer's rank after each layer (0: the embeddings), 1 = top\n"
            "since = max(n for n in range(len(ranks)) if n == 0 or ranks[n - 1] != 1)\n"
            "print(f'The model answers “{answer}”: its top guess from layer {since} on (layer 0: the embeddings).')\n"
            "figures.logit_lens_heatmap(lens.top_tokens[i], lens.top_probs[i], answer)",
        ),
        ("code", "figures.answer_by_layer(lens.answer_prob[i], lens.answer_rank[i], answer)"),
    ]
    return notebook("Explanations", stamp, model, cells)


def patching(model: ModelRef, stamp: Stamp, clean: str, corrupted: str, answer: str, foil: str, site: str) -> str:
    """The Causes page's Patching view: every place of `site` patched from `clean` into `corrupted`."""
    cells = [
        ("markdown", PATCHING_MD),
        (
            "code",
            "from app.figures.causes import patching_heatmap\n"
            "from bert.analysis.patching import activation_patching\n\n"
            f"clean, corrupted = {clean!r}, {corrupted!r}\nanswer, foil = {answer!r}, {foil!r}\nsite = {site!r}\n"
            "r = activation_patching(bundle, clean, corrupted, answer, foil, site)\n"
            "print(f'logit({r.answer}) - logit({r.foil}): {r.clean:+.2f} clean, {r.corrupted:+.2f} corrupted')\n"
            "numbers = {'effect': r.effect.tolist(), 'rows': r.rows, 'columns': r.columns}  # for your own code\n"
            "patching_heatmap(r.effect, r.rows, r.columns, r.position if site != 'heads' else None)",
        ),
    ]
    return notebook("Patching", stamp, model, cells)
