"""Activation patching (bert/analysis/patching.py) against transformers' BertForMaskedLM on the same
weights, patched with forward hooks one run at a time (1e-4); its identities; its refusals."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import torch

import bert
from bert.analysis import patching
from bert.analysis.patching import PRESETS, SITES, activation_patching
from bert.errors import InputError
from tests.helpers import minilm_tiny_classifier, tiny_bundle

transformers = pytest.importorskip("transformers")

CLEAN = "the film was [MASK] and it was good"
CORRUPTED = "the film was [MASK] and it was bad"
ANSWER, FOIL = "good", "bad"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Our tiny bundle and transformers' BertForMaskedLM read
    from its exported folder."""
    bundle = tiny_bundle(seed=3)
    with torch.no_grad():  # larger weights than BERT's start: the two sentences' answers then differ
        for p in bundle.model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    folder = bert.export_hf(bundle, tmp_path_factory.mktemp("hf"))
    theirs = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    return bundle, theirs


def _hf_metric(theirs, ids, pos, a, f, hook_at=None) -> float:
    """logit[a] - logit[f] at `pos`, with hook_at = (module, "pre" or "post", fn) registered for this run."""
    handle = None
    if hook_at is not None:
        module, kind, fn = hook_at
        handle = module.register_forward_pre_hook(fn) if kind == "pre" else module.register_forward_hook(fn)
    try:
        with torch.no_grad():
            logits = theirs(input_ids=ids).logits[0, pos]
    finally:
        if handle is not None:
            handle.remove()
    return float(logits[a] - logits[f])


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _replace_first(out, new):
    return (new, *out[1:]) if isinstance(out, tuple) else new


def _capture(theirs, ids, module, kind):
    """The value a hook on `module` sees in a plain run: its output (post) or first input (pre)."""
    seen = {}

    def pre(mod, args):
        seen["v"] = args[0].clone()

    def post(mod, args, out):
        seen["v"] = _first(out).clone()

    handle = module.register_forward_pre_hook(pre) if kind == "pre" else module.register_forward_hook(post)
    with torch.no_grad():
        theirs(input_ids=ids)
    handle.remove()
    return seen["v"]


def _hf_patching(theirs, ids_clean, ids_corr, pos, a, f, site, L, H, C):
    """The reference: one hooked transformers run per (row, column), normalised as the issue says."""
    layers = theirs.bert.encoder.layer
    D = C // H
    if site == "residual":
        places = [(theirs.bert.embeddings, "post")] + [(layer, "post") for layer in layers]
    elif site == "attention":
        places = [(layer.attention.output.dense, "post") for layer in layers]
    elif site == "ffn":
        places = [(layer.output.dense, "post") for layer in layers]
    else:
        places = [(layer.attention.output.dense, "pre") for layer in layers]
    m_clean = _hf_metric(theirs, ids_clean, pos, a, f)
    m_corr = _hf_metric(theirs, ids_corr, pos, a, f)
    T = ids_clean.shape[1]
    out = np.zeros((len(places), H if site == "heads" else T))
    for row, (module, kind) in enumerate(places):
        clean = _capture(theirs, ids_clean, module, kind)
        for col in range(out.shape[1]):
            if site == "heads":

                def fn(mod, args, clean=clean, col=col):
                    x = args[0].clone()
                    x[..., col * D : (col + 1) * D] = clean[..., col * D : (col + 1) * D]
                    return (x, *args[1:])

            else:

                def fn(mod, args, out, clean=clean, col=col):
                    x = _first(out).clone()
                    x[:, col] = clean[:, col]
                    return _replace_first(out, x)

            m = _hf_metric(theirs, ids_corr, pos, a, f, (module, kind, fn))
            out[row, col] = (m - m_corr) / (m_clean - m_corr)
    return out, m_clean, m_corr


@pytest.mark.parametrize("site", SITES)
def test_patching_matches_transformers_with_hooks(pair, site):
    bundle, theirs = pair
    ours = activation_patching(bundle, CLEAN, CORRUPTED, ANSWER, FOIL, site)
    tok = bundle.tokenizer
    ids = [torch.tensor([tok.encode(s).ids]) for s in (CLEAN, CORRUPTED)]
    cfg = bundle.config
    ref, m_clean, m_corr = _hf_patching(
        theirs,
        *ids,
        ours.position,
        tok.vocab[ANSWER],
        tok.vocab[FOIL],
        site,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.hidden_size,
    )
    assert abs(ours.clean - m_clean) <= 1e-4 and abs(ours.corrupted - m_corr) <= 1e-4
    assert ours.effect.shape == ref.shape
    assert abs(ours.clean - ours.corrupted) > 0.5, "the pair must move the metric for the check to mean anything"
    assert np.abs(ours.effect - ref).max() <= 1e-4


def test_patching_identities_and_top_k(pair):
    bundle, _ = pair
    r = activation_patching(bundle, CLEAN, CORRUPTED, ANSWER, FOIL, "residual", k=3)
    L, T = bundle.config.num_hidden_layers, len(r.clean_tokens)
    p = r.position
    assert r.effect.shape == (L + 1, T) and r.rows[0] == "embeddings" and r.rows[-1] == f"layer {L}"
    # the last layer: only the [MASK]'s state reaches the head
    assert abs(r.effect[L, p] - 1) <= 1e-5
    assert np.abs(np.delete(r.effect[L], p)).max() <= 1e-5
    # the embeddings: the one token that differs carries everything; identical tokens nothing
    differ = [i for i, (x, y) in enumerate(zip(r.clean_tokens, r.corrupted_tokens)) if x != y]
    assert differ == [T - 2] and r.columns[T - 2] == "good/bad"
    assert abs(r.effect[0, T - 2] - 1) <= 1e-5
    assert np.abs(np.delete(r.effect[0], T - 2)).max() <= 1e-5
    # each patched run's top-k is read at the [MASK]; the fully restoring one is the clean run's
    assert r.top_ids.shape == (L + 1, T, 3) and len(r.top_tokens[L][p]) == 3
    assert np.all(np.diff(r.top_probs, axis=-1) <= 0)
    assert np.allclose(r.patched[L, p], r.clean, atol=1e-5)
    heads = activation_patching(bundle, CLEAN, CORRUPTED, ANSWER, FOIL, "heads")
    assert heads.effect.shape == (L, bundle.config.num_attention_heads) and heads.columns[0] == "head 1"


@pytest.mark.parametrize(
    "clean, corrupted, answer, foil, said",
    [
        ("the film was [MASK] good", "the film [MASK] good", "good", "bad", "7 tokens and the corrupted one 6"),
        ("the film was good", "the film was bad", "good", "bad", "no [MASK]"),
        ("the [MASK] was [MASK]", "the film was [MASK]", "good", "bad", "2 [MASK]s"),
        ("the film [MASK] good", "the [MASK] was good", "good", "bad", "same place"),
        (CLEAN, CORRUPTED, "wonderful", "bad", "not a single token"),
        (CLEAN, CORRUPTED, "good", "good", "the same word"),
        (CLEAN, CLEAN, "good", "bad", "nothing to restore"),
        ("[MASK] " + "the film " * 40, "[MASK] " + "a film " * 40, "good", "bad", "longer than this model's 64"),
    ],
)
def test_patching_refuses_with_a_reason(pair, clean, corrupted, answer, foil, said):
    bundle, _ = pair
    with pytest.raises(InputError) as e:
        activation_patching(bundle, clean, corrupted, answer, foil)
    msg = str(e.value)
    assert said in msg or said.replace("[MASK]", "MASK") in msg, msg


def test_patching_refuses_a_site_a_classifier_and_too_many_tokens(pair, monkeypatch):
    bundle, _ = pair
    monkeypatch.setattr(patching, "MAX_TOKENS", 8)
    with pytest.raises(InputError, match="10 tokens is more than the 8"):
        activation_patching(bundle, CLEAN, CORRUPTED, ANSWER, FOIL)
    with pytest.raises(InputError, match="unknown site"):
        activation_patching(bundle, CLEAN, CORRUPTED, ANSWER, FOIL, "mlp")
    with pytest.raises(InputError, match="masked-language-model head, and .* has none"):
        activation_patching(minilm_tiny_classifier(), CLEAN, CORRUPTED, ANSWER, FOIL)


def test_the_knows_question_is_the_first_layer_whose_mask_restores_half(pair):
    """The class question "at which layer does the [MASK] know?": the rule on the patching result,
    the layers as choices, the [MASK]'s column as the figure; a pair patching refuses, refused."""
    from app.board import questions
    from app.class_store import classroom

    bundle, _ = pair
    b = questions.knows_question(bundle, patching.Pair(CLEAN, CORRUPTED, ANSWER, FOIL), "tiny")
    r = activation_patching(bundle, CLEAN, CORRUPTED, ANSWER, FOIL, "residual")
    share = r.effect[:, r.position]
    first = next(i for i, s in enumerate(share) if s >= questions.KNOWS_SHARE == 0.5)
    assert b["kind"] == "knows" and b["choices"] == r.rows and b["answer"] == r.rows[first]
    assert np.allclose(bar_heights(b), share, atol=1e-6) and len(json.dumps(b).encode()) < classroom.BODY_BYTES
    with pytest.raises(InputError, match="tokens"):
        questions.knows_question(bundle, patching.Pair(CLEAN, "the film [MASK] good", ANSWER, FOIL), "tiny")


def bar_heights(body: dict) -> np.ndarray:
    """The bars' heights of a body's figure (plotly keeps an array as base64 of its dtype)."""
    y = json.loads(body["figure"])["data"][0]["y"]
    return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]) if isinstance(y, dict) else np.asarray(y)


def test_the_agreement_preset_on_minilm_moves_from_the_subject_to_the_mask():
    """What a class sees on the preset: at the embeddings only the changed word (keys/key) carries
    the answer; by the last layers the [MASK] does; in between both share it."""
    bundle = bert.load("minilm-l6")
    r = activation_patching(bundle, *PRESETS["Number agreement"], "residual")
    subject, mask = r.columns.index("keys/key"), r.position
    assert r.clean > r.corrupted
    assert r.effect[0, subject] == pytest.approx(1, abs=1e-4) and r.effect[-1, mask] == pytest.approx(1, abs=1e-4)
    assert r.effect[1, subject] > 0.5 and r.effect[1, mask] < 0.1, "early: at the subject"
    assert r.effect[-2, mask] > 0.5 and r.effect[-2, subject] < 0.2, "late: at the [MASK]"
    from app.board.questions import knows_question

    knows = knows_question(bundle, PRESETS["Number agreement"], "minilm-l6")["answer"]
    assert knows not in (r.rows[0], r.rows[-1]), "the [MASK] knows the number mid-network, not only at the end"
