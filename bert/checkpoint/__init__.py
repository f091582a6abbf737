"""Models on disk and from the Hub: loading and saving (load.py), the built-ins, the Hugging Face
Hub and its parameter names, export, parameter counts and size checks, the server's models folder."""
