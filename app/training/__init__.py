"""The training pages' side of the app: starting and following jobs, data, results, downloads.

No re-exports: import each name from the module that defines it.

- start: the Start buttons' callbacks, the caps checked, then a fine-tuning or pre-training job queued
- data: built-in data sets and corpora, the train/validation split, the Data tables
- downloads: a model's card and zips
- page: what the training pages share on screen beyond the run's controls (reopening, results, Keep it)
- finetune_view / pretrain_view: each page's own sections (data, validation, results, try it)

Their figures are app/figures/training.py; the jobs themselves app/jobs/; a run's life in the session
(its keys, following it, submitting it, its controls, its end, progress lines, uploads, names, sizes,
its attention snapshots) app/run_session/, which the Decoder page and the dictionary share.
"""
