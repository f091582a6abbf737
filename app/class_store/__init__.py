"""The class's store, under every feature that posts to it or reads it (the class board's screens,
the training pages' Post buttons, the Causes page's pairs, the LTI launch): `BoardStore` and its rules
(store.py) over SQLite or PostgreSQL, which one this server uses (service.py), the lead and the answers
(classroom.py), the posted pairs (class_pairs.py) and what a posted run says (summary.py)."""
