"""Training jobs, off the page: the two backends (local.py, ray_backend.py; backend.py picks),
what a job runs, the caps, and the run store where every run is kept under its run code."""
