"""Command line: `python -m bert pretrain ...`, `python -m bert finetune ...`, `python -m bert fetch`.

Training commands print one JSON line per event (bert/events.py); `--device auto|cpu|cuda|mps`
picks where they train (bert/device.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing


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
    """One JSON line per event (bert/events.py: `to_dict`)."""
    print(json.dumps(event.to_dict(), default=float), flush=True)


def main(argv: list[str] | None = None) -> int:
    from .errors import BertExplorerError
    from .finetune import FinetuneArgs
    from .pretrain import PretrainArgs

    parser = argparse.ArgumentParser(prog="python -m bert")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pretrain", help="MLM + NSP pre-training (resumable; works under torchrun)")
    _add_dataclass_args(p, PretrainArgs)
    p.add_argument("--no-resume", action="store_true", help="start over even if a checkpoint exists")
    f = sub.add_parser("finetune", help="fine-tune a sequence classifier on a labelled file")
    _add_dataclass_args(f, FinetuneArgs)
    sub.add_parser("fetch", help="fetch the corpora and data sets into the cache")
    args = vars(parser.parse_args(argv))
    command = args.pop("command")
    try:
        if command == "pretrain":
            from .pretrain import pretrain

            resume = not args.pop("no_resume")
            for m in pretrain(PretrainArgs(**args), resume=resume):
                _emit(m)
        elif command == "finetune":
            from .finetune import finetune_cli

            for m in finetune_cli(FinetuneArgs(**args)):
                _emit(m)
        elif command == "fetch":
            from .corpus import main as corpus_main

            return corpus_main([])
    except BertExplorerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
