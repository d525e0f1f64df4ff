"""Tables (pandas) and figures (matplotlib) built from the pipeline's JSON reports."""
