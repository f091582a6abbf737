"""The Causes page's views, one module each: activation patching, minimal pairs, probes per layer."""
