"""Text in and files out: labelled files for fine-tuning, the built-in data sets and corpora,
decoding what a user uploaded."""
