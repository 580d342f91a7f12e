"""Reference implementations the scale benchmark compares the pipeline with."""
