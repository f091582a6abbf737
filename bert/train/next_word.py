"""The next-word objective (a causal language model): predict token t+1 from tokens 0..t.

The same BertForPreTraining as BERT's two games, read left to right: the encoder runs with the
"causal" attention mask (bert/attention_masks.py: each token sees itself and its left), and the MLM
head (tied to the word embeddings) is applied at every position. There is no next-sentence game.

Training sequences are windows of one stream of text: the documents (in an order that changes
with each epoch) one after another, each ended by [SEP]; every window starts with [CLS] and holds
`max_seq_length - 1` tokens of the stream. A prompt to continue is read the same way: [CLS] and its
tokens, with no [SEP] after them.

Dimension letters: B sequences, T tokens, V vocabulary, N predicted positions.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from ..attention_masks import CAUSAL
from ..bundle import Bundle
from .device import module_device
from .examples import Documents, Example, PretrainingDataset, collate
from .masking import IGNORE_INDEX
from .pretrain_eval import WordScores, evaluate_batches

MLM_NSP, NEXT_WORD = "mlm+nsp", "next-word"
OBJECTIVES = (MLM_NSP, NEXT_WORD)
PROBE = "a piece of"  # the default next-word probe: its next words are shown at every evaluation
PROBE_POSITIONS = 4  # the probe shows the guesses after its last this-many tokens


class NextWordDataset(PretrainingDataset):
    """Windows of the document stream (see the module's docstring), new windows each epoch:
    the documents are shuffled by (seed, epoch) before they are joined. Its examples' token
    types are all 0 and their nsp_label 0 (unused)."""

    def examples(self, epoch: int = 0) -> list[Example]:
        if self._cache is None or self._cache[0] != epoch:
            self._cache = (
                epoch,
                stream_windows(
                    self.documents,
                    self.max_seq_length,
                    self.cls_id,
                    self.sep_id,
                    random.Random(f"next-word:{self.seed}:{epoch}"),
                ),
            )
        return self._cache[1]


def stream_windows(
    documents: Documents, max_seq_length: int, cls_id: int, sep_id: int, rng: random.Random
) -> list[Example]:
    """[CLS] + `max_seq_length - 1` tokens of the joined documents (each ended by [SEP]), shuffled
    by `rng`; the last window is shorter; one of fewer than 2 tokens after [CLS] is dropped."""
    if max_seq_length < 3:
        raise ValueError("max_seq_length must be at least 3 ([CLS] and two tokens)")
    order = list(range(len(documents)))
    rng.shuffle(order)
    stream: list[int] = []
    for d in order:
        for sentence in documents[d]:
            stream.extend(sentence)
        stream.append(sep_id)
    width = max_seq_length - 1
    out = []
    for i in range(0, len(stream), width):
        chunk = stream[i : i + width]
        if len(chunk) >= 2:
            out.append(Example([cls_id, *chunk], [0] * (len(chunk) + 1), 0))
    rng.shuffle(out)
    return out


def next_word_labels(input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T) long: at position t the token at t+1, or IGNORE_INDEX where there is none (the last
    position, and wherever t+1 is padding)."""
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    labels[:, :-1] = input_ids[:, 1:]
    if attention_mask is not None:
        labels[:, :-1] = labels[:, :-1].masked_fill(attention_mask[:, 1:] == 0, IGNORE_INDEX)
    return labels


def next_word_batch(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A collated batch (unmasked) with its mlm_labels the shifted tokens (`next_word_labels`)."""
    return {**batch, "mlm_labels": next_word_labels(batch["input_ids"], batch["attention_mask"])}


def next_word_forward(net, batch: dict[str, torch.Tensor]):
    """The model (or its DDP wrapper) on a `next_word_batch`: causal mask, the MLM head at
    every labelled position; `.loss` = `.mlm_loss` = mean cross-entropy over those positions,
    `.mlm_logits` (N, V) in the order of `batch["mlm_labels"] != -100`."""
    return net(
        batch["input_ids"],
        batch["token_type_ids"],
        batch["attention_mask"],
        mlm_labels=batch["mlm_labels"],
        mask_kind=CAUSAL,
    )


def fixed_eval_batches(dataset: PretrainingDataset, pad_id: int, n_sequences: int, batch_size: int) -> list[dict]:
    """The first `n_sequences` windows of epoch 0, as next-word batches."""
    examples = dataset.examples(epoch=0)[:n_sequences]
    return [next_word_batch(collate(examples[i : i + batch_size], pad_id)) for i in range(0, len(examples), batch_size)]


@torch.inference_mode()
def evaluate(
    model,
    batches: list[dict[str, torch.Tensor]],
    baseline_id: int | None = None,
    precision: str = "fp32",
    stop=None,
) -> dict[str, float] | None:
    """Next-word loss and top-1/top-5 over every predicted position (mlm_* keys, as the word head's
    scores; no next-sentence ones), `predicted_tokens` (as masked_tokens), and baseline_top1: how
    often the next token is the most frequent one. In `precision` (bert/train/precision.py); None
    once `stop` is set (checked between batches)."""
    words = WordScores(baseline_id)

    def score(b, out):
        targets = b["mlm_labels"][b["mlm_labels"] != IGNORE_INDEX]
        words.sequences += len(b["input_ids"])
        if targets.numel():
            loss = F.cross_entropy(out.mlm_logits.float(), targets, reduction="sum").item()
            words.add(out.mlm_logits, targets, loss)

    if not evaluate_batches(model, batches, lambda b: next_word_forward(model, b), score, precision, stop):
        return None
    return words.result()


@torch.inference_mode()
def probe_predictions(
    bundle: Bundle, text: str, k: int = 5, positions: int = PROBE_POSITIONS
) -> list[list[tuple[str, float]]]:
    """Top-k next words after each of the last `positions` prefixes of `text` ([CLS] text, causal):
    one list per prefix, the shortest first. Past the plateau they differ from prefix to prefix."""
    model = bundle.model
    was_training = model.training
    model.eval()
    tok = bundle.tokenizer
    ids, _ = prompt_ids(bundle, text, model.config.max_tokens)
    x = torch.tensor([ids], device=module_device(model))
    logits = model(x, mask_kind=CAUSAL).mlm_logits[0, -positions:]  # (P, V)
    probs = logits.float().softmax(-1).topk(k, dim=-1)
    model.train(was_training)
    return [
        [(tok.ids_to_tokens[j], round(float(q), 4)) for q, j in zip(p.tolist(), i.tolist())]
        for p, i in zip(probs.values, probs.indices)
    ]


def prompt_ids(bundle: Bundle, text: str, max_tokens: int | None = None) -> tuple[list[int], int]:
    """([CLS] and the tokens of `text`, no [SEP]; at most `max_tokens` ids in all) and how many of
    the text's tokens were cut to fit (a lower bound past 10,000: bert.tokenizer reads no further)."""
    limit = None if max_tokens is None else max(0, max_tokens - 1)
    enc = bundle.tokenizer.encode(text, max_length=limit, truncation=limit is not None, add_special_tokens=False)
    return [bundle.tokenizer.cls_id, *enc.ids], int(getattr(enc, "num_truncated", 0) or 0)


def next_word_probe(probe: str) -> str:
    """The next-word objective's probe: the text before its first [MASK] (BERT's probe "the capital
    of france is [MASK] ." asks the same question left to right), or PROBE when that is empty."""
    head = probe.split("[MASK]", 1)[0].strip()
    return head or PROBE
