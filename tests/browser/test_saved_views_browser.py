"""Saved views (app/export/view_file.py) opened from disk in Chromium, where every request but
file: is refused: each page's figure draws, with no console error and no request; the layer and
head menus redraw the heatmap from the file alone, Explanations' named [MASK] menu its logit lens;
a typed `<img src=x onerror=alert(1)>` stays text; on a laptop, a projector and a phone every tick
label lies inside its figure and the title meets no axis title or tick label. The files are built
here with the app's own figure builders under the app's plotly template (Streamlit's), no server."""

from __future__ import annotations

import zipfile
from contextlib import contextmanager

import pytest

import bert
from app.export import choices
from app.export.stamp import Stamp, weights_hash
from app.export.view_file import Choice, Panel, view_html
from app.export.wheel import wheel_name
from app.figures import attention_heads, compare, seq2seq, training
from app.figures.attention import attention_grid, head_maps
from app.figures.embeddings import embedding_parts_heatmaps
from app.figures.masked_lm import mlm_topk_bar
from app.formatting import token_table
from bert.analysis import explain as explain_analysis
from bert.analysis import full, mlm
from bert.analysis.common import encode
from tests.browser.access_checks import (
    PHONE_SMALL,
    audit,
    axe_source,
    phone_problems,
    serious,
    undocumented,
    write_table,
)
from tests.helpers import finished_result

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)>"
SENTENCE = f"the cat sat on the mat because it was warm . {HOSTILE}"


@pytest.fixture(scope="module")
def streamlit_template():
    """Plotly's default template as in the app's process: Streamlit's, which has no automargin and
    placeholder colours (its page fixes both when drawing; a saved file must not need it)."""
    import plotly.io as pio
    import streamlit.elements.plotly_chart  # noqa: F401  registers and picks "streamlit"

    before, pio.templates.default = pio.templates.default, "streamlit"
    yield
    pio.templates.default = before


@pytest.fixture(scope="module")
def files(tmp_path_factory, streamlit_template):
    """({view: path} of one saved file per page kind, the token table): minilm-l6, the fine-tuning
    run a tiny model."""
    b = bert.load("minilm-l6")
    an = full.analyze(b, SENTENCE)
    L, H = an.attentions.shape[:2]
    stamp = Stamp(model=b.name, weights=weights_hash(b.model), inputs=(("Sentence A", SENTENCE),))
    draw = head_maps(an.attentions, an.tokens)
    masked = mlm.mlm_topk(b, "the cat sat on the [MASK] .", k=5)
    lens = explain_analysis.logit_lens(b, "paris is the [MASK] of [MASK] .", k=3)
    lens_map = choices.lens_views(lens, lens.positions, 0)[0]  # a menu per [MASK], named
    _, res = finished_result()
    enc = encode(b, SENTENCE)
    tokens = token_table(enc.tokens, enc.ids, enc.type_ids, enc.offsets, enc.word_ids, enc.sequence_ids, SENTENCE, None)
    views = {
        "tokenization": [Panel(table=tokens)],
        "attention": [Panel(draw(2, 3), "a head", Choice((("Layer", L), ("Head", H)), draw, (2, 3)))],
        "all-heads": [Panel(attention_grid(an.attentions, selected=(0, 0)), "all heads")],
        "masked-lm": [Panel(mlm_topk_bar(masked.top_tokens[0], masked.top_probs[0], HOSTILE))],
        "embeddings": [Panel(embedding_parts_heatmaps(an.parts, an.tokens))],
        "explanations": [Panel(lens_map.draw(0), choice=lens_map)],
        "finetune-curves": [Panel(training.finetune_curves(res["metrics"]))],
        "ablation": [Panel(attention_heads.importance_heatmap(an.attentions[:, :, 0, 1], target=HOSTILE))],
        "compare": [Panel(compare.attention_diff_heatmap(an.attentions[0, 0] - an.attentions[1, 1], an.tokens))],
        "decoder": [Panel(seq2seq.attention(an.attentions[5, 0], an.tokens, an.tokens, HOSTILE))],
    }
    out = tmp_path_factory.mktemp("saved")
    paths = {}
    for name, panels in views.items():
        paths[name] = out / f"{name}.html"
        paths[name].write_text(view_html(f"{name} {HOSTILE}", panels, stamp), encoding="utf-8")
    return paths, tokens


def test_saved_views_draw_offline_and_keep_typed_text_as_text(browser, files, artifacts):
    files, tokens = files
    # the size budget: the whole model's attention (every head's map; all heads at once) under 5 MB
    assert files["attention"].stat().st_size < 5e6 and files["all-heads"].stat().st_size < 5e6
    context = browser.new_context(viewport={"width": 1200, "height": 900}, service_workers="block")
    refused, requests, errors, dialogs = [], [], [], []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    pg = context.new_page()
    pg.on("request", lambda req: requests.append(req.url))
    pg.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    source, audits = axe_source(), {}
    try:
        for name, path in files.items():
            pg.goto(path.as_uri())
            pg.wait_for_function(
                "() => [...document.querySelectorAll('.js-plotly-plot')].every(el => el.data && el.data.length"
                " && el.querySelector('.main-svg'))",
                timeout=30_000,
            )
            audits[name] = audit(pg, source)  # axe-core as a laptop opens it (the phone's: below)
            assert pg.locator(".bx-inputs dd").first.inner_text() == SENTENCE, name
            assert HOSTILE in pg.locator("h1").inner_text(), name
            assert pg.locator("img").count() == 0, name
            rows = pg.locator("table.bx-table tbody tr").count()
            assert rows == (len(tokens) if name == "tokenization" else 0), name
            assert "made with BERT Explorer" in pg.locator("footer").inner_text()
        # the layer/head menus redraw from the file's own frames: layer 5, head 7
        pg.goto(files["attention"].as_uri())
        pg.wait_for_function("() => document.querySelector('#bx-plot-0').data")
        before = pg.evaluate("() => document.querySelector('#bx-plot-0').layout.title.text")
        pg.locator("select").nth(0).select_option(index=4)
        pg.locator("select").nth(1).select_option(index=6)
        pg.wait_for_function("() => document.querySelector('#bx-plot-0').getAttribute('data-frame') === '54'")
        after = pg.evaluate("() => document.querySelector('#bx-plot-0').layout.title.text")
        assert (before, after) == ("layer 3, head 4", "layer 5, head 7")
        # Explanations' [MASK] menu, its options named, redraws the logit lens for the second [MASK]
        pg.goto(files["explanations"].as_uri())
        pg.wait_for_function("() => document.querySelector('#bx-plot-0').data")
        assert pg.locator("select option").all_inner_texts() == [f"{n + 1} (token {p})" for n, p in enumerate((4, 6))]
        pg.locator("select").select_option(index=1)
        pg.wait_for_function("() => document.querySelector('#bx-plot-0').getAttribute('data-frame') === '1'")
        assert pg.evaluate("() => document.querySelector('#bx-plot-0').layout.title.text") == "[MASK] 2 (token 6)"
        pg.goto(files["attention"].as_uri())
        pg.wait_for_function("() => document.querySelector('#bx-plot-0').data")
        # hover works: plotly answers a hover on the map with a label
        box = pg.locator("#bx-plot-0 .nsewdrag").first.bounding_box()
        pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        pg.wait_for_selector("#bx-plot-0 .hoverlayer .hovertext", timeout=10_000)
    finally:
        context.close()
    assert not refused, refused
    assert all(u.startswith("file:") for u in requests), requests
    assert not errors and not dialogs, (errors, dialogs)
    write_table(artifacts, "saved_laptop", audits)
    assert not serious(audits), f"axe-core on saved views at 1200x900: {serious(audits)}"
    assert not undocumented(audits), f"rules docs/ACCESSIBILITY.md does not list: {undocumented(audits)}"


def test_a_student_saves_the_attention_view_and_opens_it_at_home(page, page_factory, app_url, app_ready, artifacts):
    """Save, go home, open: the Attention page's button downloads the file, which opens in a
    browser that may reach nothing, with the page's head picked and the sentence typed, every label
    inside the figure and the title clear; beside the notebook, the bert package's wheel."""
    from urllib.parse import quote

    page.goto(f"{app_url}/attention?a={quote(SENTENCE)}&layer=2&head=5")
    app_ready(page)
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_role("button", name="Save this view (HTML)").first.click()
    assert dl.value.suggested_filename == "attention-L2-H5.html"
    path = artifacts / "saved-attention-L2-H5.html"
    dl.value.save_as(path)
    with page.expect_download(timeout=60_000) as nb_dl:
        page.get_by_role("button", name="Open as a notebook").first.click()
    assert nb_dl.value.suggested_filename == "attention-L2-H5.ipynb"
    with page.expect_download(timeout=180_000) as wheel_dl:  # built once by the server, on this click
        page.get_by_role("button", name="Get the bert package (wheel)").first.click()
    assert wheel_dl.value.suggested_filename == wheel_name()
    wheel_path = artifacts / wheel_name()
    wheel_dl.value.save_as(wheel_path)
    assert "bert/__init__.py" in zipfile.ZipFile(wheel_path).namelist()
    page.guard.assert_clean()
    home = page_factory(offline=True)
    home.goto(path.as_uri())
    home.wait_for_function("() => document.querySelector('#bx-plot-0') && document.querySelector('#bx-plot-0').data")
    assert home.evaluate("() => document.querySelector('#bx-plot-0').layout.title.text") == "layer 2, head 5"
    assert home.locator(".bx-inputs dd").first.inner_text() == SENTENCE
    assert "minilm-l6" in home.locator(".bx-stamp").inner_text().lower()
    (fig,) = home.evaluate(BOXES)
    assert fig["ticks"] and not _label_problems(fig), _label_problems(fig)
    assert not [u for u in home.guard.requests if not u.startswith("file:")]
    home.guard.assert_clean()


VIEWPORTS = {"laptop": (1366, 768), "projector": (1280, 720), "phone": (390, 844)}
# Per figure: its box, every tick label's and axis title's box and its title's (all relative to the figure).
BOXES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(el => {
  const f = el.getBoundingClientRect();
  const box = t => { const r = t.getBoundingClientRect(); return [t.textContent, r.left - f.left, r.top - f.top,
                                                                   r.right - f.left, r.bottom - f.top]; };
  const texts = sel => [...el.querySelectorAll(sel)].filter(t => t.textContent.trim()).map(box);
  return {size: [f.width, f.height],
          ticks: texts('g[class*="xtick"] > text, g[class*="ytick"] > text'),
          axis_titles: texts('[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text'),
          title: texts('.gtitle')[0] || null};
})"""


DRAWN = "() => [...document.querySelectorAll('.js-plotly-plot')].every(el => el.data && el.querySelector('.main-svg'))"
# every figure redrawn at its box's new width (plotly's responsive resize)
RESIZED = (
    "() => [...document.querySelectorAll('.js-plotly-plot')].every(el => el._fullLayout"
    " && Math.abs(el._fullLayout.width - el.getBoundingClientRect().width) <= 1)"
)


PHONE_KINDS = ("tokenization", "attention", "explanations", "all-heads", "ablation")


@contextmanager
def file_page(browser, viewport: dict, **context_args):
    """A page in a fresh browser context that may open file: addresses and nothing else."""
    context = browser.new_context(viewport=viewport, service_workers="block", **context_args)
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    try:
        yield context.new_page()
    finally:
        context.close()


def _meets(a, b) -> bool:
    return a[1] < b[3] and a[3] > b[1] and a[2] < b[4] and a[4] > b[2]


def _inside(box, size) -> bool:
    return box[1] >= -0.5 and box[2] >= -0.5 and box[3] <= size[0] + 0.5 and box[4] <= size[1] + 0.5


def _label_problems(fig: dict) -> list:
    """What a figure's boxes (BOXES) show wrong: a tick label or the title outside it, the title
    meeting an axis title or a tick label."""
    out = [("tick outside", t) for t in fig["ticks"] if not _inside(t, fig["size"])]
    title = fig["title"]
    if title is not None:
        out += [("title outside", title)] if not _inside(title, fig["size"]) else []
        out += [("title meets", other) for other in fig["axis_titles"] + fig["ticks"] if _meets(title, other)]
    return out


def test_saved_views_keep_every_label_inside_and_the_title_clear_on_every_screen(browser, files):
    """Each kind of saved view at 1366x768, 1280x720 and 390x844: every tick label's bounding box
    inside its figure (0.5 px of rounding), the title inside it too and meeting no axis title or
    tick label."""
    files, _ = files
    seen = {"ticks": 0, "titles": 0, "axis titles": 0}
    problems = []
    with file_page(browser, {"width": 1366, "height": 768}) as pg:
        for name, path in files.items():
            pg.goto(path.as_uri())
            pg.wait_for_function(DRAWN, timeout=30_000)
            for screen, (width, height) in VIEWPORTS.items():  # one load, redrawn at each size (responsive)
                pg.set_viewport_size({"width": width, "height": height})
                pg.wait_for_function(RESIZED, timeout=30_000)
                for fig in pg.evaluate(BOXES):
                    problems += [(screen, name, *p) for p in _label_problems(fig)]
                    seen["ticks"] += len(fig["ticks"])
                    seen["axis titles"] += len(fig["axis_titles"])
                    seen["titles"] += fig["title"] is not None
    assert not problems, problems[:10]
    # every screen measured tick labels, titles and axis titles: the check cannot pass on empty figures
    assert seen["ticks"] > 300 and seen["titles"] >= 3 * 6 and seen["axis titles"] >= 3 * 8, seen


def test_every_saved_view_on_a_360_phone_passes_axe_and_fits_the_screen(browser, files, artifacts):
    """The saved views whose layout differs on a phone (a wide table, a layer/head menu, a named
    [MASK] menu, the grid of every head, a long title) opened on a 360x800 phone (touch, a phone's
    browser): axe-core finds no critical and no serious violation (tests/artifacts/axe_saved_phone.md;
    at 1200x900 the first test audits every kind), nothing is wider than the screen (a wide table
    scrolls in its own box), no figure's toolbar covers its title, no text of a figure is cut off."""
    files = {k: v for k, v in files[0].items() if k in PHONE_KINDS}
    source = axe_source()
    size, _, touch = PHONE_SMALL
    rows, on_phone = {}, {}
    with file_page(browser, size, **touch) as pg:
        for name, path in files.items():
            pg.goto(path.as_uri())
            pg.wait_for_function(DRAWN, timeout=30_000)
            rows[name] = audit(pg, source)
            on_phone[name] = phone_problems(pg)
    write_table(artifacts, "saved_phone", rows)
    assert not serious(rows), f"axe-core on saved views at 360x800: {serious(rows)}"
    assert not undocumented(rows), f"rules docs/ACCESSIBILITY.md does not list: {undocumented(rows)}"
    assert not {k: v for k, v in on_phone.items() if v}, f"saved views at 360x800: {on_phone}"
