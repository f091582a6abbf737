"""The app as an LTI 1.3 tool of a learning platform (Moodle, Canvas, Blackboard, Brightspace)."""
