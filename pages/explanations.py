"""Explanations: attention rollout next to gradient saliency, and the logit lens."""

import math
from functools import partial

import streamlit as st

import app
from app.analysis_cache import logit_lens, mlm_topk, saliency
from app.export import choices
from app.export import notebook as nb
from app.figures.explain import answer_by_layer, logit_lens_heatmap, saliency_bars
from app.formatting import clean_text, md_escape, mlm_untrained
from app.model_sources import current_model
from app.ui import links, show_figure, widgets
from app.ui.errors import show_errors

app.run_through_entry()  # before anything else: see app/__init__.py

VIEWS = ["Rollout vs saliency", "Logit lens"]
K = 8

st.title("Explanations")
st.markdown(
    "Which words did the model use for its answer? Two ways to ask, and a look inside. "
    "**Attention rollout** follows the attention weights through every layer (with the residual "
    "path that skips each one). **Saliency** asks the gradient: how much would the answer change "
    "if a word's vector changed a little? The **logit lens** reads the model's guess at every "
    "layer, to see at which depth the answer appears."
)
links.view(links.Param("view", "ex_view", "choice", default=VIEWS[0], choices=VIEWS, codes=("saliency", "lens")))
view = st.radio("View", VIEWS, horizontal=True, key="ex_view")


def _explain(sal, what: str, choice, notebook=None) -> None:
    show_figure.show(
        saliency_bars(sal.tokens, sal.rollout, sal.saliency, sal.position),
        "explanations-bars",
        key="ex_bars",
        choice=choice,  # the other classes, or [MASK]s and guesses, in the saved file
        notebook=notebook,
    )
    c1, c2 = st.columns([1, 3])
    rho = sal.correlation
    c1.metric(
        "Rank correlation (Spearman)",
        "n/a" if math.isnan(rho) else f"{rho:+.2f}",
        help="+1: both methods rank the words the same; 0: no relation; −1: opposite.",
    )
    c2.markdown(
        f"Explaining **{md_escape(what)}** (probability {sal.target_prob:.1%}). Attention shows where "
        "information *can* flow, not what the answer *depends on*: when the two bars disagree, "
        "reading raw attention as an explanation would have misled you. `[CLS]` and `[SEP]` are left "
        "out of the correlation."
    )


with show_errors("the explanation"):
    model = current_model()
    b = model.bundle
    if b.is_classifier:
        text, _ = widgets.sentence_inputs(pair=False, label_a="A text to classify")
        text = clean_text(text, "the text")
        if view == VIEWS[1]:
            st.info(
                "The logit lens reads the masked-word head at every layer, and this model is a "
                "fine-tuned classifier without one. Pick a pre-trained model in the sidebar.",
                icon=":material/info:",
            )
        else:
            cls = st.selectbox(
                "Class to explain",
                [None] + list(range(len(b.labels))),
                key="ex_class",
                format_func=lambda i: "the predicted class" if i is None else b.labels[i],
            )
            sal = saliency(model.key, text, None, cls, b)
            start = b.labels.index(sal.target) if sal.target in b.labels else 0
            _explain(sal, f"class “{sal.target}”", choices.class_saliency(model.key, b, text, b.labels, start))
    else:
        if mlm_untrained(b):
            st.warning(
                "This model's masked-word head is untrained (freshly initialised), so its "
                "guesses are random and these explanations explain noise. Pick a model with a "
                "trained head when one is available.",
                icon=":material/warning:",
            )
        text = clean_text(widgets.mlm_input(), "the sentence")
        preds = mlm_topk(model.key, text, K, (), b)
        n = len(preds.positions)
        m = 0
        if n > 1:
            m = st.selectbox(
                "Which [MASK]",
                list(range(n)),
                key=f"ex_mask_{n}",
                format_func=lambda i: f"[MASK] number {i + 1} (token {preds.positions[i]})",
            )
        pos = preds.positions[m]
        if view == VIEWS[0]:
            word = st.selectbox(
                "Word to explain",
                preds.top_tokens[m],
                key=f"ex_word_{m}",
                format_func=lambda w: f"{w} ({preds.top_probs[m][preds.top_tokens[m].index(w)]:.1%})",
                help="By default the model's top guess; pick another to ask what speaks for it.",
            )
            sal = saliency(model.key, text, pos, word, b)
            start = (m, preds.top_tokens[m].index(word))
            _explain(
                sal,
                f"“{word}” at the [MASK]",
                choices.mask_saliency(model.key, b, text, preds.positions, preds.top_tokens, start),
                partial(nb.explanations, text=text, mask=m, word=word),
            )
            st.caption("Pick a fine-tuned classifier in the sidebar to explain a class prediction.")
        else:
            lens = logit_lens(model.key, text, 5, b)
            i = lens.positions.index(pos)
            answer = lens.top_tokens[i][-1][0]
            pick_map, pick_line = choices.lens_views(lens, preds.positions, m)  # every [MASK] in the saved files
            show_figure.show(
                logit_lens_heatmap(lens.top_tokens[i], lens.top_probs[i], answer),
                "explanations-lens",
                key="ex_lens",
                choice=pick_map,
                notebook=partial(nb.explanations, text=text, mask=m, word=None),
            )
            first = next((l for l, r in enumerate(lens.answer_rank[i]) if r == 1), None)
            where = "the embeddings" if first == 0 else f"layer {first}"
            if first is not None:
                st.markdown(f"The final answer **{md_escape(answer)}** is first the top guess at **{where}**.")
            show_figure.show(
                answer_by_layer(lens.answer_prob[i], lens.answer_rank[i], answer),
                "explanations-answer",
                key="ex_answer",
                choice=pick_line,
            )
            st.caption(
                "Each row applies the model's own masked-word head to the hidden state after "
                "that layer, as if the model stopped there. The last row is the real output. "
                "Early rows often guess common words; the answer shows up once enough context "
                "has been mixed in."
            )
