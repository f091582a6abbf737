"""Compare: two models on the same input, and one word across many sentences."""

import html
from functools import partial

import streamlit as st

import app
from app import state
from app.analysis_cache import attentions, outputs, word_map
from app.export import choices
from app.export.analysis_notebooks import compare_models
from app.export.model_notebooks import word_in_sentences
from app.export.notebook import ModelRef
from app.figures.compare import (
    attention_diff_heatmap,
    class_probs_bar,
    moved_heatmap,
    sense_scatter,
    separation_line,
)
from app.figures.masked_lm import mlm_topk_bar
from app.formatting import SENSE_SEP, clean_text, md_escape, sense_lines, sense_text
from app.model_picker import model_picker
from app.model_sources import FOLDER, LISTED, current_model, model_options, option_for
from app.run_session.snapshots import VIEW_REQUEST
from app.training.snapshots_view import attention_over_training
from app.ui import family_note, links, show_figure
from app.ui.errors import show_errors
from app.ui.widgets import SENSE_BOX_CHARS, SENTENCE_CHARS, TABLE_ROWS, WORD_CHARS, cap_help, index_slider, mlm_input
from bert import InputError
from bert.analysis.compare import compare_attention
from bert.analysis.vectors import separation
from bert.analysis.words import sense_examples
from bert.family import differences

app.run_through_entry()  # before anything else: see app/__init__.py

VIEWS = ["Two models side by side", "One word in many sentences", "Attention over training"]
K = 5

st.title("Compare")
if st.session_state.get(VIEW_REQUEST) in VIEWS:  # "Replay the attention snapshots" on a training page
    st.session_state["cmp_view"] = st.session_state.pop(VIEW_REQUEST)
links.view(
    links.Param("view", "cmp_view", "choice", default=VIEWS[0], choices=VIEWS, codes=("models", "word", "training"))
)
view = st.radio("View", VIEWS, horizontal=True, key="cmp_view")


def _outputs(col, out, side: str) -> None:
    if out.kind == "classifier":
        show_figure.show(
            class_probs_bar(out.labels, out.probs), f"compare-out-{side}", where=col, key=f"cmp_out_{side}"
        )
    else:
        for i, pos in enumerate(out.mlm.positions[:3]):
            show_figure.show(
                mlm_topk_bar(out.mlm.top_tokens[i], out.mlm.top_probs[i], f"[MASK] at token {pos}"),
                f"compare-out-{side}-{i}",
                where=col,
                key=f"cmp_out_{side}_{i}",
            )


if view == VIEWS[0]:
    st.markdown(
        "Put two models on the same sentence, for example a pre-trained model and your fine-tuned "
        "copy of it: which heads changed, and how do their answers differ? The difference map is "
        "red where model A looks more than model B, blue where it looks less."
    )
    models = {}
    cols = st.columns(2)
    with show_errors("model A"):
        cur = option_for(st.session_state[state.MODEL_SOURCE])
        models["A"] = model_picker(cols[0], "A", cur)
    with show_errors("model B"):
        # B's default: the session's last model, else a built-in (never a large teacher's model unasked)
        others = [o for o in model_options() if o not in (cur, FOLDER) and not o.startswith(LISTED)]
        models["B"] = model_picker(cols[1], "B", others[-1] if others else cur)
    with st.expander("Decoder-only and encoder-decoder models: what they changed (text only, none is loaded)"):
        family_note.relatives(compare=True)
    text = mlm_input("Sentence (put [MASK] in it to compare masked-word guesses)")
    if len(models) == 2:
        with show_errors("the comparison"):
            text = clean_text(text, "the sentence")
            ma, mb = models["A"], models["B"]
            same = ma.key == mb.key
            if same:
                st.info(
                    "Both sides show the same model: pick another one for model B (a built-in, a "
                    "folder, or a model you trained in this session).",
                    icon=":material/info:",
                )
            if not same and (diff := differences(ma.bundle.config, mb.bundle.config)):
                st.info(f"What differs: {md_escape(diff)}.", icon=":material/family_history:")
            (ta, aa), (tb, ab) = attentions(ma.key, text, ma.bundle), attentions(mb.key, text, mb.bundle)
            La, Ha, Lb, Hb = *aa.shape[:2], *ab.shape[:2]
            if (La, Ha) != (Lb, Hb):
                st.warning(
                    f"The models have different shapes: A has {La} layers × {Ha} heads, B has "
                    f"{Lb} × {Hb}. Pick a layer and head that both have; there is no difference map.",
                    icon=":material/warning:",
                )
            c1, c2 = st.columns(2)
            layer = index_slider(c1, "Layer", min(La, Lb), key="cmp_layer")
            head = index_slider(c2, "Head", min(Ha, Hb), key="cmp_head")
            left, right = st.columns(2)
            titles = f"A: {html.escape(ma.label)}", f"B: {html.escape(mb.label)}"
            pick_a, pick_b = choices.two_models(aa, ab, ta, tb, titles, (layer, head))  # in the saved files
            refs = {"a": ModelRef(ma.key, ma.label), "b": ModelRef(mb.key, mb.label)}
            notebook = partial(compare_models, text=text, layer=layer, head=head, k=K, **refs)
            show_figure.show(
                pick_a.draw(layer, head), "compare-att-a", where=left, key="cmp_att_a", choice=pick_a, notebook=notebook
            )
            show_figure.show(pick_b.draw(layer, head), "compare-att-b", where=right, key="cmp_att_b", choice=pick_b)
            if (La, Ha) == (Lb, Hb) and not same:
                try:
                    d = compare_attention(aa, ab, ta, tb)
                except InputError as e:
                    st.info(md_escape(str(e)), icon=":material/info:")
                else:
                    pick_d, pick_m = choices.model_difference(aa, ab, ta, d.moved, (layer, head))
                    show_figure.show(
                        attention_diff_heatmap(d.diff[layer, head], ta, f"A − B, layer {layer + 1}, head {head + 1}"),
                        "compare-diff",
                        where=left,
                        key="cmp_diff",
                        choice=pick_d,
                    )
                    show_figure.show(
                        moved_heatmap(d.moved, (layer, head)),
                        "compare-moved",
                        where=right,
                        key="cmp_moved",
                        choice=pick_m,
                    )
                    st.caption(
                        "Right: for every head, the share of attention that goes somewhere else "
                        "in B (0 = identical, 1 = nothing in common)."
                    )
            st.header("Their answers")
            left, right = st.columns(2)
            for side, col, m in (("a", left, ma), ("b", right, mb)):
                col.markdown(f"**{md_escape(m.label)}**")
                if not m.bundle.is_classifier and "[MASK]" not in text:
                    col.info("Put [MASK] in the sentence to see this model's guesses.", icon=":material/info:")
                    continue
                with show_errors(f"the answer of {m.label}"):
                    _outputs(col, outputs(m.key, text, K, m.bundle), side)
elif view == VIEWS[1]:
    st.markdown(
        "The same word means different things in different sentences. Its starting vector (layer 0) "
        "is the same wherever it appears, apart from its position; each layer mixes in more of the "
        "context. Slide through the layers and watch the senses pull apart."
    )
    word0, sents0, senses0 = sense_examples()
    with show_errors("the embedding map"):
        model = current_model()
        L = model.bundle.config.num_hidden_layers
        word = st.text_input(
            "The shared word", value=word0, key="sense_word", max_chars=WORD_CHARS, help=cap_help(WORD_CHARS)
        )
        lines = st.text_area(
            f"Sentences with the word, one a line; after a {SENSE_SEP} its sense (optional)",
            value=sense_text(sents0, senses0),
            key="sense_lines",
            height=230,
            max_chars=SENSE_BOX_CHARS,
            help=cap_help(
                SENSE_BOX_CHARS, f"Up to {TABLE_ROWS} sentences, e.g. “The boat drifted to the bank | river”."
            ),
        )
        sents, senses, dropped = sense_lines(lines, TABLE_ROWS, SENTENCE_CHARS, WORD_CHARS)
        st.caption(
            f"{len(sents)} of at most {TABLE_ROWS} sentences; the senses (what follows the {SENSE_SEP}) colour "
            "the map and measure the separation below."
        )
        if dropped:
            st.warning(
                f"The box holds at most {TABLE_ROWS} sentences: the last {dropped} line(s) "
                "are left out. Delete some lines to bring others in.",
                icon=":material/content_cut:",
            )
        word = clean_text(word, "the shared word")
        res = word_map(model.key, tuple(sents), word, model.bundle)
        layer = st.slider("Layer (0 = embeddings)", 0, L, L, key=f"sense_layer_{L}")
        sep = separation(res.vectors, senses) if len(set(senses)) >= 2 else None
        picks = choices.word_senses(res, senses, sents, word, layer, sep)  # every layer in the saved files
        show_figure.show(
            sense_scatter(res.coords[layer], senses, sents, word, layer),
            "compare-senses-map",
            key="sense_map",
            choice=picks["map"],
            notebook=partial(word_in_sentences, word=word, sentences=sents, senses=senses, layer=layer),
        )
        if sep is not None:
            show_figure.show(
                separation_line(sep, layer), "compare-senses-sep", key="sense_sep", choice=picks["separation"]
            )
            st.caption(
                "Separation is 1 when every sentence is much closer to those of its own sense "
                "than to the others, 0 when the senses overlap (mean silhouette of cosine distances)."
            )
        else:
            st.info(
                "Write a sense next to each sentence (at least two different ones) to measure how well they separate.",
                icon=":material/info:",
            )
else:
    attention_over_training()
