"""Typed exceptions of bert/: the app turns each into a clear message, never a traceback."""


class BertExplorerError(ValueError):
    """Base class: a user-facing problem with input, a file or a setting."""


class CheckpointError(BertExplorerError):
    """A model folder or file cannot be loaded or written."""


class TokenizerError(BertExplorerError):
    """Text or a vocabulary the tokenizer cannot handle."""


class InputError(BertExplorerError):
    """Model input that makes no sense (empty, too long, wrong shape)."""


class DataError(BertExplorerError):
    """A training data file that cannot be read or used."""


class TrainingError(BertExplorerError):
    """A training run that cannot start or had to stop (e.g. the loss became NaN)."""


class Cancelled(BertExplorerError):
    """A computation given up before its end because nobody is left to read it (its tab closed)."""


class HubUnreachable(CheckpointError):
    """The Hugging Face Hub did not answer (no network, a firewall, a wrong HF_ENDPOINT):
    nothing was downloaded."""


class TokenCountMismatch(InputError):
    """Two sentences that must line up token for token (a patching pair) have different lengths:
    `counts` is (first's tokens, second's tokens)."""

    def __init__(self, message: str, counts: tuple[int, int]):
        super().__init__(message)
        self.counts = counts
