"""Example operators written with Setpoint (each runs as ``setpoint run examples.<name>...``)."""
