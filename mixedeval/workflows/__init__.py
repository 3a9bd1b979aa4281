"""One-call analysis workflows composed from the mixed-model and resampling layers."""
