"""A training run's life in a session, shared by every feature that trains (the training pages, the
Decoder page, the dictionary): the session's keys (session.py), submitting and following a job
(follow.py), the page's Start/Stop and live lines (controls.py), its end and the results kept
(finished.py), attention over training (snapshots.py), a missing corpus's message (corpora.py), the
progress lines (progress.py), the base model's reports (reports.py), uploads read once (uploads.py),
names (names.py) and a run's size (run_size.py)."""
