"""bertviz's head, model and neuron views as self-contained, offline HTML (views.py): the
JavaScript, the packed data and the Save-as-SVG button."""
