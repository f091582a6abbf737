"""Continue a text with a model trained on the next word (bert/train/next_word.py).

    cont = continue_text(bundle, "a piece of", n=10, greedy=True)
    cont.text                 # the prompt and what it wrote
    cont.steps[0].top         # [(token, p), ...]: the 10 likeliest next tokens at step 1
    cont.steps[0].attention   # (L, H, P): what the position that chose token 1 looked at

The model reads [CLS] and the prompt with the causal mask; at each step the MLM head at the
last position gives the next token's distribution, and the chosen token is appended. Greedy takes
its most likely token; sampling draws from softmax(logits / temperature), restricted to the
`top_k` likeliest when top_k is given, with a torch.Generator seeded by `seed` (the same seed, the
same text). [PAD], [CLS] and [MASK] never follow a token in training and are never chosen; [SEP]
(the end of a document) ends the text. Each step re-runs the whole sequence (no key/value cache):
prompts are short, and the causal mask makes each step's rows those of one pass.

Dimension letters: L layers, H heads, P tokens read at that step, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..attention_masks import CAUSAL
from ..bundle import Bundle
from ..errors import InputError

TOP = 10  # each step shows this many likeliest next tokens
MAX_NEW = 100  # the most tokens one call writes


@dataclass
class Step:
    """One written token."""

    token: str
    token_id: int
    prob: float  # its probability in the distribution it was drawn from
    top: list[tuple[str, float]]  # the TOP likeliest tokens of that distribution, most likely first
    attention: Tensor  # (L, H, P): the causal attention row of the position that chose it (the
    # last token read) over the P tokens read, [CLS] first


@dataclass
class Continuation:
    prompt: list[str]  # the tokens read before the first step, [CLS] first
    steps: list[Step]
    cut: int  # tokens dropped from the prompt's start to leave room (0: none)
    ended: bool  # it wrote [SEP] (the end of a text) before n tokens

    @property
    def tokens(self) -> list[str]:
        """Every token read or written, [CLS] first."""
        return [*self.prompt, *(s.token for s in self.steps)]

    def text(self, tokenizer) -> str:
        """The prompt and what it wrote, word pieces glued, [CLS] and [SEP] left out."""
        return tokenizer.decode([tokenizer.cls_id, *self.prompt_ids, *(s.token_id for s in self.steps)], True)

    prompt_ids: tuple[int, ...] = ()  # the prompt's ids after [CLS]


def check_sampling(n: int, greedy: bool, temperature: float, top_k: int | None) -> None:
    """InputError unless 1 <= n <= MAX_NEW and, when sampling, temperature > 0 and top_k >= 1."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_NEW:
        raise InputError(f"the number of tokens to write must be from 1 to {MAX_NEW}, got {n!r}")
    if greedy:
        return
    if not temperature > 0:  # also rejects nan
        raise InputError(f"the temperature must be above 0 (1 samples from the model as it is), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise InputError(f"top-k must be 1 or more (1 is greedy), got {top_k!r}")


def next_distribution(logits: Tensor, temperature: float = 1.0, top_k: int | None = None) -> Tensor:
    """logits (V,) -> probabilities (V,) summing to 1: softmax(logits / temperature), zero outside
    the top_k largest logits when top_k is given (ties at the k-th are kept)."""
    z = logits.float() / temperature
    if top_k is not None and top_k < z.numel():
        kth = z.topk(top_k).values[-1]
        z = z.masked_fill(z < kth, float("-inf"))
    return z.softmax(-1)


def _prompt(bundle: Bundle, text: str, n: int, greedy: bool, temperature: float, top_k: int | None):
    """([CLS] and the prompt's ids, the tokens to write, how many prompt tokens were cut from its
    start to leave room for them), once the text and the settings are ones this model can continue."""
    if not text or not text.strip():
        raise InputError("type some text to continue")
    if not bundle.has_mlm:
        raise InputError(f"{bundle.name} is a classifier: it has no head that predicts words")
    check_sampling(n, greedy, temperature, top_k)
    tok, room = bundle.tokenizer, bundle.model.config.max_tokens
    if room < 3:
        raise InputError(f"{bundle.name} reads at most {room} tokens: too few to continue a text")
    n = min(n, room - 2)  # [CLS], at least one prompt token
    words = tok.encode(text, max_length=None, truncation=False, add_special_tokens=False).ids
    if not words:
        raise InputError("the text has no tokens this model knows (only spaces or control characters?)")
    cut = max(0, len(words) - (room - 1 - n))
    return [tok.cls_id, *words[cut:]], n, cut


def _next_step(bundle: Bundle, x: torch.Tensor, never: list[int], greedy, temperature, top_k, g) -> Step:
    """One token after the ids `x` (1, P), under the causal pattern: its choice (never one of
    `never`), its probability, the TOP candidates and the last position's attention (L, H, P)."""
    model, tok = bundle.model, bundle.tokenizer
    out = model.bert(x, mask_kind=CAUSAL, output_attentions=True)
    logits = model.mlm(out.last_hidden_state[0, -1]).float().cpu()  # (V,)
    logits[never] = float("-inf")
    if greedy:
        p = next_distribution(logits)
        choice = int(p.argmax())
    else:
        p = next_distribution(logits, temperature, top_k)
        choice = int(torch.multinomial(p, 1, generator=g))
    best = p.topk(min(TOP, p.numel()))
    top = [(tok.ids_to_tokens[j], float(q)) for q, j in zip(best.values.tolist(), best.indices.tolist())]
    att = torch.stack([a[0, :, -1, :] for a in out.attentions]).float().cpu()  # (L, H, P)
    return Step(tok.ids_to_tokens[choice], choice, float(p[choice]), top, att)


@torch.inference_mode()
def continue_text(
    bundle: Bundle,
    text: str,
    n: int = 20,
    greedy: bool = True,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> Continuation:
    """Write up to `n` tokens after `text` (see the module's docstring). InputError for an empty
    text, a classifier, n outside 1..MAX_NEW, a temperature <= 0 or a top_k < 1 when sampling. A
    prompt too long to leave room for n tokens within the model's positions keeps its last tokens
    (`cut` says how many were dropped)."""
    model, tok = bundle.model, bundle.tokenizer
    ids, n, cut = _prompt(bundle, text, n, greedy, temperature, top_k)
    never = [i for i in (tok.pad_id, tok.cls_id, tok.mask_id) if i is not None and 0 <= i < model.config.vocab_size]
    g = torch.Generator().manual_seed(int(seed))
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    steps: list[Step] = []
    ended = False
    try:
        for _ in range(n):
            step = _next_step(bundle, torch.tensor([ids], device=device), never, greedy, temperature, top_k, g)
            steps.append(step)
            ids.append(step.token_id)
            if step.token_id == tok.sep_id:
                ended = True
                break
    finally:
        model.train(was_training)
    prompt_len = len(ids) - len(steps)
    return Continuation(
        prompt=tok.convert_ids_to_tokens(ids[:prompt_len]),
        steps=steps,
        cut=cut,
        ended=ended,
        prompt_ids=tuple(ids[1:prompt_len]),
    )
