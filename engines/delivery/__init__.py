"""The one way out: a take becomes delivered file(s) with their embedded metadata."""
