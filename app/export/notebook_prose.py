"""What each notebook says before its code: one Markdown paragraph a notebook, read by the
notebook builders of this package (app/export/*_notebooks.py and notebook.py). Plain text only:
the Home page imports these before torch, so a paragraph that names the analysis' thresholds
(Head patterns') stands by its builder."""

ATTENTION_MD = (
    "In every layer each token builds a new vector by mixing the vectors of all tokens, itself included. "
    "How much of each it takes is its **attention**: a row of weights that are positive and add up to 1. "
    "A layer has several **heads**, each with its own weights. Below: one head's map (rows look, columns "
    "are looked at), then every head at once. Change `layer` and `head` (counted from 1) and run again."
)


MASKED_LM_MD = (
    "BERT was pre-trained to fill in hidden words: put `[MASK]` where a word goes and it ranks every word "
    "of its vocabulary for that place. Below: the top words for each `[MASK]` and their probabilities."
)


FINETUNE_MD = (
    "Fine-tuning swaps BERT's pre-training heads for one small classifier and trains the whole model on "
    "labelled texts. The run's curves (loss on the training batches, accuracy on the held-out texts) and "
    "its report, as the app kept them; accuracy and macro F1 are worked out again from the confusion matrix."
)


TOKENIZATION_MD = (
    "BERT never sees letters or whole words: it sees **tokens** from a fixed vocabulary. A word the vocabulary "
    "knows stays whole; a rarer word is cut into pieces, and every piece after the first starts with `##`. Each "
    "token becomes an **id**, the row of the embedding table the model looks up. Below: the page's table, one "
    "row per token."
)


EMBEDDINGS_MD = (
    "Before any attention, each token gets a starting vector: BERT **adds three learned vectors**, one for the "
    "token itself, one for its segment (sentence A or B) and one for its **position**, then normalises the sum "
    "(LayerNorm). Below: one part for every token (rows) and dimension (columns), then each part's length per "
    "token. Change `part` to `'token'`, `'segment'`, `'position'`, `'sum'` or `'normed'` and run again."
)


EXPLANATIONS_MD = (
    "Which words did the model use for its answer? **Attention rollout** follows the attention weights through "
    "every layer (with the residual path that skips each one); **saliency** asks the gradient how much the answer "
    "would change if a word's vector changed a little. The **logit lens** reads the model's guess after every "
    "layer, to see at which depth the answer appears."
)


PATCHING_MD = (
    "Run the model on a **clean** sentence and on a **corrupted** one that changes a single word. Then rerun "
    "the corrupted sentence again and again, each time putting in *one* activation copied from the clean run. "
    "Where the copy brings the clean answer back, that activation *carries* the information. Each cell: the "
    "share of the gap logit(answer) − logit(foil) at the [MASK] that a patch there closes (1 all of it, 0 "
    "nothing). `site` is `'residual'`, `'attention'`, `'ffn'` or `'heads'`."
)


ABLATION_MD = (
    "Switch heads off and see what the model loses. A switched-off head's output is replaced by zeros, so that "
    "layer works with its other heads (and the residual path that skips it). Most single heads can go without "
    "much harm; a few carry a prediction on their own. Below: the predictions with every head on and with the "
    "heads in `off` switched off. Edit `off` ((layer, head) pairs, counted from 0) and run again."
)


IMPORTANCE_MD = (
    "**Most important heads.** Each head switched off *alone*, the others on: how much the log-probability of "
    "the top word at the first `[MASK]` (a classifier: the probability of its class) drops. Positive: the head "
    "helps this prediction; negative: the model does better without it. × marks the heads in `off`."
)


COMPARE_MD = (
    "Put two models on the same sentence, for example a pre-trained model and your fine-tuned copy of it: which "
    "heads changed, and how do their answers differ? The difference map is red where model A looks more than "
    "model B, blue where it looks less; the map of heads gives, for every head, the share of attention that goes "
    "somewhere else in B (0 = identical, 1 = nothing in common). Change `layer` and `head` (counted from 1) and "
    "run again."
)


PAIRS_MD = (
    "A **minimal pair** is a sentence and a twin that breaks one rule of English. The model scores each "
    "sentence by masking every token in turn and adding up the log-probability it gives the real token (the "
    "*pseudo-log-likelihood*, PLL). It is right on a pair when the good sentence scores higher: no training, "
    "no labels, only what pre-training taught it. With `word_level = True` a word split into pieces has its "
    "later pieces masked too, so no piece is guessed from its own word."
)


PROBES_MD = (
    "Is a word's part of speech *written* in its vector at layer 3? Train a small linear classifier (a "
    "**probe**) on the frozen vectors of one layer and test it on new sentences. A **control task** gives "
    "every word type a random tag of its own: a probe that does well there only memorises words. "
    "**Selectivity** (accuracy minus control) is what the layer knows, not what the probe can learn. The "
    "words come from the Brown Corpus, which `make data` fetches into the project's cache "
    "(`BERT_EXPLORER_CACHE`, default `.cache/`)."
)


FEATURES_MD = (
    "A layer's vector mixes many things at once. A **dictionary of features** (a sparse autoencoder) writes "
    "each token's vector as a few learned directions added up: each direction is a *feature*. Below: the "
    "model's built-in dictionary, one feature's card (where it fires most on held-out text, how often, what "
    "its direction does to the masked-word head), then each word piece of `sentence` with its strongest "
    "features. Change `feature` or `sentence` and run again."
)


WORD_SENSES_MD = (
    "The same word means different things in different sentences. Its starting vector (layer 0) is the same "
    "wherever it appears, apart from its position; each layer mixes in more of the context. Below: the word's "
    "vector in every sentence (the mean of its pieces), flattened to 2-D by PCA at each layer separately, one "
    "point a sentence coloured by its sense. **Separation** is 1 when every sentence is much closer to those of "
    "its own sense than to the others, 0 when the senses overlap (mean silhouette of cosine distances). Change "
    "`layer` (0 = the embeddings) and run again to watch the senses pull apart."
)


TAGGER_MD = (
    "A **tagger** puts one small classifier on top of BERT that reads every word's vector (at its first "
    "piece) and picks its tag; the whole model was trained on tagged sentences. The run's curves (loss on "
    "the training batches, scores on the held-out sentences) and its report as the app kept them; word "
    "accuracy and each tag's precision and recall are worked out again from the confusion matrix."
)


READER_MD = (
    "A **reader** puts two small heads on top of BERT: for every token of the passage, how likely the answer "
    "starts there and how likely it ends there; the answer is the best span. The run's curves (loss on the "
    "training batches, exact match and F1 on the held-out questions) and its answered questions as the app "
    "kept them."
)


PRETRAIN_MD = (
    "Pre-training teaches a model language from plain text with two games: guess the hidden words (**masked "
    "LM**) and tell whether sentence B really followed sentence A (**next sentence**). A model started from "
    "random weights first guesses the most frequent token everywhere (the *plateau*), then begins to use the "
    "words around each gap. The run's curves (training averages thin, held-out evaluations with markers), its "
    "final scores and the probe sentence's guesses at every evaluation, as the app recorded them."
)


NEXT_WORD_MD = (
    "This run pre-trained the model **left to right on the next word**: each token sees only the tokens before "
    "it and guesses the one after. It first guesses the most frequent token everywhere (the *plateau*), then "
    "begins to read its left. The run's curves (training averages thin, held-out evaluations with markers), its "
    "final scores and the probe's next words at every evaluation, as the app recorded them."
)


MODEL_MD = (
    "**Try it** needs the run's model. It lives in the app's session: on the page, under *Keep it*, "
    "*Download (BERT Explorer format, .zip)*, unzip it, set `folder` below to the unzipped folder and run the "
    "cells below again. Until then they only say so."
)


DECODER_MD = (
    "BERT only *reads*. To *write* a sequence, decoder layers sit on top: each looks back at what it has written "
    "so far (masked self-attention), then at the encoder's vectors of the source (**cross-attention**), then "
    "thinks (feed-forward). It writes greedily: at every step the likeliest next token, until `[SEP]`. Below: the "
    "run's curves (training loss; held-out exact match and token accuracy), then its decoding of the source, one "
    "row a step: where that step looked in the source, and in what it had written (mean over heads). Change "
    "`step` and `layer` (counted from 1) and run again."
)


DECODER_MODEL_MD = (
    "The model was trained in a session of the app and the page offers no download of it: this notebook carries "
    "the decoding's numbers as the page computed them (attention rounded to {digits} decimals){reopen}."
)
