"""Pre-training (masked LM + next sentence) and fine-tuning, as generators of events: their
examples, masking, batching, optimiser, device, evaluation and attention snapshots."""
