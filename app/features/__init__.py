"""The Features page's views: a dictionary of features trained live beside its control, feature cards, steering."""
