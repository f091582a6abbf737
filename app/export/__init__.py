"""A view taken home: one self-contained HTML file (view_file), the stamp it carries (stamp), and
what the page noted for it while it ran (context); a notebook that reproduces it (notebook, with
analysis_notebooks, model_notebooks and training_notebooks for the pages they are named after), and
the project's wheel its first cell installs (wheel)."""
