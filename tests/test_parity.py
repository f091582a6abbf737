"""Our BERT against transformers' BERT (eager attention) on the same weights, fp32, to 1e-4.

BERT_EXPLORER_TEST_DEVICE=cuda runs every test on the GPU (scripts/device_check.sh): TF32 off,
and every tolerance at least 1e-3 there (cuBLAS sums in another order); on the CPU they are as written.
"""

import os

import pytest
import torch

import bert
from benchmarks.models import BASE
from bert.checkpoint.hf_names import hf_to_ours
from bert.config import BertConfig
from bert.model import BertForPreTraining
from tests.helpers import TINY_SIZES

transformers = pytest.importorskip("transformers")
DEVICE = torch.device(os.environ.get("BERT_EXPLORER_TEST_DEVICE", "cpu"))
ON_GPU = DEVICE.type != "cpu"
if ON_GPU:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def tol(cpu: float) -> float:
    """The tolerance `cpu` on the CPU; on a GPU at least 1e-3."""
    return max(cpu, 1e-3) if ON_GPU else cpu


TOL = tol(1e-4)


@pytest.fixture(autouse=True)
def _on_test_device():
    """Every tensor and model a test makes is on DEVICE (torch's default device meanwhile)."""
    if not ON_GPU:
        yield
        return
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        pytest.fail("BERT_EXPLORER_TEST_DEVICE=cuda but torch sees no CUDA GPU")
    with torch.device(DEVICE):
        yield


CONFIGS = {
    "tiny": dict(vocab_size=99, **TINY_SIZES, type_vocab_size=2),
    "odd": dict(
        vocab_size=101,
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=3,
        intermediate_size=50,
        max_position_embeddings=40,
        type_vocab_size=3,
    ),
    "base": BASE,
}


def make_pair(kind, seed=0):
    """A transformers BertForPreTraining with random weights, and ours loaded from its state."""
    torch.manual_seed(seed)
    hf_config = transformers.BertConfig(**CONFIGS[kind], attn_implementation="eager")
    theirs = transformers.BertForPreTraining(hf_config).eval()
    with torch.no_grad():  # non-trivial LayerNorm and bias values so every parameter matters
        for name, p in theirs.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    config = BertConfig(**CONFIGS[kind], hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    ours = BertForPreTraining(config).eval()
    state, unused = hf_to_ours(theirs.state_dict(), config)
    assert unused == []
    ours._load = ours.load_state_dict(state, strict=False)
    assert ours._load.missing_keys == ["mlm.word_embeddings.weight"] or ours._load.missing_keys == []
    return ours, theirs


def inputs(config, B=2, T=11, seed=1, pad=True):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, config["vocab_size"], (B, T), generator=g, device="cpu")  # the same on any device
    types = torch.randint(0, config["type_vocab_size"], (B, T), generator=g, device="cpu")
    mask = torch.ones(B, T, dtype=torch.long, device="cpu")
    if pad:
        mask[1, T - 4 :] = 0
        ids[1, T - 4 :] = 0
    return ids.to(DEVICE), types.to(DEVICE), mask.to(DEVICE)


def maxdiff(a, b):
    return (a - b).abs().max().item()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["tiny", "odd", "base"])
def test_pretraining_parity(kind):
    ours, theirs = make_pair(kind)
    T = 32 if kind == "base" else 11
    ids, types, mask = inputs(CONFIGS[kind], T=T)
    with torch.no_grad():
        a = ours(ids, types, mask, output_attentions=True, output_hidden_states=True)
        b = theirs(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
    real = mask.bool()
    assert maxdiff(a.bert.last_hidden_state[real], b.hidden_states[-1][real]) <= TOL
    assert len(a.hidden_states) == len(b.hidden_states) == CONFIGS[kind]["num_hidden_layers"] + 1
    for x, y in zip(a.hidden_states, b.hidden_states):
        assert maxdiff(x[real], y[real]) <= TOL
    assert len(a.attentions) == len(b.attentions)
    for x, y in zip(a.attentions, b.attentions):
        assert x.shape == y.shape
        assert maxdiff(x, y) <= TOL
    assert maxdiff(a.mlm_logits[real], b.prediction_logits[real]) <= TOL
    assert maxdiff(a.nsp_logits, b.seq_relationship_logits) <= TOL


@pytest.mark.parametrize("kind", ["tiny", "odd"])
def test_sdpa_path_matches_eager_path(kind):
    ours, _ = make_pair(kind)
    ids, types, mask = inputs(CONFIGS[kind])
    with torch.no_grad():
        fast = ours.bert(ids, types, mask)
        slow = ours.bert(ids, types, mask, output_attentions=True)
    assert maxdiff(fast.last_hidden_state, slow.last_hidden_state) <= tol(1e-5)


def test_padding_does_not_change_real_tokens():
    ours, _ = make_pair("tiny")
    ids, types, _ = inputs(CONFIGS["tiny"], B=1, T=7, pad=False)
    padded = torch.cat([ids, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    ptypes = torch.cat([types, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    pmask = torch.cat([torch.ones(1, 7), torch.zeros(1, 5)], dim=1).long()
    with torch.no_grad():
        short = ours(ids, types, torch.ones(1, 7, dtype=torch.long), output_attentions=True)
        long = ours(padded, ptypes, pmask, output_attentions=True)
    assert maxdiff(short.bert.last_hidden_state, long.bert.last_hidden_state[:, :7]) <= tol(1e-5)
    assert maxdiff(short.mlm_logits, long.mlm_logits[:, :7]) <= tol(1e-4)
    assert maxdiff(short.nsp_logits, long.nsp_logits) <= tol(1e-5)
    for a in long.attentions:  # no attention goes to padding, no NaN anywhere
        assert torch.isfinite(a).all()
        assert a[..., 7:].max().item() < 1e-6


def test_fully_padded_row_gives_no_nan():
    ours, _ = make_pair("tiny")
    ids = torch.zeros(2, 5, dtype=torch.long)
    mask = torch.zeros(2, 5, dtype=torch.long)
    mask[0] = 1
    with torch.no_grad():
        for attn in (False, True):
            out = ours(ids, attention_mask=mask, output_attentions=attn)
            assert torch.isfinite(out.mlm_logits).all()


def test_masked_only_mlm_logits_equal_full_logits():
    ours, _ = make_pair("tiny")
    ids, types, mask = inputs(CONFIGS["tiny"])
    labels = torch.full_like(ids, -100)
    labels[0, 3] = 5
    labels[1, 1] = 7
    with torch.no_grad():
        full = ours(ids, types, mask)
        part = ours(ids, types, mask, mlm_labels=labels, nsp_labels=torch.tensor([0, 1]))
    assert part.mlm_logits.shape == (2, CONFIGS["tiny"]["vocab_size"])
    assert maxdiff(part.mlm_logits[0], full.mlm_logits[0, 3]) <= tol(1e-5)
    assert maxdiff(part.mlm_logits[1], full.mlm_logits[1, 1]) <= tol(1e-5)
    expected = torch.nn.functional.cross_entropy(full.mlm_logits[[0, 1], [3, 1]], torch.tensor([5, 7]))
    assert abs(part.mlm_loss.item() - expected.item()) <= tol(1e-5)


def _tiny_tokenizer(n):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return bert.Tokenizer(specials + [f"w{i}" for i in range(n - len(specials))])


def test_export_hf_loads_in_transformers_with_no_missing_keys(tmp_path):
    ours, _ = make_pair("odd")
    bundle = bert.Bundle(model=ours, tokenizer=_tiny_tokenizer(CONFIGS["odd"]["vocab_size"]), name="odd")
    out = bert.export_hf(bundle, tmp_path / "hf")
    theirs, info = transformers.BertForPreTraining.from_pretrained(
        out, output_loading_info=True, attn_implementation="eager"
    )
    assert info["missing_keys"] == [] or info["missing_keys"] == set()
    assert not info["unexpected_keys"]
    ids, types, mask = inputs(CONFIGS["odd"])
    with torch.no_grad():
        a = ours(ids, types, mask)
        b = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask)
    real = mask.bool()
    assert maxdiff(a.mlm_logits[real], b.prediction_logits[real]) <= TOL
    assert maxdiff(a.nsp_logits, b.seq_relationship_logits) <= TOL


def test_save_and_load_round_trip(tmp_path):
    ours, _ = make_pair("tiny")
    bundle = bert.Bundle(model=ours, tokenizer=_tiny_tokenizer(99), name="tiny", card="# Tiny\n")
    bert.save(bundle, tmp_path / "m")
    again = bert.load(tmp_path / "m")
    assert again.notes == []
    ids, types, mask = inputs(CONFIGS["tiny"])
    with torch.no_grad():
        assert maxdiff(ours(ids, types, mask).mlm_logits, again.model(ids, types, mask).mlm_logits) == 0


def test_minilm_default_matches_transformers():
    from bert.checkpoint.builtins import minilm_package_dir

    folder = minilm_package_dir()
    bundle = bert.load("all-minilm-l6-v2")  # the built-in: the published weights, as set-up installs them
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    enc = bundle.tokenizer.encode("The cat sat on the mat.", "It was warm there.")
    ids = torch.tensor([enc.ids])
    types = torch.tensor([enc.type_ids])
    with torch.no_grad():
        a = bundle.model.bert(ids, types, output_attentions=True, output_hidden_states=True)
        b = theirs(input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True)
    assert maxdiff(a.last_hidden_state, b.last_hidden_state) <= TOL
    assert maxdiff(a.pooler_output, b.pooler_output) <= TOL
    for x, y in zip(a.attentions, b.attentions):
        assert maxdiff(x, y) <= TOL


@pytest.mark.parametrize("kind", ["tiny", "odd"])
def test_pretraining_last_layer_only_at_masked_rows_is_the_same_step(kind):
    """In training, the last layer runs only at the masked positions and [CLS]
    (EncoderLayer.forward_rows): with dropout off, loss, logits and every gradient equal those
    of the full layer (eval mode runs it in full), also with padding and a row with no mask."""
    cfg = BertConfig(**CONFIGS[kind], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(1)
    model = BertForPreTraining(cfg)
    B, T = 4, 24
    ids = torch.randint(5, cfg.vocab_size, (B, T))
    types = torch.randint(0, cfg.type_vocab_size, (B, T))
    attn = torch.ones(B, T, dtype=torch.long)
    attn[1, 15:] = 0  # padding in one row
    labels = torch.full((B, T), -100)
    for b, cols in enumerate([[1, 5, 9], [2, 3, 14], [], [0, 7, 8, 23]]):  # row 2: nothing masked
        labels[b, cols] = ids[b, cols]
    nsp = torch.tensor([0, 1, 1, 0])
    grads, outs = [], []
    for train in (True, False):
        model.train(train)
        model.zero_grad()
        out = model(ids, types, attn, mlm_labels=labels, nsp_labels=nsp)
        out.loss.backward()
        outs.append(out)
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    pruned, full = outs
    assert pruned.mlm_logits.shape == full.mlm_logits.shape == (10, cfg.vocab_size)
    assert torch.allclose(pruned.loss, full.loss, atol=tol(1e-6))
    assert torch.allclose(pruned.mlm_logits, full.mlm_logits, atol=tol(1e-5))
    assert torch.allclose(pruned.nsp_logits, full.nsp_logits, atol=tol(1e-5))
    for n in grads[1]:
        assert torch.allclose(grads[0][n], grads[1][n], atol=tol(1e-5), rtol=tol(1e-4)), n
    # the pruned output really is pruned: zero where nobody reads, full rows where the head does
    h_p, h_f = pruned.bert.last_hidden_state, full.bert.last_hidden_state
    want = labels != -100
    want[:, 0] = True
    assert (h_p[~want] == 0).all() and torch.allclose(h_p[want], h_f[want], atol=tol(1e-5))


def test_cls_classifier_runs_last_layer_at_cls_only_and_matches_transformers():
    """With cls pooling only [CLS] is read, so our last layer runs there alone: the loss, the
    logits and every gradient still equal transformers' BertForSequenceClassification."""
    from benchmarks.models import ours_from_theirs
    from bert.task_models import BertForSequenceClassification

    torch.manual_seed(0)
    hf_config = transformers.BertConfig(**CONFIGS["odd"], attn_implementation="eager", num_labels=3)
    theirs = transformers.BertForSequenceClassification(hf_config).eval()
    config = BertConfig(**CONFIGS["odd"], id2label={0: "a", 1: "b", 2: "c"}, classifier_pooling="cls")
    ours = ours_from_theirs(theirs, BertForSequenceClassification(config), config).eval()
    ids, types, mask = inputs(CONFIGS["odd"], B=3, T=13)
    labels = torch.tensor([0, 2, 1])
    a = ours(ids, types, mask, labels=labels)
    b = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)
    assert maxdiff(a.logits, b.logits) <= TOL and abs(a.loss.item() - b.loss.item()) <= TOL
    h = a.bert.last_hidden_state
    assert (h[:, 1:] == 0).all() and (h[:, 0] != 0).any()  # the last layer ran at [CLS] only
    a.loss.backward()
    b.loss.backward()
    theirs_grads = {k: v.grad for k, v in theirs.named_parameters()}
    state, _ = hf_to_ours(theirs_grads, config)
    for name, p in ours.named_parameters():
        assert maxdiff(p.grad, state[name]) <= TOL, name
    full = ours(ids, types, mask, output_hidden_states=True)  # nothing pruned when asked
    assert maxdiff(full.logits, a.logits) <= tol(1e-5) and (full.bert.last_hidden_state[:, 1:] != 0).any()


# --- attention masks (bert/attention_masks.py): a decoder's and a prefix-LM's reading of the same weights ---


def test_causal_pattern_equals_transformers_decoder_on_the_same_weights():
    """The "causal" pattern is transformers' BertModel(is_decoder=True): hidden states and attentions."""
    ours, theirs = make_pair("tiny")
    cfg = transformers.BertConfig(**CONFIGS["tiny"], attn_implementation="eager", is_decoder=True)
    decoder = transformers.BertModel(cfg).eval()
    assert not decoder.load_state_dict(theirs.bert.state_dict()).missing_keys
    ids, types, mask = inputs(CONFIGS["tiny"])
    with torch.no_grad():
        a = ours.bert(ids, types, mask, output_attentions=True, output_hidden_states=True, mask_kind="causal")
        b = decoder(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
        encoder = ours.bert(ids, types, mask, output_hidden_states=True)
        fast = ours.bert(ids, types, mask, mask_kind="causal")  # SDPA with the pattern's mask
    real = mask.bool()
    for x, y in zip(a.hidden_states, b.hidden_states, strict=True):
        assert maxdiff(x[real], y[real]) <= TOL
    for x, y in zip(a.attentions, b.attentions, strict=True):
        assert x.shape == y.shape and maxdiff(x, y) <= TOL
    assert maxdiff(fast.last_hidden_state[real], a.last_hidden_state[real]) <= tol(1e-5)
    # the pattern changed something: the encoder's reading differs from the decoder's
    assert maxdiff(encoder.last_hidden_state[real], a.last_hidden_state[real]) > 1e-2


def test_prefix_pattern_by_construction():
    """A prefix of k: every hidden cell gets exactly 0 attention; the first k tokens' outputs are
    those of a bidirectional run over those k tokens alone; no token is changed by what follows it
    past the prefix; k = 0 and 1 are causal, k = T is bidirectional."""
    ours, _ = make_pair("tiny")
    ids, types, _ = inputs(CONFIGS["tiny"], B=1, T=11, pad=False)
    T, k = 11, 4
    with torch.no_grad():
        run = lambda n, p, **kw: ours.bert(ids[:, :n], types[:, :n], mask_kind=p, **kw)  # noqa: E731
        full = run(T, k, output_attentions=True)
        i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
        hidden = (j > i) & ~((i < k) & (j < k))  # (T, T): later keys, outside the prefix block
        for a in full.attentions:  # (1, H, T, T)
            assert a[..., hidden].abs().max().item() == 0.0
            assert a[..., ~hidden].min().item() > 0.0  # everything allowed is read a little
        alone = run(k, "bidirectional").last_hidden_state
        assert maxdiff(full.last_hidden_state[:, :k], alone) <= tol(1e-5)
        for n in (k, k + 2, T - 1):  # cut after n tokens: the first n outputs do not move
            assert maxdiff(run(n, k).last_hidden_state, full.last_hidden_state[:, :n]) <= tol(1e-5)
        causal = run(T, "causal").last_hidden_state
        for same in (0, 1):
            assert maxdiff(run(T, same).last_hidden_state, causal) == 0.0
        assert maxdiff(run(T, T).last_hidden_state, run(T, "bidirectional").last_hidden_state) == 0.0
        assert maxdiff(full.last_hidden_state[:, :k], causal[:, :k]) > 1e-2  # the prefix reads its right
        assert maxdiff(full.last_hidden_state[:, k:], causal[:, k:]) > 1e-5  # and later tokens read the prefix


def test_patterns_compose_with_padding_rows_and_head_mask():
    """With padding, a head mask, and the last-layer-only rows (pre-training and the [CLS]
    classifier), a pattern gives the same real outputs as the full layers under it."""
    ours, _ = make_pair("tiny")
    ids, types, mask = inputs(CONFIGS["tiny"])
    real = mask.bool()
    hm = torch.ones(CONFIGS["tiny"]["num_hidden_layers"], CONFIGS["tiny"]["num_attention_heads"])
    hm[0, 1] = 0
    rows = torch.zeros_like(ids, dtype=torch.bool)
    rows[0, [2, 5]] = True
    rows[1, 3] = True
    for pattern in ("causal", 3):
        with torch.no_grad():
            full = ours.bert(ids, types, mask, mask_kind=pattern, output_attentions=True)
            pruned = ours.bert(ids, types, mask, mask_kind=pattern, rows=rows)
            for b in range(2):  # padding never read; one row alone equals its batch row
                n = int(mask[b].sum())
                alone = ours.bert(ids[b : b + 1, :n], types[b : b + 1, :n], mask_kind=pattern)
                assert maxdiff(alone.last_hidden_state[0], full.last_hidden_state[b, :n]) <= tol(1e-5)
            off = ours.bert(ids, types, mask, mask_kind=pattern, head_mask=hm, output_attentions=True)
        want = rows.clone()
        want[:, 0] = True
        assert maxdiff(pruned.last_hidden_state[want], full.last_hidden_state[want]) <= tol(1e-5)
        assert maxdiff(off.last_hidden_state[real], full.last_hidden_state[real]) > 1e-4
        assert all(a[1, ..., 7:].max().item() < 1e-6 for a in full.attentions)  # padding: no weight


def test_bad_patterns_are_input_errors_naming_the_length():
    ours, _ = make_pair("tiny")
    ids, types, _ = inputs(CONFIGS["tiny"], B=1, T=6, pad=False)
    with pytest.raises(bert.InputError, match="has 6 tokens"):
        ours(ids, types, mask_kind=7)
    for bad in (-1, "left", True, 2.5):
        with pytest.raises(bert.InputError):
            ours(ids, types, mask_kind=bad)
    assert ours(ids, types, mask_kind=6).mlm_logits.shape[1] == 6  # the whole input is a prefix
