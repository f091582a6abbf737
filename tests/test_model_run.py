"""BertModel.run, the one way to run the model part-way: its pieces add up to the model's own
forward, its edits act where they say, two threads editing one model see only their own
edits, and a run that cannot be made is refused with why."""

from __future__ import annotations

import threading

import pytest
import torch

from bert.errors import InputError
from bert.model import BertModel
from tests.helpers import tiny_config

L, H = 3, 4


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = BertModel(tiny_config(30, num_hidden_layers=L)).eval()
    with torch.no_grad():  # every bias and norm matters, as in test_parity
        for name, p in m.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn(p.shape))
    return m


IDS = torch.tensor([[2, 7, 8, 9, 10, 3], [2, 11, 12, 13, 14, 3]])


def test_a_run_in_two_parts_is_the_models_forward(model):
    with torch.inference_mode():
        out = model(IDS, output_hidden_states=True, output_attentions=True, output_qkv=True)
        low = model.run(IDS, stop=1, record=["residual", "probs", "queries"])
        high = model.run(low.state, 1, record=["residual", "probs", "keys"])
    whole = (*low.cache["residual"], *high.cache["residual"][1:])
    for got, want in zip(whole, out.hidden_states, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(high.state, out.last_hidden_state, rtol=0, atol=0)
    for got, want in zip((*low.cache["probs"], *high.cache["probs"]), out.attentions, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(low.cache["queries"][0], out.queries[0], rtol=0, atol=0)
    assert [k.shape for k in high.cache["keys"]] == [k.shape for k in out.keys[1:]]


def test_an_edit_acts_at_its_site_and_layer_only(model):
    def zero_head_2(ctx):
        ctx = ctx.clone()
        ctx[:, 2] = 0.0
        return ctx

    hm = torch.ones(L, H)
    hm[1, 2] = 0.0
    with torch.inference_mode():
        plain = model.run(IDS, record=["residual", "heads"])
        edited = model.run(IDS, edits={("heads", 1): zero_head_2}, record=["residual", "heads"])
        masked = model(IDS, head_mask=hm)
        shifted = model.run(plain.cache["residual"][2] + 1.0, 2)
        at_two = model.run(IDS, edits={("residual", 2): lambda x: x + 1.0})
    torch.testing.assert_close(edited.state, masked.last_hidden_state, rtol=0, atol=0)
    for l in range(2):  # below the edit: as without it
        torch.testing.assert_close(edited.cache["residual"][l], plain.cache["residual"][l], rtol=0, atol=0)
    assert bool((edited.cache["heads"][1][:, 2] == 0).all()) and not bool((plain.cache["heads"][1][:, 2] == 0).all())
    assert not torch.equal(edited.state, plain.state)
    torch.testing.assert_close(at_two.state, shifted.state, rtol=0, atol=0)


def test_two_threads_editing_one_model_see_only_their_own_edits(model):
    """Each thread's edit waits inside the run until the other's is inside its own: the two runs
    are in the model at once, and each gives what it gives alone."""
    both_inside = threading.Barrier(2, timeout=60)
    scales = (0.0, 3.0)
    alone = {}
    with torch.inference_mode():
        for s in scales:
            alone[s] = model.run(IDS, edits={("ffn", 1): lambda h, s=s: h * s}).state
    got, errors = {}, []

    def work(s):
        def edit(h):
            both_inside.wait()
            return h * s

        try:
            with torch.inference_mode():
                got[s] = model.run(IDS, edits={("ffn", 1): edit}).state
        except Exception as e:  # noqa: BLE001 - the assertion below reports it
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in scales]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and set(got) == set(scales)
    for s in scales:
        torch.testing.assert_close(got[s], alone[s], rtol=0, atol=0)
    assert not torch.equal(got[0.0], got[3.0])


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"start": 2, "stop": 1}, "0 <= start <= stop <= 3"),
        ({"stop": 4}, "0 <= start <= stop <= 3"),
        ({"record": ["hidden"]}, "unknown site 'hidden'"),
        ({"edits": {("probs", 0): lambda p: p}}, "cannot edit 'probs'"),
        ({"edits": {("ffn", 2): lambda p: p}, "stop": 2}, "layers 0..1"),
    ],
)
def test_a_run_that_cannot_be_made_says_why(model, kw, says):
    with pytest.raises(InputError, match=says.replace("(", r"\(").replace(".", r"\.")):
        model.run(IDS, **kw)


def test_a_state_of_the_wrong_width_is_refused(model):
    with pytest.raises(InputError, match=r"\(batch, tokens, 32\)"):
        model.run(torch.zeros(1, 6, 16), 1)
