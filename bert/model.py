"""BERT in plain PyTorch: the encoder, its pooler and pre-training heads (the embeddings:
bert/embeddings.py; one encoder layer, its self-attention and feed-forward: bert/encoder_layer.py;
the fine-tuning heads: bert/task_models.py).

Dimension letters (as in google-research/bert): B batch size, T sequence length,
C hidden size, H attention heads, D head size (C / H), F feed-forward size,
V vocabulary size, L layers, N masked positions.

The family (bert/family.py) is written where it differs: its embeddings in bert/embeddings.py
(DistilBERT's missing segment table, ELECTRA's and ALBERT's narrow tables, RoBERTa's positions);
here ELECTRA's discriminator has a "was this token replaced?" head (`rtd`), ALBERT uses one
layer's weights at every depth (`shared_layer`), and its two-sentence head (`nsp`) predicts their order.

Nothing is stored on a module during forward: one model object can serve many
sessions at once. Intermediates (attentions, hidden states, embedding parts,
queries/keys) are returned only when asked for. A run of some of the layers, recording named
sites and applying edits (patching, ablation, steering, saliency), is BertModel.run, the one
way the model runs part-way; forward is that run from the input to the end, plus the pooler.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention_masks import BIDIRECTIONAL, MaskKind, allowed
from .config import BertConfig
from .embeddings import Embeddings
from .encoder_layer import ACTIVATIONS, EncoderLayer
from .errors import InputError
from .family import member
from .outputs import BertOutput, EmbeddingParts, PartRun, PreTrainingOutput

# BertModel.run's sites: "residual" the state (B, T, C) entering layer l, for l = start .. stop
# (the last one the state the run returns); "heads" (B, H, T, D) each head's output before the
# projection; "attention", "ffn" (B, T, C) each sub-layer's output before its residual add;
# "probs" (B, H, T, T) the attention; "queries", "keys", "values" (B, H, T, D).
RECORDED = ("residual", "heads", "attention", "ffn", "probs", "queries", "keys", "values")
EDITABLE = ("residual", "heads", "attention", "ffn")


class BertModel(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        if member(config).shared_layers:  # one layer's weights at every depth
            self.shared_layer = EncoderLayer(config)
            self.layers = [self.shared_layer] * config.num_hidden_layers  # a plain list: its weights are counted once
        else:
            self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_hidden_layers))
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)

    def _check_inputs(self, input_ids: Tensor, token_type_ids: Tensor | None):
        if input_ids.dim() == 1:
            input_ids = input_ids.unsqueeze(0)
        if input_ids.dim() != 2 or input_ids.shape[1] == 0:
            raise InputError(
                f"input_ids must be (batch, tokens) with at least one token, got shape {tuple(input_ids.shape)}"
            )
        T = input_ids.shape[1]
        if T > self.config.max_tokens:
            raise InputError(f"{T} tokens is more than this model's maximum of {self.config.max_tokens} positions")
        V = self.config.vocab_size
        lo, hi = torch.aminmax(input_ids)  # one pass, not two
        if int(lo) < 0 or int(hi) >= V:
            raise InputError(f"token ids must lie in [0, {V}); the tokenizer's vocabulary does not match this model")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        elif token_type_ids.dim() == 1:
            token_type_ids = token_type_ids.unsqueeze(0)
        if token_type_ids.shape != input_ids.shape:
            raise InputError("token_type_ids must have the same shape as input_ids")
        lo, hi = torch.aminmax(token_type_ids)
        if self.config.type_vocab_size == 0:  # DistilBERT: segments are not an input
            return input_ids, token_type_ids
        if int(hi) >= self.config.type_vocab_size or int(lo) < 0:
            raise InputError(f"segment ids must lie in [0, {self.config.type_vocab_size})")
        return input_ids, token_type_ids

    def embed(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, output_embedding_parts: bool = False
    ) -> tuple[Tensor, EmbeddingParts | None]:
        """The checked input's embeddings (B, T, C), the state entering layer 0, and their parts when asked."""
        input_ids, token_type_ids = self._check_inputs(input_ids, token_type_ids)
        return self.embeddings(input_ids, token_type_ids, output_embedding_parts)

    def pool(self, h: Tensor) -> Tensor:
        """The pooler on final hidden states h (B, T, C): tanh(W h_[CLS] + b), (B, C)."""
        return torch.tanh(self.pooler(h[:, 0]))

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        output_embedding_parts: bool = False,
        output_qkv: bool = False,
        head_mask: Tensor | None = None,
        rows: Tensor | None = None,
        on_attention: Callable[[int, Tensor], None] | None = None,
        mask_kind: MaskKind = BIDIRECTIONAL,
    ) -> BertOutput:
        """The whole encoder (`run` from the input to the end) and the pooler. head_mask, mask_kind,
        rows: as `run` takes them. on_attention(layer, probs): each layer's attention (B, H, T, T)
        handed over as soon as it is computed, not kept in `attentions`: a caller copying it into
        one preallocated array holds one layer's at a time, not all of them twice."""
        x, parts = self.embed(input_ids, token_type_ids, output_embedding_parts)
        asked = {"residual": output_hidden_states, "probs": output_attentions and on_attention is None}
        asked |= dict.fromkeys(("queries", "keys", "values"), output_qkv)
        run = self.run(
            x,
            0,
            attention_mask=attention_mask,
            mask_kind=mask_kind,
            head_mask=head_mask,
            record=[site for site, yes in asked.items() if yes],
            hand_over={"probs": on_attention} if on_attention is not None else None,
            rows=rows,
        )
        kept = {site: tuple(values) for site, values in run.cache.items()}
        return BertOutput(
            last_hidden_state=run.state,
            pooler_output=self.pool(run.state),
            hidden_states=kept.get("residual"),
            attentions=kept.get("probs"),
            embedding_parts=parts,
            queries=kept.get("queries"),
            keys=kept.get("keys"),
            values=kept.get("values"),
        )

    def run(
        self,
        inputs: Tensor,
        start: int | None = None,
        stop: int | None = None,
        *,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        mask_kind: MaskKind = BIDIRECTIONAL,
        head_mask: Tensor | None = None,
        record: Collection[str] = (),
        edits: Mapping[tuple[str, int], Callable[[Tensor], Tensor]] | None = None,
        hand_over: Mapping[str, Callable[[int, Tensor], None]] | None = None,
        rows: Tensor | None = None,
    ) -> PartRun:
        """Run layers start .. stop - 1, recording the sites in `record` and applying `edits`
        (sites: RECORDED). The one way to run the model part-way: everything is an argument of
        this call, never a hook on the shared model, so concurrent runs cannot see each other's.

        inputs: token ids (B, T) when start is None (embedded first, with token_type_ids), else
        the state (B, T, C) entering layer `start`. stop: default after the last layer.
        record: sites kept in PartRun.cache, one value a layer (after any edit there).
        edits: {(site, layer): fn(value) -> value} at the EDITABLE sites.
        hand_over: {site: fn(layer, value)}, a site handed over as computed instead of kept.
        head_mask: (L, H) of 0/1 (or weights) multiplying each head's output.
        attention_mask: (B, T) of 1 (token) / 0 (padding); mask_kind (bert/attention_masks.py)
        "bidirectional", "causal" or an int k (prefix-LM; k > T is an InputError), composed with it.
        rows: a (B, T) bool mask of the positions whose final vectors are wanted: the run's last
        layer runs only there and at [CLS] (EncoderLayer.forward_rows), the state is ZERO
        elsewhere. Ignored when anything is recorded, edited or head-masked."""
        if start is None:
            inputs, _ = self.embed(inputs, token_type_ids)
        start, stop = self._check_run(inputs, start, stop, record, edits, hand_over)
        x, cache, hand_over, edits = inputs, {site: [] for site in record}, hand_over or {}, edits or {}
        mask = self._additive_mask(attention_mask, x, mask_kind)
        watch = set(cache) | set(hand_over)

        def at(site: str, layer: int, value: Tensor) -> Tensor:  # its edit, then recorded or handed over
            fn = edits.get((site, layer))
            value = fn(value) if fn is not None else value
            if site in hand_over:
                hand_over[site](layer, value)
            elif site in cache:
                cache[site].append(value)
            return value

        prune = rows is not None and not (watch or edits or head_mask is not None)
        x = at("residual", start, x)
        for i in range(start, stop):
            if prune and i == stop - 1:
                return PartRun(self._last_layer_rows(self.layers[i], x, mask, rows), cache)
            hm = head_mask[i] if head_mask is not None else None
            inside = watch & {"heads", "attention", "ffn"} or any(l == i and s != "residual" for s, l in edits)
            edit = (lambda site, value, i=i: at(site, i, value)) if inside else None
            x, probs, qkv = self.layers[i](x, mask, "probs" in watch, hm, edit)
            for site, value in zip(("probs", "queries", "keys", "values"), (probs, *qkv), strict=True):
                at(site, i, value)
            del probs, qkv
            x = at("residual", i + 1, x)
        return PartRun(x, cache)

    def _check_run(self, x: Tensor, start: int | None, stop: int | None, record, edits, hand_over) -> tuple[int, int]:
        """(start, stop) of a `run`, checked with its state and sites; an InputError says what is wrong."""
        L, C = len(self.layers), self.config.hidden_size
        start = 0 if start is None else int(start)
        stop = L if stop is None else int(stop)
        if not 0 <= start <= stop <= L:
            raise InputError(f"a run goes from layer start to layer stop with 0 <= start <= stop <= {L}")
        if x.dim() != 3 or x.shape[-1] != C:
            raise InputError(f"a run from a layer starts from a state (batch, tokens, {C}), got {tuple(x.shape)}")
        for site in (*record, *(hand_over or {})):
            if site not in RECORDED:
                raise InputError(f"unknown site {site!r}; sites: {', '.join(RECORDED)}")
        for site, layer in edits or {}:
            last = stop if site == "residual" else stop - 1
            if site not in EDITABLE or not start <= layer <= last:
                raise InputError(
                    f"cannot edit {site!r} at layer {layer}: sites {', '.join(EDITABLE)}, layers {start}..{last}"
                )
        return start, stop

    @staticmethod
    def _additive_mask(attention_mask: Tensor | None, x: Tensor, mask_kind: MaskKind = BIDIRECTIONAL) -> Tensor | None:
        """attention_mask (B, T) of 1 (token) / 0 (padding) and the mask kind, for the
        state x (B, T, C) -> the
        additive mask the layers take: 0 where attended, the dtype's most negative number where
        not. (B, 1, 1, T) over keys for padding alone; (B or 1, 1, T, T) with a causal or prefix mask, whose
        rows are the queries. None when nothing is hidden (bidirectional, no padding).

        One boolean "may read" mask, then one fill: adding a padding and a causal mask would
        overflow to -inf, and a row of -inf only (a padded query under a causal mask) would
        give NaN; a row masked everywhere here is uniform instead, and the padding it belongs
        to is never read."""
        B, T, _ = x.shape
        see = allowed(mask_kind, T, x.device)  # (T, T) or None
        keys = None
        if attention_mask is not None:
            if attention_mask.dim() == 1:
                attention_mask = attention_mask.unsqueeze(0)
            if attention_mask.shape != (B, T):
                raise InputError("attention_mask must have the same shape as input_ids")
            if not bool(attention_mask.all()):
                keys = attention_mask[:, None, None, :].bool()  # (B, 1, 1, T)
        if see is None and keys is None:
            return None
        may = see[None, None] if see is not None else keys  # (1, 1, T, T) or (B, 1, 1, T)
        if see is not None and keys is not None:
            may = may & keys  # (B, 1, T, T)
        neg = torch.finfo(x.dtype).min
        return torch.zeros(may.shape, dtype=x.dtype, device=may.device).masked_fill_(~may, neg)

    @staticmethod
    def _last_layer_rows(layer: EncoderLayer, x: Tensor, mask: Tensor | None, rows: Tensor) -> Tensor:
        """Run `layer` at the wanted rows (and [CLS]) only; zeros elsewhere. (B, T, C)."""
        B, T, C = x.shape
        want = rows.view(B, T).bool().clone()
        want[:, 0] = True  # the pooler's [CLS]
        counts = want.sum(1)  # (B,)
        # each row's wanted positions first, in order (a stable sort of "not wanted")
        idx = torch.argsort((~want).to(torch.int8), dim=1, stable=True)[:, : int(counts.max())]  # (B, Q)
        valid = torch.arange(idx.shape[1], device=x.device)[None, :] < counts[:, None]  # (B, Q)
        out = layer.forward_rows(x, mask, idx)  # (B, Q, C)
        flat = (torch.arange(B, device=x.device)[:, None] * T + idx)[valid]  # (N,) into B*T
        full = x.new_zeros(B * T, C).index_copy(0, flat, out[valid])
        return full.view(B, T, C)


class MLMHead(nn.Module):
    """transform (dense + act + LayerNorm), then a decoder tied to the word embeddings, + bias.

    Family: the transform ends at the embeddings' width E (ELECTRA's generator and ALBERT: C -> E);
    ELECTRA's and RoBERTa's activation is always GELU; for BERT, DistilBERT and RoBERTa E = C."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        E = config.embedding_width
        self.transform = nn.Linear(config.hidden_size, E)
        self.act = ACTIVATIONS[member(config).mlm_activation or config.hidden_act]
        self.norm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.word_embeddings = word_embeddings  # shared, not a copy
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    fp32_logits = False  # the vocabulary's logits in fp32 under bf16 autocast too (bert/train/pretrain.py)

    def forward(self, h: Tensor) -> Tensor:
        h = self.norm(self.act(self.transform(h)))
        if not self.fp32_logits:
            return F.linear(h, self.word_embeddings.weight, self.bias)  # (..., V)
        with torch.autocast(h.device.type, enabled=False):
            return F.linear(h.float(), self.word_embeddings.weight, self.bias)


class ReplacedTokenHead(nn.Module):
    """ELECTRA's discriminator: for every token, a logit that it was replaced (by the generator's
    guess) rather than original. dense (C -> C) + act, then one number per token."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.out = nn.Linear(config.hidden_size, 1)

    def forward(self, h: Tensor) -> Tensor:
        return self.out(self.act(self.dense(h))).squeeze(-1)  # (B, T)


class TaskModel(nn.Module):
    """An encoder (`bert`) and the heads of one task, which the subclass adds in `add_heads`;
    BERT's initialisation over both. A call runs the encoder, then the subclass's `head` on its
    output with the task's `targets` (keywords named as transformers names them, None when not
    given: no loss). BertForPreTraining has its own forward: its targets also say where the
    encoder's last layer runs."""

    targets: tuple[str, ...] = ()

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.add_heads(config)
        init_weights(self)

    def add_heads(self, config: BertConfig) -> None:
        raise NotImplementedError

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None, **kwargs
    ):
        """kwargs: the task's `targets` by name, and BertModel.forward's options."""
        given = {name: kwargs.pop(name, None) for name in self.targets}
        out = self.bert(input_ids, token_type_ids, attention_mask, **self.encoder_options(input_ids, kwargs))
        return self.head(out, attention_mask, **given)

    def encoder_options(self, input_ids: Tensor, options: dict) -> dict:
        """BertModel.forward's options for this call: the caller's, unless the head asks for less."""
        return options

    def head(self, out: BertOutput, attention_mask: Tensor | None, **targets):
        raise NotImplementedError


class BertForPreTraining(TaskModel):
    def add_heads(self, config: BertConfig) -> None:
        self.mlm = MLMHead(config, self.bert.embeddings.word_embeddings)
        self.nsp = nn.Linear(config.hidden_size, 2)
        self.rtd = ReplacedTokenHead(config) if member(config).replaced_token_head else None

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        mlm_labels: Tensor | None = None,
        nsp_labels: Tensor | None = None,
        mlm_positions: Tensor | None = None,
        prune: bool | None = None,
        **kwargs,
    ) -> PreTrainingOutput:
        """Without labels, mlm_logits is (B, T, V). With `mlm_labels` (-100 = not predicted) or
        `mlm_positions` (a (B, T) bool mask), the MLM head runs only at those positions and
        mlm_logits is (N, V): the vocabulary projection is most of a step's cost. `prune` (default:
        in training mode) runs the last layer only there and at [CLS] too (BertModel.run), equal to
        the full layer to rounding; eval mode keeps the full layer, so the logit lens and the
        Masked LM page agree bit for bit."""
        where = None
        shape = input_ids.shape if input_ids.dim() == 2 else (1, input_ids.shape[-1])
        if mlm_labels is not None:
            where = mlm_labels.view(shape) != -100
        elif mlm_positions is not None:
            where = mlm_positions.view(shape).bool()
        prune = self.training if prune is None else prune
        out = self.bert(input_ids, token_type_ids, attention_mask, rows=where if prune else None, **kwargs)
        h = out.last_hidden_state
        if where is not None:
            positions = where.nonzero()  # (N, 2): (b, t)
            flat = positions[:, 0] * h.shape[1] + positions[:, 1]  # (N,) into B*T
            # index_select (backward: one index_add) rather than h[where], which finds the
            # positions a second time and scatters its gradient back with index_put
            mlm_logits = self.mlm(h.reshape(-1, h.shape[-1]).index_select(0, flat))  # (N, V)
        else:
            mlm_logits, positions = self.mlm(h), None  # (B, T, V)
        nsp_logits = self.nsp(out.pooler_output)  # (B, 2)
        replaced_logits = self.rtd(h) if self.rtd is not None else None  # (B, T): ELECTRA only
        targets = mlm_labels.reshape(-1).index_select(0, flat) if mlm_labels is not None else None
        losses = _pretraining_losses(mlm_logits, targets, nsp_logits, nsp_labels)
        return PreTrainingOutput(
            mlm_logits, nsp_logits, out, mlm_positions=positions, replaced_logits=replaced_logits, **losses
        )


def _pretraining_losses(
    mlm_logits: Tensor, mlm_targets: Tensor | None, nsp_logits: Tensor, nsp_labels: Tensor | None
) -> dict[str, Tensor | None]:
    """loss, mlm_loss and nsp_loss of a pre-training step: each head's loss where its labels are
    given (else None), and loss their sum (None without labels)."""
    loss = mlm_loss = nsp_loss = None
    if mlm_targets is not None:
        n = mlm_targets.numel()
        mlm_loss = F.cross_entropy(mlm_logits.float(), mlm_targets) if n else mlm_logits.sum() * 0.0
        loss = mlm_loss
    if nsp_labels is not None:
        nsp_loss = F.cross_entropy(nsp_logits.float(), nsp_labels.view(-1))
        loss = nsp_loss if loss is None else loss + nsp_loss
    return {"loss": loss, "mlm_loss": mlm_loss, "nsp_loss": nsp_loss}


def init_weights(module: nn.Module) -> None:
    """BERT's initialisation: normal(0, initializer_range) weights, zero biases, unit LayerNorm."""
    std = module.config.initializer_range
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, std)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, std)
            if m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    if isinstance(module, BertForPreTraining):
        nn.init.zeros_(module.mlm.bias)


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Parameters per component (shared tensors counted once), for the Home page."""
    bert = model.bert
    counts = {
        "embeddings": sum(p.numel() for p in bert.embeddings.parameters()),
        "encoder layers": sum({id(p): p.numel() for layer in bert.layers for p in layer.parameters()}.values()),
        "pooler": sum(p.numel() for p in bert.pooler.parameters()),
    }
    if isinstance(model, BertForPreTraining):
        head = sum(p.numel() for n, p in model.mlm.named_parameters() if "word_embeddings" not in n)
        counts["MLM head (decoder tied to embeddings)"] = head
        counts["NSP head"] = sum(p.numel() for p in model.nsp.parameters())
        if model.rtd is not None:
            counts["replaced-token head"] = sum(p.numel() for p in model.rtd.parameters())
    for attr, what in (("classifier", "classifier head"), ("qa_outputs", "start/end head")):
        if isinstance(getattr(model, attr, None), nn.Module):  # a fine-tuning head (bert/task_heads.py)
            counts[what] = sum(p.numel() for p in getattr(model, attr).parameters())
    counts["total"] = sum(v for v in counts.values())
    return counts
