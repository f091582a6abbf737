"""What one server enforces for a whole class: the client guard, rate limits, new students per
address, analyses at once, memory given back, the teacher key."""
