"""An encoder-decoder made of our BERT encoder and BERT-shaped decoder layers (masked
self-attention, cross-attention to the encoder's last layer, feed-forward), trained on toy
sequence-to-sequence tasks: the model (decoder.py, model.py), its bundle (bundle.py), transformers'
EncoderDecoderModel folders (hf.py), the tasks (tasks.py) and the trainer (train.py)."""
