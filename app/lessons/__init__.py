"""Seven short lessons that follow the seeds' pipeline, each a few steps with the real model's
figures, claims and questions worked out on that model (pages/lessons.py shows them).

    lesson.py             Step, Question, Lesson, Link, Asked; choices_with
    claims.py             the registry of claims: what a step says the model does, worked out on it
    tokens_embeddings.py  1. text to tokens; 2. embeddings (token + segment + learned position)
    attention.py          3. attention: heads and their habits, found on the model
    pretraining_games.py  4. the two pre-training games
    fine_tuning.py        5. fine-tuning: swapping the head
    heads_learned.py      6. what heads learned
    features.py           6's step on features: the built-in dictionary on one word, worked out on the model
    encoders_decoders.py  7. encoders, decoders and both: reading both ways, left only, a prefix; cross-attention
    view.py               the Streamlit side: one step, the questions, presenter view, progress
"""

from .attention import ATTENTION
from .encoders_decoders import BOTH
from .fine_tuning import FINETUNE
from .heads_learned import HEADS
from .lesson import Asked, Lesson, Link, Question, Step, choices_with
from .pretraining_games import GAMES
from .tokens_embeddings import EMBEDDINGS, TOKENS

LESSONS = (TOKENS, EMBEDDINGS, ATTENTION, GAMES, FINETUNE, HEADS, BOTH)

__all__ = ["LESSONS", "Asked", "Lesson", "Link", "Question", "Step", "choices_with"]
