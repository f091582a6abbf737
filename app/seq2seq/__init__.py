"""The Decoder page's parts (pages/decoder.py): its figures, its job in the session, its widgets."""
