"""The training pages' side of the app: starting and following jobs, data, results, downloads.

No re-exports: import each name from the module that defines it.

- start: the Start buttons' callbacks, the caps checked, then a fine-tuning or pre-training job queued
- follow: which job this session follows, who counts as one student, the live panel's poll
- uploads: uploaded files kept in the session, parsed once, freed when a job starts
- data: built-in data sets and corpora, the train/validation split, the Data tables
- run_size: the fine-tuning page's run sizes and the FinetuneArgs they make
- progress: the live panels' progress lines and probe table
- finished: finished runs collected into the session, reopened from their codes
- reports: a fine-tuned model's report tables and [CLS] attention before and after
- downloads: a model's card and zips
- names: plain file names and unique model names
- page: what the two pages share on screen (TrainPage, Start/Stop, the live panel, results)
- finetune_view / pretrain_view: each page's own sections (data, validation, results, try it)
- state: the two pages' session-state keys
- snapshots: attention over training, a recorder per run kept in the session (replayed on Compare)

Their figures are app/figures/training.py; the jobs themselves app/jobs/.
"""
