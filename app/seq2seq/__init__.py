"""The Decoder page's parts (pages/decoder.py): its job in the session and its widgets (its figures
are app/figures/seq2seq.py, the finished run as others read it app/trained_decoder.py)."""
