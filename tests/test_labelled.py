"""The labelled-data reader (bert/data/labelled.py): formats, encodings, and every bad input with its message."""

import csv
import io
import json
import random

import pytest

from bert import DataError
from bert.data.labelled import (
    LabelledData,
    read_labelled,
    read_labelled_file,
    stratified_sample,
    stratified_split,
    to_safe_csv,
)

CSV = (
    "text,label\n"
    "a wonderful film with great actors,pos\n"
    "dull and far too long,neg\n"
    "I loved every minute of it,pos\n"
    "the worst thing I have seen this year,neg\n"
)


def read(text_or_bytes, name="data.csv", **kw):
    data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
    return read_labelled(data, name, **kw)


def bad(data, match, name="data.csv", **kw):
    with pytest.raises(DataError, match=match) as e:
        read(data, name, **kw)
    assert "Traceback" not in str(e.value)
    return str(e.value)


# ---- formats -----------------------------------------------------------------------------


def test_basic_csv_detects_columns_and_classes():
    d = read(CSV)
    assert isinstance(d, LabelledData)
    assert (d.text_col, d.label_col) == ("text", "label")
    assert d.classes == ["neg", "pos"]
    assert d.labels == [1, 0, 1, 0]
    assert d.texts[0] == "a wonderful film with great actors"
    assert d.class_counts == {"neg": 2, "pos": 2}
    assert d.columns == ["text", "label"]
    assert list(d.preview.columns) == ["text", "label"] and len(d.preview) == 4
    assert d.dropped == {} and d.rows_read == 4


def test_columns_detected_whatever_their_order_and_names():
    rows = ["id,stars,review,user"] + [
        f"{i},{i % 3 + 1},this is review number {i} and it is long,u{i % 7}" for i in range(30)
    ]
    d = read("\n".join(rows))
    assert (d.text_col, d.label_col) == ("review", "stars")
    assert d.classes == ["1", "2", "3"]


def test_override_columns_and_missing_column_message():
    text = "title,body,sentiment,topic\n" + "".join(
        f"t{i},body text number {i} is here,{'pos' if i % 2 else 'neg'},{'a' if i % 3 else 'b'}\n" for i in range(10)
    )
    d = read(text, label_col="topic")
    assert d.label_col == "topic" and d.classes == ["a", "b"]
    msg = bad(text, r"'stars' is not in the file", label_col="stars")
    assert "title, body, sentiment, topic" in msg
    bad(text, r"text column 'review'", text_col="review")
    bad(text, "must be different columns", text_col="sentiment", label_col="sentiment")


def test_semicolon_csv():
    text = "texte;note\n" + "".join(f"film {i}, vraiment, {'bien' if i % 2 else 'nul'};{i % 2}\n" for i in range(12))
    d = read(text)
    assert d.format == "csv (semicolon)"
    assert d.texts[1] == "film 1, vraiment, bien" and d.classes == ["0", "1"]


def test_tsv_and_plain_text_label_tab_text():
    d = read("label\ttext\npos\tgood, really good\nneg\tbad\tvery bad\nneg\tawful\npos\tfine\n", "d.tsv")
    assert d.format == "tsv" and d.texts[1] == "bad\tvery bad"  # a tab inside the text is kept
    plain = 'pos\tgreat "fun" film\nneg\t"unbalanced quote\npos\tlovely\nneg\tboring\n'
    d = read(plain, "reviews.txt")
    assert (d.label_col, d.text_col) == ("label", "text")
    assert d.texts == ['great "fun" film', '"unbalanced quote', "lovely", "boring"]
    assert d.classes == ["neg", "pos"]


def test_json_lines_and_json_array():
    recs = [{"text": f"text number {i}", "label": i % 2, "meta": {"k": i}} for i in range(6)]
    d = read("\n".join(json.dumps(r) for r in recs) + "\n{not json}\n", "d.jsonl")
    assert d.format == "jsonl" and d.classes == ["0", "1"] and len(d) == 6
    assert d.dropped == {"malformed (not JSON)": 1}
    d = read(json.dumps(recs), "d.json")
    assert len(d) == 6 and d.text_col == "text"
    bad("[1, 2, 3]", "holds no objects", "d.json")
    bad("{broken\n{also broken\n", "none of its lines is a JSON object", "d.jsonl")


def test_quoted_newlines_and_windows_line_ends():
    text = 'text,label\r\n"first line\r\nsecond line, with comma",pos\r\n"say ""hi""",neg\r\nplain,pos\r\nx y,neg\r\n'
    d = read(text)
    assert d.texts[0] == "first line\nsecond line, with comma"
    assert d.texts[1] == 'say "hi"' and len(d) == 4
    d = read(text.replace("\r\n", "\r"))  # old Mac line ends
    assert len(d) == 4


def test_numeric_labels_sorted_numerically_and_unified():
    text = "text,label\n" + "".join(f"t{i},{v}\n" for i, v in enumerate(["10", "2", "2.0", "10", "1", "1.0"]))
    d = read(text)
    assert d.classes == ["1", "2", "10"]
    assert d.class_counts == {"1": 2, "2": 2, "10": 2}


def test_dropped_rows_are_counted():
    text = (
        "text,label\n"
        "good one,pos\n"
        ",neg\n"  # empty text
        "   ,pos\n"  # whitespace text
        "NaN,neg\n"  # NaN text
        "no label here,\n"  # missing label
        "nan label,nan\n"  # NaN label
        "good one,pos\n"  # duplicate
        "bad one,neg\n"
        "meh,neg\n"
        "fine,pos\n"
    )
    d = read(text)
    assert d.dropped == {"empty text": 3, "missing label": 2, "duplicate text": 1}
    assert len(d) == 4 and d.rows_read == 10
    assert any("dropped 3 empty text, 2 missing label, 1 duplicate text" in n for n in d.notes)


def test_very_long_text_is_fine():
    long = "word " * 100_000
    d = read(f'text,label\n"{long}",pos\nshort,neg\nother,pos\nmore,neg\n')
    assert len(d.texts[0]) == len(long)


def test_file_is_not_modified(tmp_path):
    p = tmp_path / "data.csv"
    raw = ("\ufeff" + CSV).encode("utf-8")
    p.write_bytes(raw)
    before = p.stat().st_mtime_ns
    d = read_labelled_file(p)
    assert len(d) == 4
    assert p.read_bytes() == raw and p.stat().st_mtime_ns == before


# ---- encodings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "encoding,bom", [("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")]
)
def test_unicode_encodings(encoding, bom):
    text = "text,label\ncafé crème — très bon ✓,pos\nnaïve and dull,neg\n日本語の映画,pos\nmeh,neg\n"
    d = read(bom + text.encode(encoding))
    assert d.texts[0] == "café crème — très bon ✓" and d.texts[2] == "日本語の映画"
    assert d.columns == ["text", "label"]  # no BOM glued to the first column name


def test_utf16_without_bom_and_latin1_fallback():
    text = "text,label\ncafé,pos\nnaïve,neg\nok,pos\nno,neg\n"
    d = read(text.encode("utf-16-le"))
    assert d.texts[:2] == ["café", "naïve"]
    d = read(text.encode("latin-1"))
    assert d.texts[:2] == ["café", "naïve"]
    assert any("windows-1252" in n for n in d.notes)
    d = read("text,label\n€5 “deal”,pos\nx,neg\ny,pos\nz,neg\n".encode("cp1252"))
    assert d.texts[0] == "€5 “deal”"


# ---- bad input: each a DataError with a clear message ----------------------------------------


def test_empty_file():
    bad(b"", "is empty")
    bad(b"  \n\n \r\n", "is empty")
    bad(b"\xef\xbb\xbf", "is empty")


def test_header_only():
    bad("text,label\n", r"has a header \(text, label\) but no data rows")
    bad("review;sentiment\r\n", "no data rows")


def test_binary_files():
    bad(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "PNG image")
    bad(b"PK\x03\x04" + b"\x00" * 100, "zip archive.*save it as CSV")
    rnd = random.Random(0)
    bad(bytes(rnd.randrange(256) for _ in range(5000)), "binary file")
    bad(bytes(rnd.randrange(1, 32) for _ in range(5000)), "binary file")


def test_undecodable_utf16():
    bad(b"\xff\xfe" + "text,label\nab,c\n".encode("utf-16-le") + b"\x00", "not valid UTF-16")
    bad(b"\xef\xbb\xbf" + b"text,label\n\xff\xfe\xfa,pos\n", "not valid UTF-8")


def test_single_column_file():
    bad("just one column of text\nanother line\nand another\n", "Could not find two columns")


def test_one_class_only():
    bad("text,label\na,pos\nb,pos\nc,pos\n", "label 'pos'.*at least two classes")


def test_class_with_one_example_is_named():
    msg = bad("text,label\na,pos\nb,pos\nc,neg\nd,neg\ne,meh\n", "fewer than 2 examples")
    assert "'meh' (1)" in msg


def test_column_bomb_refused():
    header = ",".join(f"c{i}" for i in range(1000))
    row = ",".join("x" for _ in range(1000))
    bad(header + "\n" + row + "\n", "1,000 columns; at most 200")
    bad("\n".join(json.dumps({f"k{i}": i for i in range(300)}) for _ in range(3)), "more than 200", "d.jsonl")


def test_byte_limit():
    bad(CSV, "the limit is 100 bytes", max_bytes=100)


def test_byte_limit_checked_before_reading_a_file(tmp_path):
    p = tmp_path / "big.csv"
    p.write_bytes(b"text,label\n" + b"x,y\n" * 1000)
    with pytest.raises(DataError, match="the limit is 1 kB"):
        read_labelled_file(p, max_bytes=1024)


def test_too_many_classes():
    text = "text,label\n" + "".join(f"text {i},{i}\n" for i in range(300))
    bad(text, "300 different values", label_col="label")


def test_validation_file_must_use_training_classes():
    d = read("text,label\na,pos\nb,pos\n", classes=["neg", "pos"], min_per_class=1)
    assert d.classes == ["neg", "pos"] and d.labels == [1, 1]
    bad(
        "text,label\na,pos\nb,neg\nc,meh\n",
        "labels that the training data does not: 'meh'",
        classes=["neg", "pos"],
        min_per_class=1,
    )


# ---- size cap -------------------------------------------------------------------------------


@pytest.mark.slow
def test_200k_rows_capped_by_stratified_sample():
    rows = [f"review number {i} is {'good' if i % 4 else 'bad'},{'pos' if i % 4 else 'neg'}" for i in range(200_000)]
    d = read("text,label\n" + "\n".join(rows) + "\n")
    assert len(d) == 50_000 and d.rows_read == 200_000
    assert d.class_counts == {"neg": 12_500, "pos": 37_500}
    assert any("200,000 usable rows: a stratified sample of 50,000" in n for n in d.notes)
    assert all(t.endswith("good") == (d.classes[y] == "pos") for t, y in zip(d.texts, d.labels))
    d = read("text,label\n" + "\n".join(rows[:1000]) + "\n", max_rows=100)
    assert len(d) == 100 and d.class_counts == {"neg": 25, "pos": 75}


def test_stratified_sample_keeps_rare_classes():
    labels = [0] * 990 + [1] * 8 + [2] * 2
    keep = stratified_sample(labels, 100, seed=1)
    got = [labels[i] for i in keep]
    assert len(keep) == 100 and got.count(2) == 2 and got.count(1) >= 2


# ---- split ------------------------------------------------------------------------------------


def _data(counts):
    texts, labels = [], []
    for y, n in enumerate(counts):
        for i in range(n):
            texts.append(f"class {y} text {i}")
            labels.append(y)
    return LabelledData(texts=texts, labels=labels, classes=[f"c{k}" for k in range(len(counts))])


def test_stratified_split():
    d = _data([600, 300, 100])
    tr, va = stratified_split(d, 0.2, seed=0)
    assert len(va) == 200 and len(tr) == 800
    assert va.class_counts == {"c0": 120, "c1": 60, "c2": 20}
    assert set(tr.texts).isdisjoint(va.texts) and set(tr.texts) | set(va.texts) == set(d.texts)
    assert all(t.startswith(f"class {y} ") for t, y in zip(tr.texts, tr.labels))
    tr2, va2 = stratified_split(d, 0.2, seed=0)
    assert va2.texts == va.texts
    assert stratified_split(d, 0.2, seed=1)[1].texts != va.texts
    assert any("validation split" in n for n in va.notes)
    # tiny classes still get one example on each side
    tr, va = stratified_split(_data([50, 2, 3]), 0.1)
    assert all(n >= 1 for n in va.class_counts.values()) and all(n >= 1 for n in tr.class_counts.values())


def test_split_refuses_a_class_with_one_example():
    with pytest.raises(DataError, match="'c1' has only one example"):
        stratified_split(_data([10, 1]))
    with pytest.raises(DataError, match="between 0 and 1"):
        stratified_split(_data([10, 10]), 1.5)


# ---- formula escaping -------------------------------------------------------------------------


def test_to_safe_csv_escapes_formulas():
    import pandas as pd

    df = pd.DataFrame(
        {
            "text": ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\ry", "fine", "a=b"],
            "prob": [0.5, -1.0, 2, 3, 4, 5, 6, 7],
        }
    )
    out = to_safe_csv(df)
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["text", "prob"]
    assert [r[0] for r in rows[1:]] == [
        "'=cmd|' /C calc'!A0",
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "'\ry",
        "fine",
        "a=b",
    ]
    assert rows[2][1] == "-1.0"  # numbers stay numbers
    assert to_safe_csv(pd.DataFrame({"=bad": ["ok"]})).splitlines()[0] == '"\'=bad"'
    assert df["text"][0] == "=cmd|' /C calc'!A0"  # the frame given is not modified


def test_to_safe_csv_escapes_full_width_formulas_as_ascii_ones():
    """A spreadsheet runs ＝1+1 as it runs =1+1: a cell starting with a form of = + - @ that NFKC
    folds to it (full-width, small) is prefixed too; a full-width letter or digit is not."""
    import pandas as pd

    cells = ["\uff1d1+1", "\uff0b1", "\uff0d1", "\uff20SUM(A1)", "\ufe661+1", "\uff11+1", "\uff41=b"]
    rows = list(csv.reader(io.StringIO(to_safe_csv(pd.DataFrame({"text": cells})))))
    assert [r[0] for r in rows[1:]] == ["'" + c for c in cells[:5]] + cells[5:]
    assert to_safe_csv(pd.DataFrame({"\uff1dbad": ["ok"]})).splitlines()[0] == '"\'\uff1dbad"'


# ---- built-in data sets --------------------------------------------------------------------------


def test_repair_tweet():
    from bert.data.datasets import repair_tweet

    t, changed = repair_tweet("I donÕ¢_\x8aÎ_\x86¢t want it Õ¢_\x8aÎ\x81Ð@cnn: newsÕ¢_\x8aÎë\x9d _ôÖ_")
    assert changed and t == "I don't want it \u201c@cnn: news\u201d"
    assert repair_tweet("plain ascii") == ("plain ascii", False)


def test_builtin_datasets_when_cached():
    from bert.data.datasets import DATASETS, _paths, load_dataset

    for name in DATASETS:
        if not _paths(name)[0].is_file():
            pytest.skip("built-in data sets not fetched (python -m bert.data.datasets)")
    rt = load_dataset("rotten_tomatoes")
    assert rt.classes == ["fresh", "rotten"] and 12_000 < len(rt) < 13_000
    tw = load_dataset("builtin:tweets")
    assert tw.classes == ["negative", "neutral", "positive"] and len(tw) > 35_000
    assert not any("Õ¢" in t for t in tw.texts)
