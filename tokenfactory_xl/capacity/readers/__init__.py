"""One reader per benchmark result format, each filling a :class:`..measurement.Measurement`."""
