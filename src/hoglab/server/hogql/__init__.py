"""hogql."""
