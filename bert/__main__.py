"""Command line: `python -m bert pretrain ...`, `python -m bert finetune ...`, `python -m bert fetch`,
`python -m bert get MODEL_ID` (a BERT from the Hugging Face Hub into the models folder, bert/checkpoint/hub_get.py),
`python -m bert tag MODEL SENTENCE...` and `python -m bert answer MODEL -q QUESTION -p PASSAGE` (a
fine-tuned tagger's or reader's folder, or a built-in name).

Training commands print one JSON line per event (bert/train/events.py); `--device auto|cpu|cuda|mps`
picks where they train (bert/train/device.py). `tag` prints each word as `word TAB tag TAB
probability`, a blank line after each sentence (the CoNLL form a tagged upload has), or with
--json one JSON line per sentence; `answer` one JSON line: the span's text, its character offsets
in the passage, its score (start + end logit) and probability (bert/answering.py's rule). What
was read is printed with control and format characters escaped (`\\x1b`, `\\u202e`): a shared file
cannot drive the terminal of whoever runs the command on it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
import unicodedata

# Characters a terminal acts on or that reorder or hide text: printed as their escape.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def shown(text: str) -> str:
    """``text`` with every control, format or unassigned character written as its Python escape."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _HIDDEN else c for c in text)


def _add_dataclass_args(parser: argparse.ArgumentParser, cls) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        name = "--" + f.name.replace("_", "-")
        t = hints[f.name]
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        )
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if t is bool:
            parser.add_argument(name, action=argparse.BooleanOptionalAction, default=default)
        elif typing.get_origin(t) is list:
            parser.add_argument(name, nargs="+", default=default)
        else:
            base = [a for a in typing.get_args(t) if a is not type(None)] or [t]
            choices = f.metadata.get("choices")  # e.g. --device auto|cpu|cuda|mps
            parser.add_argument(name, type=base[0], default=default, required=required, choices=choices)


def _emit(event) -> None:
    """One JSON line per event (bert/train/events.py: `to_dict`)."""
    print(json.dumps(event.to_dict(), default=float), flush=True)


def _add_get(sub) -> None:
    g = sub.add_parser(
        "get",
        help="download a BERT from the Hugging Face Hub into the models folder (BERT_EXPLORER_MODELS_DIR), "
        "where the sidebar lists it",
    )
    g.add_argument("model_id", help="a Hugging Face Hub id, e.g. google-bert/bert-base-uncased")
    g.add_argument("--name", default=None, help="the folder's name in the models folder (default: the id's last part)")


def _add_heads(sub) -> None:
    from .answering import MAX_ANSWER_TOKENS, STRIDE, WINDOW

    model = "a fine-tuned model's folder (ours or transformers'), or a built-in name"
    t = sub.add_parser("tag", help="tag every word of sentences with a fine-tuned tagger")
    t.add_argument("model", help=model)
    t.add_argument("sentences", nargs="+", help="the sentences ('-': one a line from standard input)")
    t.add_argument("--json", action="store_true", help="one JSON line per sentence instead of word TAB tag TAB prob")
    a = sub.add_parser("answer", help="find the answer to a question in a passage with a fine-tuned reader")
    a.add_argument("model", help=model)
    a.add_argument("-q", "--question", required=True)
    a.add_argument("-p", "--passage", required=True, help="the passage ('-': read from standard input)")
    a.add_argument("--max-length", type=int, default=WINDOW, help="tokens in one window")
    a.add_argument("--stride", type=int, default=STRIDE, help="passage tokens two windows share")
    a.add_argument("--max-answer-tokens", type=int, default=MAX_ANSWER_TOKENS)
    a.add_argument("--allow-none", action="store_true", help='answer "" when no span beats [CLS] (SQuAD 2.0)')


def _tag(args: dict) -> None:
    from .checkpoint.load import load

    sentences = args["sentences"]
    if sentences == ["-"]:
        sentences = [line.strip() for line in sys.stdin if line.strip()]
    bundle = load(args["model"], allow_hub=False)
    for text, words in zip(sentences, bundle.tag(sentences)):
        if args["json"]:
            print(json.dumps({"sentence": text, "words": [[w.word, w.tag, round(w.prob, 6)] for w in words]}))
        else:
            print("".join(f"{shown(w.word)}\t{shown(w.tag)}\t{w.prob:.4f}\n" for w in words))


def _answer(args: dict) -> None:
    from .answering import MAX_PASSAGE_CHARS
    from .checkpoint.load import load

    # Standard input is read one character past the cap: a longer passage is refused without holding it.
    passage = sys.stdin.read(MAX_PASSAGE_CHARS + 1) if args["passage"] == "-" else args["passage"]
    bundle = load(args["model"], allow_hub=False)
    a = bundle.answer(
        args["question"], passage, max_length=args["max_length"], stride=args["stride"],
        max_answer_tokens=args["max_answer_tokens"], allow_none=args["allow_none"],
    )  # fmt: skip
    print(json.dumps({"answer": a.text, "start": a.start, "end": a.end, "score": a.score, "prob": a.prob}))


def main(argv: list[str] | None = None) -> int:
    from .errors import BertExplorerError

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m bert")
    sub = parser.add_subparsers(dest="command", required=True)
    if argv[:1] == ["get"]:  # its parser needs no torch, so a refusal comes before torch is imported
        _add_get(sub)
    else:
        from .train.finetune_args import FinetuneArgs
        from .train.precision import setting_precision
        from .train.pretrain_args import PretrainArgs

        p = sub.add_parser("pretrain", help="MLM + NSP pre-training (resumable; works under torchrun)")
        _add_dataclass_args(p, PretrainArgs)
        p.add_argument("--no-resume", action="store_true", help="start over even if a checkpoint exists")
        f = sub.add_parser("finetune", help="fine-tune a sequence classifier on a labelled file")
        _add_dataclass_args(f, FinetuneArgs)
        for trainer in (p, f):  # the setting BERT_EXPLORER_PRECISION, as the server's jobs take it
            trainer.set_defaults(precision=setting_precision())
        sub.add_parser("fetch", help="fetch the corpora and data sets into the cache")
        _add_get(sub)
        _add_heads(sub)
    args = vars(parser.parse_args(argv))
    command = args.pop("command")
    try:
        if command == "pretrain":
            from .train.pretrain import pretrain
            from .train.pretrain_args import PretrainArgs

            resume = not args.pop("no_resume")
            for m in pretrain(PretrainArgs(**args), resume=resume):
                _emit(m)
        elif command == "finetune":
            from .train.finetune_args import FinetuneArgs
            from .train.finetune_cli import finetune_cli

            for m in finetune_cli(FinetuneArgs(**args)):
                _emit(m)
        elif command == "fetch":
            from .data.corpus.cli import main as corpus_main

            return corpus_main([])
        elif command == "tag":
            _tag(args)
        elif command == "answer":
            _answer(args)
        elif command == "get":
            from .checkpoint.hub_get import get_model
            from .checkpoint.models_folder import models_dir

            folder = get_model(args["model_id"], models_dir(), name=args["name"])
            print(f"{args['model_id']} is in the models folder as {folder.name!r} ({folder}): pick it in the sidebar")
    except BertExplorerError as e:
        print(f"error: {shown(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
