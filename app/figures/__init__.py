"""Pure plotly builders (numpy in, Figure out, no streamlit), one module per subject;
app/ui/show_figure.py puts them on a page."""
