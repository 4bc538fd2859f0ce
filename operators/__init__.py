"""Reference operators built with the Setpoint SDK, one package each."""
