"""Lesson 6's step on features: the built-in dictionary of the model (bert/analysis/dictionary_builtin.py)
read on one sentence: the feature strongest at one word, and the same feature on other words read
alone, nouns and not. Which feature, and whether it tells the nouns apart, is worked out on the
model; a model that ships no dictionary says so. No streamlit here."""

from __future__ import annotations

from bert.analysis.dictionary_builtin import builtin_dictionary
from bert.analysis.dictionary_words import strongest_feature, word_activations

from ..figures.core import values_bar
from .claims import Said, claim
from .lesson import Link, Step

SENTENCE = "The cat sat on the mat."
WORD = "cat"
NOUNS = ("dog", "horse", "bird", "teacher")
OTHERS = ("ran", "the", "of", "quickly")
NO_DICTIONARY = "This model ships with no dictionary of features: train one on the Features page."


def feature_words(bundle) -> tuple[int, float, list[str], list[float]] | None:
    """(feature, its activation at WORD in SENTENCE, the words, its activation on each read
    alone), or None when the model ships no dictionary."""
    b = builtin_dictionary(bundle.name)
    if b is None:
        return None
    d = b.dictionary
    feature, at = strongest_feature(bundle, d, SENTENCE, WORD)
    words = [WORD, *NOUNS, *OTHERS]
    return feature, at, words, word_activations(bundle, d, feature, words)


def _figure(bundle):
    got = feature_words(bundle)
    if got is None:
        return None
    feature, _, words, acts = got
    return values_bar(words, acts, title=f"Feature {feature}, each word read alone", y_title="activation")


@claim("features.one-kind-of-word")
def one_kind_of_word(bundle) -> Said:
    got = feature_words(bundle)
    if got is None:
        return Said(False, NO_DICTIONARY, {})
    feature, at, words, acts = got
    by_word = dict(zip(words, acts, strict=True))
    nouns = [w for w in NOUNS if by_word[w] > 0]
    top_other = max(OTHERS, key=by_word.get)
    facts = {"feature": feature, "at": at, "nouns": nouns, "top_other": top_other, "activations": by_word}
    said = f"In “{SENTENCE}” the strongest feature at “{WORD}” is feature {feature} ({at:.2f})."
    if len(nouns) >= len(NOUNS) // 2 and min(by_word[w] for w in nouns) > by_word[top_other]:
        return Said(
            True,
            f"{said} Read alone, it fires on {', '.join(f'“{w}”' for w in nouns)} too, and more than on any of "
            f"{', '.join(f'“{w}”' for w in OTHERS)} (the most: “{top_other}”, {by_word[top_other]:.2f}).",
            facts,
        )
    return Said(
        False,
        f"{said} Read alone it does not single out nouns: it is on for {len(nouns)} of the {len(NOUNS)} other "
        f"nouns, and “{top_other}” gets {by_word[top_other]:.2f}.",
        facts,
    )


STEP = Step(
    "Features, not neurons",
    "A layer's vector mixes many things at once. A dictionary of features writes it as a few directions added "
    "up, each a feature. Here is the feature strongest at “cat” in “The cat sat on the mat.”, and how strongly "
    "it fires on other words read alone.",
    _figure,
    Link("pages/features.py", "Open the Features page"),
    "lesson-features",
    none_note=NO_DICTIONARY,
    claim="features.one-kind-of-word",
)
