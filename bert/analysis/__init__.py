"""Everything a page shows that the model computes, as plain computations returning dataclasses
of numpy arrays (no Streamlit here; app.analysis_cache keeps the results).

- full:     the full analysis of one input (attentions, hidden states, embedding parts, q/k/v)
            in one forward pass, and the learned position table;
- mlm:      masked-word top-k with the sentence filled in, next-sentence probability, class
            probabilities;
- heads:    head patterns (Clark et al. 2019, "What does BERT look at?");
- explain:  attention rollout (Abnar & Zuidema 2020) next to gradient saliency (input x
            gradient) with their rank correlation, and the logit lens;
- ablation: switch heads off and see the prediction change; rank heads by their effect;
- patching: activation patching (causal tracing) of a masked word between a clean and a
            corrupted sentence, per layer and token or per head;
- scoring:  pseudo-log-likelihood of a sentence (token- or word-level) and minimal pairs scored
            with it; paradigms: the built-in minimal-pair paradigms and typed pairs read;
- probes:   linear probes per layer with a control task (accuracy and selectivity); probe_data:
            Brown words with a property from their tags, and their vectors at every layer;
- dictionary: a dictionary of features (a sparse autoencoder) on one layer, beside the same
            recipe on random weights; its quality, feature cards and steering;
- compare:  two models side by side;
- words:    a word's vector in context (the mean of its pieces) across layers and sentences,
            word order, the same word in several contexts;
- vectors:  PCA to a plane, cosine similarity, separation of labelled groups;
- common:   what they share: encoding one input, padding a batch, argument checks, running the
            encoder layers by hand.

Everything here is thread-safe and leaves the model untouched: no hooks, no `.train()`, no
gradients on parameters. Models are expected in eval mode (dropout off), as `bert.load`
returns them.

Import a computation from its module (`from bert.analysis.attention_heads import label_heads`).

Dimension letters: L layers, H heads, T tokens, C hidden size, V vocabulary, N sentences,
P predicted ([MASK]) positions, K classes, k top predictions.
"""
