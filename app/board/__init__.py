"""The class board (opt-in, BERT_EXPLORER_BOARD=1): students post their fine-tuning runs under a
class code and see whose settings worked best.

store.py: the store's interface, its rules and limits; sqlite_store.py: the SQLite store; postgres.py: the
PostgreSQL store; service.py: which one this server uses, and whether the board is on;
summary.py: what a posted run says; charts.py: the board's plotly charts;
the Fine-tuning page's post and show-live buttons are app/training/board_buttons.py. pages/board.py draws
the board.

The teacher leads, the class answers: classroom.py (the lead and the questions in the same
store), questions.py (the kinds, worked out on the model), class_panel.py (the sidebar's class
section, the class panel on every page, following) and question_view.py (asking, answering, the
live chart and the reveal). The class's minimal pairs: class_pairs.py (posted from the Causes
page, kept in the same store) and pairs_panel.py (scored on the Class board page by the loaded model)."""
